#!/usr/bin/env python3
"""How strong is the house bot to beat? It, the search bot and the perfect-information
ceiling against the heuristic bot, on the same duplicate deals, heads-up and at 3 seats.

    .venv/bin/python bench/strength.py [--hands 300] [--hands3 150] [--bots belief search oracle]
        [--bots3 belief search] [--seed 1] [--jobs 2]

Every bot named in ``--bots`` plays the same deals (the seeds do not depend on the bot), each
deal once per seating of the hero with the heuristic bot everywhere else, so card luck
cancels and the bots are compared on equal cards. ``oracle`` is the search bot searching
the real hands (``bench/oracle.py``): the most that reading the opponents' cards can be worth
to a search of this kind, measured in the same run. ``oracle-drop`` and ``oracle-draw`` know
the real hands for one question at a turn's start only (go down; where to draw from), which
shows where that worth lies. Printed per bot and table size: chips per
hand and the Elo-style difference with their 95% intervals (``bench/bots.py``), and the bot's
time per decision (median and p95; wall time as the referee measured it, and the bot's own
CPU time), with the load average beside them: the machine is shared, and wall time counts
the waits for a CPU.

The budget (``--budget-ms``, default 200) reaches the worker processes through
``TONK_SEARCH_BUDGET_MS``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any


def _load(name: str, file: str) -> ModuleType:
    # bench/ is not a package, and bench/bots.py would shadow the bots package on sys.path.
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before exec: dataclasses and pickling look it up
    spec.loader.exec_module(module)
    return module


bench_bots = _load("bench_bots", "bots.py")
oracle = _load("bench_oracle", "oracle.py")

from bots.belief import BeliefBot  # noqa: E402
from bots.search import SearchBot  # noqa: E402
from sdk.dealing import derive_seed  # noqa: E402

CLOCK_ENV = "TONK_STRENGTH_CLOCK"


def _on_cpu_clock(bot: SearchBot) -> None:
    # On a shared machine the wall clock also counts the waits for a CPU: a bot budgeted on
    # it searches less the busier the machine is. On the thread's CPU clock every bot gets
    # its budget of one core's time, whatever the load (the wall time is still reported).
    if os.environ.get(CLOCK_ENV, "cpu") == "cpu":
        bot.clock = time.thread_time


class Belief(BeliefBot):
    def __init__(self) -> None:
        super().__init__()
        _on_cpu_clock(self)


class Search(SearchBot):
    def __init__(self) -> None:
        super().__init__()
        _on_cpu_clock(self)


class Oracle(oracle.OracleBot):  # type: ignore[misc,name-defined]  # loaded by file name
    def __init__(self) -> None:
        super().__init__()
        _on_cpu_clock(self)


class OracleDrop(oracle.DropOracleBot):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        _on_cpu_clock(self)


class OracleDraw(oracle.DrawOracleBot):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        _on_cpu_clock(self)


def specs() -> dict[str, str]:
    return {
        "belief": f"{__name__}:Belief",
        "search": f"{__name__}:Search",
        "oracle": f"{__name__}:Oracle",
        # The oracle's knowledge for one question at a turn's start only (bench/oracle.py).
        "oracle-drop": f"{__name__}:OracleDrop",
        "oracle-draw": f"{__name__}:OracleDraw",
    }


def run(hero: str, players: int, deals: int, seed: int, jobs: int, chunk: int = 25) -> Any:
    """Like ``bench_bots.run_duplicate``, but the deals depend only on ``seed`` and the table
    size, so every hero meets the same cards."""
    sizes = [min(chunk, deals - start) for start in range(0, deals, chunk)]
    args = [
        (specs()[hero], "heuristic", players, n, derive_seed(seed, f"strength/{players}/{i}"))
        for i, n in enumerate(sizes)
    ]
    total = bench_bots.DuplicateResult(hero, "heuristic", players)
    with ProcessPoolExecutor(jobs) as pool:
        for part in pool.map(bench_bots.play_chunk, *zip(*args, strict=True)):
            total.merge(part)
    total.hero = hero
    return total


def quantiles(values: list[int]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    med = ordered[len(ordered) // 2] / 1000
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] / 1000
    return f"median {med:.1f} ms, p95 {p95:.1f} ms"


def paired(a: Any, b: Any) -> str:
    """``a`` minus ``b`` on the same deals: the per-deal difference of chips per hand, whose
    interval is much narrower than either bot's own (the deals' luck cancels twice)."""
    diffs = [(x - y) / a.players for x, y in zip(a.deal_chips, b.deal_chips, strict=True)]
    m, lo, hi = bench_bots.mean_ci(diffs)
    return f"{a.hero} - {b.hero}, same deals: chips/hand {m:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=300, help="heads-up duplicate deals")
    parser.add_argument("--hands3", type=int, default=150, help="3-seat duplicate deals")
    parser.add_argument("--bots", nargs="+", default=["belief", "search", "oracle"], choices=sorted(specs()))
    parser.add_argument("--bots3", nargs="+", default=["belief", "search"], choices=sorted(specs()))
    parser.add_argument("--budget-ms", type=float, default=200.0)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="what the budget counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ["TONK_SEARCH_BUDGET_MS"] = str(args.budget_ms)  # inherited by the workers
    os.environ[CLOCK_ENV] = args.clock
    print(
        f"vs heuristic, duplicate, seed {args.seed}, budget {args.budget_ms:g} ms of {args.clock} time, "
        f"{args.jobs} jobs",
        flush=True,
    )
    for players, deals, bots in ((2, args.hands, args.bots), (3, args.hands3, args.bots3)):
        if deals <= 0:
            continue
        results = {}
        for hero in bots:
            started = time.perf_counter()
            result = run(hero, players, deals, args.seed, args.jobs)
            load = os.getloadavg()[0]
            print(f"{bench_bots.report(result)}  ({time.perf_counter() - started:.0f} s)")
            searched = [us for us in result.hero_decision_us if us >= 2000]  # a search takes > 2 ms
            print(
                f"  time per decision: wall {quantiles(result.hero_decision_us)} "
                f"(searched ones: {quantiles(searched)}); CPU {quantiles(result.hero_cpu_us)}; "
                f"load average {load:.1f}",
                flush=True,
            )
            results[hero] = result
        for hero in bots[1:]:
            print(f"  {paired(results[bots[0]], results[hero])}", flush=True)
    return 0


if __name__ == "__main__":
    from arena.processes import ensure_watched  # here: its path is fixed above

    ensure_watched()  # nothing it starts outlives it, however it ends (arena/processes.py)
    raise SystemExit(main())

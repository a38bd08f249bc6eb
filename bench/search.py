"""Search bot vs the heuristic bot, in duplicate: heads-up and at 3-seat tables.

    .venv/bin/python bench/search.py [--hands 500] [--hands3 200] [--budget-ms 200] [--jobs 2]

Every deal is played once per seating of the search bot (twice heads-up, three times at a
3-seat table with two heuristic bots), with the same seed, so card luck cancels. Printed per
table size: deals and hands played, the search bot's mean chips per hand with a 95%
interval, the Elo-style difference (per-deal win/draw/loss score, as in ``bench/bots.py``)
with its interval, and the search bot's time per decision (mean, 99th percentile, max;
decisions with a single legal action included, and separately the searched ones), as wall
time measured by the referee and as the bot's own CPU time: on a loaded machine the wall time
also counts waiting for a CPU, which the bot cannot control.

The budget is passed to the worker processes through ``TONK_SEARCH_BUDGET_MS``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType


def _load_bench_bots() -> ModuleType:
    # bench/ is not a package and bench/bots.py would shadow the bots package if bench/ were
    # on sys.path: load it by file name (it puts the repository root on sys.path itself).
    name = "bench_bots"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "bots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before exec: dataclasses and pickling look it up
    spec.loader.exec_module(module)
    return module


bench_bots = _load_bench_bots()


def timing(decision_us: list[int]) -> str:
    def describe(values: list[int]) -> str:
        if not values:
            return "none"
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        return (
            f"{len(values)} decisions, mean {statistics.fmean(values) / 1000:.1f} ms, "
            f"p99 {p99 / 1000:.1f} ms, max {ordered[-1] / 1000:.1f} ms"
        )

    searched = [us for us in decision_us if us >= 2000]  # a search takes longer than 2 ms
    return f"all: {describe(decision_us)}; searched: {describe(searched)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=500, help="heads-up duplicate deals (2 hands each)")
    parser.add_argument("--hands3", type=int, default=200, help="3-seat duplicate deals (3 hands each)")
    parser.add_argument("--budget-ms", type=float, default=200.0, help="search budget per decision")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--villain", default="heuristic")
    args = parser.parse_args(argv)
    os.environ["TONK_SEARCH_BUDGET_MS"] = str(args.budget_ms)  # inherited by the workers
    print(f"search (budget {args.budget_ms:g} ms) vs {args.villain}, seed {args.seed}", flush=True)
    for players, deals in ((2, args.hands), (3, args.hands3)):
        if deals <= 0:
            continue
        started = time.perf_counter()
        result = bench_bots.run_duplicate(
            "search", args.villain, players, deals, args.seed, jobs=args.jobs, chunk=25
        )
        print(f"{bench_bots.report(result)}  ({time.perf_counter() - started:.0f} s)")
        print(f"  search wall time per decision: {timing(result.hero_decision_us)}")
        print(f"  search CPU time per decision:  {timing(result.hero_cpu_us)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

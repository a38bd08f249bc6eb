#!/usr/bin/env python3
"""The fair-play check's error rates (issue #38): lifetime false alarms of honest bots on skewed
chip shapes, and how soon a bot that remembers only some deals is flagged.

    .venv/bin/python bench/fairplay_stats.py                 # write docs/arena.md's table
    .venv/bin/python bench/fairplay_stats.py --check         # rerun and compare with the docs
    .venv/bin/python bench/fairplay_stats.py --candidates --runs 2000  # the constants' frontier

Two parts, both seeded:

* **Real deals.** ``--deals`` duplicate deals of ``--hands`` hands, heads-up, played in-process
  against ``greedy`` and against ``heuristic``: the honest ``greedy``, bench/fairplay.py's
  memory cheater built on it (``MemoryBot``, keeping what its seats saw: the closed referee), and
  the arena's reference (arena/play/reference.py: ``greedy`` in every seat on the same cards), so
  each deal has each bot's net score (less the reference's in the same seat) in its first and
  its later rotation, as arena/ratings/fairplay.py reads them from the store.
* **Simulated lives.** ``--runs`` bots per row, each looked at after every deal (the check's
  ``first_flag``, vectorised here and asserted equal to the arena's on a sample): honest bots
  over ``--looks`` deals, their per-rotation chips drawn from skewed shapes (the issue's:
  4-seat lognormal chips, differences of skew -2, lognormal chips of sigma 1.5 and 2; plus the
  real honest deals resampled), and bots that use their memory in a half or a quarter of their
  deals (each deal drawn from the real ones: the memory cheater's rotations with that chance,
  else the honest bot's on the same deal), over 200 deals. Printed: the share flagged with
  its 95% interval (Wilson), and the deals to the flag.

The table and the command that made it go between the marker comments in docs/arena.md.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__":  # one BLAS thread (a shared machine): read when numpy is imported
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))
sys.path.append(str(_HERE))  # bench/fairplay.py, as the module ``fairplay``

import docs_block  # noqa: E402
import fairplay as cheats  # noqa: E402

from arena.play.reference import reference_scores  # noqa: E402
from arena.ratings import fairplay as fp  # noqa: E402
from bots.greedy import GreedyBot  # noqa: E402
from sdk.bot import Bot  # noqa: E402
from sdk.dealing import derive_seed  # noqa: E402
from sdk.players import load_bot_class  # noqa: E402
from sdk.referee import LocalPlayer, RefereeConfig, play_match  # noqa: E402
from sdk.rules import STANDARD  # noqa: E402

BEGIN = "<!-- fairplay-table:begin (bench/fairplay_stats.py writes this part) -->"
END = "<!-- fairplay-table:end -->"
DOCS = _HERE.parent / "docs" / "arena.md"
Z95 = 1.959963984540054
MINUS = "\u2212"  # the docs' typography, escaped for the linter


# -- real deals ---------------------------------------------------------------------------------


def _scores(hero: type[Bot], villain: type[Bot], seed: int, hands: int) -> tuple[int, int]:
    """The hero's chips in the deal ``seed`` from seat 0 (its first rotation), then seat 1."""
    cheats.MemoryBot.memory.clear()
    out = []
    config = RefereeConfig(decision_deadline_ms=60_000)
    for seat in (0, 1):
        players = [LocalPlayer(hero if s == seat else villain) for s in range(2)]
        names = ["hero" if s == seat else "villain" for s in range(2)]
        result = play_match(players, seed, hands, match_id=f"fp38-{seed}-{seat}", names=names, config=config,
                            reveal=False)  # fmt: skip
        out.append(result.scores[seat])
    return out[0], out[1]


def play_deals(villain: str, deals: int, hands: int, seed: int) -> np.ndarray:
    """Per deal: (honest first, honest later, memory first, memory later), each net of the
    reference in the same seat, in chips per 100 hands."""
    villain_cls = load_bot_class(villain)
    memory = cheats.memory_bot(GreedyBot)
    rows = []
    for deal in range(deals):
        deal_seed = derive_seed(seed, f"fairplay-stats/{villain}/{hands}/{deal}")
        ref = reference_scores(deal_seed, hands, 2, STANDARD)
        honest = _scores(GreedyBot, villain_cls, deal_seed, hands)
        cheat = _scores(memory, villain_cls, deal_seed, hands)
        rows.append([honest[0] - ref[0], honest[1] - ref[1], cheat[0] - ref[0], cheat[1] - ref[1]])
    return 100 * np.array(rows, dtype=float) / hands


def real_deals(villain: str, deals: int, hands: int, seed: int, jobs: int, cache: Path | None) -> np.ndarray:
    """``play_deals`` against ``villain`` in ``jobs`` processes (chunks of 25 deals, each its
    own seed stream: the result is the same for any ``jobs``), kept in ``cache`` (a folder) if
    given: a file per opponent, deal count, hands and seed."""
    path = None if cache is None else cache / f"fairplay-stats-{villain}-{deals}-{hands}-{seed}.npy"
    if path is not None and path.exists():
        stored: np.ndarray = np.load(path)
        return stored
    chunks = [(villain, min(25, deals - s), hands, derive_seed(seed, f"{villain}/{s}"))
              for s in range(0, deals, 25)]  # fmt: skip
    if jobs <= 1:
        parts = [play_deals(*c) for c in chunks]
    else:
        with ProcessPoolExecutor(jobs) as pool:
            parts = list(pool.map(play_deals, *zip(*chunks, strict=True)))
    out = np.concatenate(parts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, out)
    return out


# -- the check, vectorised ----------------------------------------------------------------------


def scores(values: np.ndarray) -> np.ndarray:
    """arena/ratings/fairplay.py's per-deal scores (each in [-1, 1]) for ``values`` of shape
    (runs, deals, rotations), first rotation first: (runs, deals)."""
    m = values.shape[-1] - 1
    permuted = (values.sum(-1, keepdims=True) - values) / m - values
    spread = np.abs(permuted).mean(-1)
    spread = np.where(spread > 1e-9 * np.abs(values).max(-1), spread, 0.0)  # as fp.spread: noise is 0
    some = spread > 0
    before = np.cumsum(spread, 1) - spread
    count = np.cumsum(some, 1) - some
    scale = np.where(count > 0, fp.SCALE * before / np.maximum(count, 1), spread)
    with np.errstate(invalid="ignore", divide="ignore"):
        clipped = np.clip(permuted / np.where(scale > 0, scale, 1.0)[..., None], -1.0, 1.0)
    score = (clipped[..., 0] - clipped.mean(-1)) * (m + 1) / (2 * m)
    out: np.ndarray = np.where((scale > 0) & (spread > 0), score, 0.0)
    return out


def wealth(score: np.ndarray) -> np.ndarray:
    """The check's log wealth after each deal, betting on ``score`` (runs, deals)."""
    logs = np.log1p(score[..., None] * np.array(fp.BETS)).cumsum(1)
    out: np.ndarray = np.logaddexp.reduce(logs, axis=-1) - math.log(len(fp.BETS))
    return out


def log_wealth(values: np.ndarray) -> np.ndarray:
    """arena/ratings/fairplay.py's ``log_wealth`` for ``values`` as ``scores``: (runs, deals)."""
    return wealth(scores(values))


def flagged_at(logs: np.ndarray) -> np.ndarray:
    """Per run, the deals at the first look whose log wealth (``logs``) flagged it (0: never)."""
    flagged = logs >= math.log(1 / fp.ALPHA)
    flagged[:, : fp.MIN_DEALS - 1] = False
    return np.where(flagged.any(1), flagged.argmax(1) + 1, 0)


def first_flags(values: np.ndarray) -> np.ndarray:
    """Per run, the deals at the first look that flagged it (0: never), as ``fp.first_flag``."""
    return flagged_at(log_wealth(values))


def t_flags(differences: np.ndarray, rho: float = 5.0) -> np.ndarray:
    """The same for the check before issue #38: Robbins' normal-mixture martingale of the
    paired t statistic brought to the normal scale (Wallace), ``rho`` 5, p < ALPHA."""
    n = np.arange(1, differences.shape[1] + 1, dtype=float)
    total, square = differences.cumsum(1), (differences * differences).cumsum(1)
    mean = total / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(square - n * mean * mean, 0.0) / (n - 1))
        t = mean / (sd / np.sqrt(n))
        df = n - 1
        z2 = ((8 * df + 1) / (8 * df + 3)) ** 2 * df * np.log1p(t * t / df)
        log_m = 0.5 * np.log(rho / (n + rho)) + n * z2 / (2 * (n + rho))
    flagged = (n >= fp.MIN_DEALS) & (t > 0) & (log_m > math.log(1 / fp.ALPHA))
    return np.where(flagged.any(1), flagged.argmax(1) + 1, 0)


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a share k / n."""
    p = k / n
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def share(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k / n:.2%} [{low:.2%}, {high:.2%}]"


# -- simulated lives ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    name: str
    draw: Callable[[np.random.Generator, tuple[int, int]], np.ndarray]  # (runs, deals, rotations)


Draw = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


def chips(kind: str, seats: int, sigma: float = 1.0) -> Draw:
    def draw(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
        if kind == "lognormal":
            out: np.ndarray = rng.lognormal(0.0, sigma, size=(*size, seats))
        else:  # gamma of shape 1/3: chips of skew 2 sqrt(3); a 4-seat difference's skew is -2
            out = rng.gamma(1 / 3, size=(*size, seats))
        return out

    return draw


def per_deal(mask: np.ndarray, lives: np.ndarray) -> np.ndarray:
    """``mask`` (runs, deals) shaped to pick whole deals of ``lives`` (runs, deals, rotations, ...)."""
    return mask.reshape(mask.shape + (1,) * (lives.ndim - mask.ndim))


def turned(lives: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``lives`` with each deal's rotations (axis 2) reversed with chance 1/2: heads-up, in
    random order."""
    turn = rng.random(size=lives.shape[:2]) < 0.5
    out: np.ndarray = np.where(per_deal(turn, lives), lives[:, :, ::-1], lives)
    return out


def resampled(rows: np.ndarray, swap: bool = False) -> Draw:
    """Deals drawn from ``rows`` (deals, rotations, ...), their rotations ``turned`` if ``swap``."""

    def draw(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
        out: np.ndarray = rows[rng.integers(len(rows), size=size)]
        return turned(out, rng) if swap else out

    return draw


def mixed(honest: np.ndarray, memory: np.ndarray, used: float, swap: bool = False) -> Draw:
    """A bot that uses its memory in a share ``used`` of its deals: a real deal drawn at
    random, the memory cheater's rotations with that chance, else the honest bot's (``turned``
    if ``swap``)."""

    def draw(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
        pick = rng.integers(len(honest), size=size)
        cheat = rng.random(size=size) < used
        fair = turned(honest[pick], rng) if swap else honest[pick]
        out: np.ndarray = np.where(per_deal(cheat, fair), memory[pick], fair)
        return out

    return draw


def lives(
    shape: Shape, runs: int, deals: int, seed: int, cache: Path | None = None, block: int = 500
) -> tuple[np.ndarray, np.ndarray]:
    """First flags of the check and of the old one over ``runs`` simulated lives of ``deals``,
    kept in ``cache`` (a folder) if given, under a name with every input and the check's
    constants."""
    name = f"{shape.name}-{runs}-{deals}-{seed}-{fp.SCALE}-{fp.BETS}-{fp.ALPHA}-{fp.MIN_DEALS}"
    path = None if cache is None else cache / f"fairplay-lives-{derive_seed(0, name)}.npy"
    if path is not None and path.exists():
        stored: np.ndarray = np.load(path)
        return stored[0], stored[1]
    rng = np.random.default_rng(derive_seed(seed, shape.name))
    new, old = [], []
    for start in range(0, runs, block):
        values = shape.draw(rng, (min(block, runs - start), deals))
        new.append(first_flags(values))
        old.append(t_flags(values[..., 1:].mean(-1) - values[..., 0]))
    out = np.concatenate(new), np.concatenate(old)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, np.stack(out))
    return out


def skew(values: np.ndarray) -> float:
    d = values[..., 1:].mean(-1) - values[..., 0]
    d = d.ravel() - d.mean()
    return float((d**3).mean() / (d**2).mean() ** 1.5)


def agrees(values: np.ndarray) -> None:
    """The vectorised check is the arena's: the same first flag on each of these lives."""
    mine = first_flags(values)
    for run, at in zip(values, mine, strict=True):
        deals = [fp.PairedDeal(float(row[0]), tuple(float(x) for x in row[1:])) for row in run]
        assert (fp.first_flag(deals) or 0) == at, (fp.first_flag(deals), at)


def within(flags: np.ndarray, deals: int) -> str:
    """The share of lives flagged within ``deals`` deals, with its interval."""
    return share(int(((flags > 0) & (flags <= deals)).sum()), len(flags))


def alone(kind: str) -> Draw:
    """A difference drawn by itself, mean 0 and skewed to losses: the issue's shapes (no rotations)."""

    def draw(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
        if kind == "exponential":
            return 1.0 - rng.exponential(size=size)
        sigma = float(kind)
        out: np.ndarray = math.exp(sigma * sigma / 2) - rng.lognormal(0.0, sigma, size=size)
        return out

    return draw


def table(args: argparse.Namespace, command: str) -> str:
    real = {villain: real_deals(villain, deals, args.hands, args.seed, args.jobs, args.cache)
            for villain, deals in (("greedy", args.deals), ("heuristic", args.deals_heuristic))}  # fmt: skip
    honest = [
        Shape("4-seat lognormal chips (sigma 1)", chips("lognormal", 4)),
        Shape("4-seat chips of skew 3.5 (gamma 1/3)", chips("gamma", 4)),
        Shape("3-seat lognormal chips (sigma 1.5)", chips("lognormal", 3, 1.5)),
        Shape("4-seat lognormal chips (sigma 2)", chips("lognormal", 4, 2.0)),
        Shape(f"heads-up, honest greedy vs heuristic (real, {args.hands} hands, resampled)",
              resampled(real["heuristic"][:, :2])),
    ]  # fmt: skip
    rng = np.random.default_rng(args.seed)
    lines = [
        f"Made by `{command}`: {args.runs:,} simulated lives per row, seeded; 95% Wilson intervals.",
        "",
        f"Honest bots, looked at after every deal up to {args.looks:,} (lifetime false alarms; "
        "target ≤ 0.2%):",
        "",
        f"| honest bot's chips per rotation | skew of later {MINUS} first | flagged | the check before #38 |",
        "| --- | --- | --- | --- |",
    ]
    for shape in honest:
        agrees(shape.draw(rng, (20, 300)))
        new, old = lives(shape, args.runs, args.looks, args.seed, args.cache)
        shown = skew(shape.draw(rng, (200, 1000)))
        lines.append(f"| {shape.name} | {shown:+.1f} | {within(new, args.looks)} "
                     f"| {within(old, args.looks)} |")  # fmt: skip
    named = {"exponential": "1 {} exponential", "1": "e^0.5 {} lognormal (sigma 1)",
             "1.5": "e^1.125 {} lognormal (sigma 1.5)"}  # fmt: skip
    for kind, name in ((kind, name.format(MINUS)) for kind, name in named.items()):
        draw = alone(kind)
        old = np.concatenate([t_flags(draw(rng, (min(1000, args.runs - s), args.looks)))
                              for s in range(0, args.runs, 1000)])  # fmt: skip
        shown = skew(np.stack([np.zeros((1000, 200)), draw(rng, (1000, 200))], -1))
        lines.append(f"| no rotations: the difference alone, {name} | {shown:+.1f} "
                     f"| n/a (needs the rotations) | {within(old, args.looks)} |")  # fmt: skip
    lines += [
        "",
        f"Bots that use their memory in a share of their deals (real heads-up deals of {args.hands} hands, "
        f"resampled), looked at after every deal up to {args.horizon_long:,} (target: a quarter flagged "
        f"within {args.horizon} deals in ≥ 90% of runs):",
        "",
        f"| opponent, memory used in | later {MINUS} first (net), chips/100 hands "
        f"| flagged within {args.horizon} "
        f"| deals to the flag: median, 90th percentile | the check before #38: within {args.horizon} |",
        "| --- | --- | --- | --- | --- |",
    ]
    for villain in ("greedy", "heuristic"):
        rows = real[villain]
        for used, label in ((1.0, "every deal"), (0.5, "half"), (0.25, "a quarter")):
            shape = Shape(f"memory {villain} {used}", mixed(rows[:, :2], rows[:, 2:], used))
            sample = shape.draw(rng, (1, 200_000))[0]
            gain = float((sample[:, 1] - sample[:, 0]).mean())
            agrees(shape.draw(rng, (20, 300)))
            new, old = lives(shape, args.runs, args.horizon_long, args.seed, args.cache)
            at = np.where(new > 0, new, args.horizon_long + 1)
            quantiles = [int(np.percentile(at, q)) for q in (50, 90)]
            cap = args.horizon_long
            median, p90 = (f"{q:,}" if q <= cap else f"> {cap:,}" for q in quantiles)
            lines.append(f"| `{villain}`, {label} | {gain:+.1f} | {within(new, args.horizon)} "
                         f"| {median}, {p90} | {within(old, args.horizon)} |")  # fmt: skip
    return "\n".join(lines)


def candidates(args: argparse.Namespace) -> None:
    """The frontier the check's constants were chosen on: bots remembering a quarter or half of
    their deals, flagged within ``--horizon`` deals, for each clipping scale, set of bets and
    threshold (an honest bot's lifetime false alarms are at most the threshold by Ville's
    inequality, whatever these are), and the check before #38 on the same lives."""
    real = {villain: real_deals(villain, deals, args.hands, args.seed, args.jobs, args.cache)
            for villain, deals in (("greedy", args.deals), ("heuristic", args.deals_heuristic))}  # fmt: skip
    grid = [(0.25, 0.5, 1.0, 2.0, 4.0), ((0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75), (0.1, 0.2, 0.3, 0.4, 0.5),
            (0.2, 0.35, 0.5, 0.65, 0.8)), (0.001, 0.002)]  # fmt: skip
    chosen = (fp.SCALE, fp.BETS, fp.ALPHA)
    rng = np.random.default_rng(args.seed)
    try:
        for villain, rows in real.items():
            for used in (0.25, 0.5):
                values = mixed(rows[:, :2], rows[:, 2:], used)(rng, (args.runs, 2 * args.horizon))
                old = t_flags(values[..., 1] - values[..., 0])
                print(f"{villain}, memory in {used:.0%} of deals: the check before #38 flags "
                      f"{within(old, args.horizon)} within {args.horizon}")  # fmt: skip
                for scale, bets, alpha in itertools.product(*grid):
                    fp.SCALE, fp.BETS, fp.ALPHA = scale, bets, alpha  # type: ignore[misc]
                    new = first_flags(values)
                    at = np.where(new > 0, new, 10**9)
                    print(f"  scale {scale:<4} bets {bets} alpha {alpha}: "
                          f"{within(new, args.horizon)} within {args.horizon}, "
                          f"median {np.median(at):.0f} deals", flush=True)  # fmt: skip
    finally:
        fp.SCALE, fp.BETS, fp.ALPHA = chosen  # type: ignore[misc]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="simulated lives per row")
    parser.add_argument("--looks", type=int, default=2000, help="an honest bot's life, in deals")
    parser.add_argument("--horizon", type=int, default=200, help="the deals a memory bot must be flagged in")
    parser.add_argument("--horizon-long", type=int, default=1000, help="a memory bot's life, in deals")
    parser.add_argument("--deals", type=int, default=1000, help="real deals played against greedy")
    parser.add_argument("--deals-heuristic", type=int, default=200, help="and against heuristic (slower)")
    parser.add_argument("--hands", type=int, default=16, help="hands per match")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--jobs", type=int, default=1, help="processes playing the real deals")
    parser.add_argument("--cache", type=Path, default=None, help="a folder for the real deals and the lives")
    parser.add_argument("--check", action="store_true", help="compare with the docs instead of writing")
    parser.add_argument("--print", action="store_true", help="print the table only")
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--candidates", action="store_true", help="instead: the constants' frontier")
    args = parser.parse_args(argv)
    if args.candidates:
        candidates(args)
        return 0
    unpriced = ("--cache", "--jobs")  # neither the cache nor the processes change a number
    block = table(args, docs_block.command("bench/fairplay_stats.py", argv, unpriced))
    if args.print:
        print(block)
        return 0
    return docs_block.publish(args.docs, BEGIN, END, block, args.check)


if __name__ == "__main__":
    raise SystemExit(main())

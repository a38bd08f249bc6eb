"""Benchmark the official rating fit: 50 bots, 100,000 matches at 2- to 6-seat tables.

Run with ``python bench/ratings.py``. Prints the fit time with sandwich intervals (the target
is under 2 s) as a ratio to a baseline measured in
the same process: one naive pure-Python pass over the matches that only tallies the pairwise
results into a dict, i.e. the least work any rating fit has to do.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from arena.ratings.model import ELO_SCALE, RatedMatch, fit


def season(bots: int, matches: int, seed: int) -> tuple[np.ndarray, list[RatedMatch]]:
    """Matches between bots of known strength; scores are whole chips, so ties happen."""
    rng = np.random.default_rng(seed)
    true = rng.normal(0.0, 200.0, bots)
    names = [f"bot-{i:02d}" for i in range(bots)]
    sizes = rng.integers(2, 7, matches)
    seats = np.argsort(rng.random((matches, bots)), axis=1)[:, :6]
    chips = np.round(10.0 * (ELO_SCALE * true[seats] + rng.gumbel(size=seats.shape)))
    results = [
        RatedMatch(m, tuple(names[i] for i in seats[m, :n]), tuple(chips[m, :n].tolist()))
        for m, n in enumerate(sizes.tolist())
    ]
    return true, results


def tally(results: list[RatedMatch]) -> dict[tuple[str, str], list[float]]:
    """The baseline: pairwise points and weights, one Python step per pair."""
    table: dict[tuple[str, str], list[float]] = {}
    for r in results:
        w = 1.0 / (len(r.bots) - 1)
        for i, j in itertools.combinations(range(len(r.bots)), 2):
            s = 1.0 if r.scores[i] > r.scores[j] else 0.5 if r.scores[i] == r.scores[j] else 0.0
            cell = table.setdefault((r.bots[i], r.bots[j]), [0.0, 0.0])
            cell[0] += w * s
            cell[1] += w
    return table


def best_of(repeats: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=50)
    parser.add_argument("--matches", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    true, results = season(args.bots, args.matches, seed=1)
    built = time.perf_counter() - start
    pairs = sum(len(r.bots) * (len(r.bots) - 1) // 2 for r in results)
    print(f"{args.bots} bots, {len(results):,} matches, {pairs:,} pairwise results (built in {built:.1f} s)")

    baseline = best_of(args.repeats, lambda: tally(results))
    sandwich = best_of(args.repeats, lambda: fit(results))
    print(f"baseline, pure-Python pairwise tally: {baseline:6.3f} s")
    print(
        f"fit, sandwich intervals:              {sandwich:6.3f} s "
        f"({sandwich / baseline:.2f}x baseline)  target < 2 s: "
        f"{'ok' if sandwich < 2.0 else 'MISSED'}"
    )
    # A sanity line, so a fast but wrong fit does not go unnoticed.
    table = fit(results)
    elo = {r.bot: r.elo for r in table.ratings}
    truth = 1500.0 + true - true.mean()
    error = max(abs(elo[f"bot-{i:02d}"] - truth[i]) for i in range(args.bots))
    widths = [r.high - r.low for r in table.ratings if r.high is not None and r.low is not None]
    width = float(np.mean(widths))
    print(f"largest error vs truth {error:.1f} Elo, mean 95% interval width {width:.1f} Elo")


if __name__ == "__main__":
    main()

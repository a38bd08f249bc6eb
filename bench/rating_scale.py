"""Benchmark the anchored rating fit: does the scale hold, and does it scale?

    .venv/bin/python bench/rating_scale.py anchor [--runs 200] [--matches 300]
    .venv/bin/python bench/rating_scale.py scale [--bots 1000 --matches 10000000]

``anchor`` simulates seasons of 6 bots of known strength at 2- to 6-seat tables, plus
``random``-like bot that loses every comparison and a newcomer with one match, and prints
with the simulation counts: how often the other bots' 95% intervals cover the truth (target
>= 93%), and how far adding the newcomer's single match moves an established bot and widens
its interval (targets: <= 5 Elo, <= 10%).

``scale`` builds the matches as arrays (RatedMatch objects for 10 million matches would take
gigabytes on their own), then times the full fit with intervals, and an incremental update
after one more match, and ladder ticks of ``--results`` new heads-up results each, with the
process's peak memory (ru_maxrss). The fit's baseline, timed in the same process, is one
numpy pass that only tallies pairwise points into a bots x bots matrix: the least work any
rating fit has to do; a tick's is one product of a bots x bots matrix with a vector.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from arena.ratings.model import ELO_SCALE, RatedMatch, RatingModel, fit
from arena.ratings.pool import MIN_POINTS, RAMP_MATCHES, RAMP_POINTS


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def season(rng: np.random.Generator, true: np.ndarray, matches: int) -> list[RatedMatch]:
    k = len(true)
    out = []
    for m in range(matches):
        n = int(rng.integers(2, min(6, k) + 1))
        seats = rng.permutation(k)[:n]
        util = ELO_SCALE * true[seats] + rng.gumbel(size=n)
        out.append(RatedMatch(m, tuple(f"b{i}" for i in seats), tuple(util.tolist())))
    return out


def true_centre(results: list[RatedMatch], true: np.ndarray, min_matches: int = 20) -> float:
    """The scale's zero at the true ratings: the six's mean weighted as the model weighs it
    (its matches past ``min_matches`` and the points it both scored and conceded, each share
    ramping to full; arena/ratings/pool.py ``centre_weights``)."""
    k = len(true)
    played, scored, conceded = np.zeros(k), np.zeros(k), np.zeros(k)
    for m in results:
        w = 1 / (len(m.bots) - 1)
        for i, a in enumerate(m.bots):
            for b, s in zip(m.bots[i + 1 :], m.scores[i + 1 :], strict=True):
                got = w * (1.0 if m.scores[i] > s else 0.5 if m.scores[i] == s else 0.0)
                for bot, won, lost in ((a, got, w - got), (b, w - got, got)):
                    if bot.startswith("b"):
                        scored[int(bot[1:])] += won
                        conceded[int(bot[1:])] += lost
        played[[int(b[1:]) for b in m.bots if b.startswith("b")]] += 1
    by_matches = np.clip((played - min_matches) / RAMP_MATCHES, 0, 1)
    by_points = np.clip((np.minimum(scored, conceded) - MIN_POINTS) / RAMP_POINTS, 0, 1)
    w = by_matches * by_points
    return float(w @ true / w.sum())


def anchor(runs: int, matches: int = 300) -> None:
    true = np.array([-150.0, -75.0, 0.0, 50.0, 100.0, 200.0])
    rng = np.random.default_rng(16)
    covered = total = 0
    moves: list[float] = []
    widen: list[float] = []
    for run in range(runs):
        results = season(rng, true, matches)
        # A "random" bot that loses every comparison, at tables with the others.
        for m in range(60):
            seats = rng.permutation(len(true))[: int(rng.integers(1, 4))]
            results.append(RatedMatch(f"loser{m}", ("loser", *(f"b{i}" for i in seats)),
                                       (-1e6, *rng.gumbel(size=len(seats)).tolist())))
        table = {r.bot: r for r in fit(results).ratings}
        truth = 1500.0 + true - true_centre(results, true)  # the pool is the six
        for i in range(len(true)):
            r = table[f"b{i}"]
            assert r.low is not None and r.high is not None
            covered += r.low <= truth[i] <= r.high
            total += 1
        seats = rng.permutation(len(true))[:2]
        results.append(RatedMatch("newcomer", ("new", *(f"b{i}" for i in seats)), (1.0, 0.0, -1.0)))
        after = {r.bot: r for r in fit(results).ratings}
        for i in range(len(true)):
            a, b = table[f"b{i}"], after[f"b{i}"]
            assert a.low is not None and a.high is not None and b.low is not None and b.high is not None
            moves.append(abs(b.elo - a.elo))
            widen.append((b.high - b.low) / (a.high - a.low) - 1.0)
        if run % 50 == 49:
            print(f"  {run + 1} runs ...", flush=True)
    rate = covered / total
    print(f"coverage of the pool's 95% intervals, with a bot that lost everything present: "
          f"{covered}/{total} = {rate:.1%} (target >= 93%: {'ok' if rate >= 0.93 else 'MISSED'})")
    print(f"a newcomer's one match, over {len(moves)} (run, bot) cases: largest move {max(moves):.3f} Elo "
          f"(target <= 5: {'ok' if max(moves) <= 5 else 'MISSED'}), largest widening {100 * max(widen):.2f}% "
          f"(target <= 10%: {'ok' if max(widen) <= 0.10 else 'MISSED'})")


def build(bots: int, matches: int, seed: int) -> tuple[np.ndarray, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """Matches at 2- to 6-seat tables as arrays per size: seats (bot index) and scores."""
    rng = np.random.default_rng(seed)
    true = rng.normal(0.0, 200.0, bots)
    sizes = rng.integers(2, 7, matches)
    tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for n in range(2, 7):
        m = int((sizes == n).sum())
        seats = rng.integers(0, bots, (m, n), dtype=np.int32)
        while True:  # redraw rows that seat a bot twice
            ordered = np.sort(seats, axis=1)
            bad = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
            if not bad.any():
                break
            seats[bad] = rng.integers(0, bots, (int(bad.sum()), n), dtype=np.int32)
        chips = np.round(10.0 * (ELO_SCALE * true[seats] + rng.gumbel(size=seats.shape)))
        tables[n] = (seats, chips)
    return true, tables


def scale(bots: int, matches: int, ticks: int = 3, results: int = 64) -> None:
    start = time.perf_counter()
    true, tables = build(bots, matches, seed=1)
    print(f"{bots} bots, {matches:,} matches built in {time.perf_counter() - start:.1f} s; "
          f"peak so far {peak_mb():.0f} MB")
    names = [f"bot-{i:04d}" for i in range(bots)]

    start = time.perf_counter()
    tally = np.zeros(bots * bots)
    for n, (seats, chips) in tables.items():
        for a, b in zip(*np.triu_indices(n, 1), strict=True):
            win = (chips[:, a] > chips[:, b]) + 0.5 * (chips[:, a] == chips[:, b])
            tally += np.bincount(seats[:, a].astype(np.int64) * bots + seats[:, b], win / (n - 1),
                                 minlength=bots * bots)
    baseline = time.perf_counter() - start

    model = RatingModel()
    start = time.perf_counter()
    for seats, chips in tables.values():
        model.add_table(names, seats, chips)
    added = time.perf_counter() - start
    start = time.perf_counter()
    table = model.fit(pairwise=False)
    fitted = time.perf_counter() - start
    print(f"baseline, numpy pairwise tally:      {baseline:6.2f} s")
    print(f"add the matches (pairwise sums):     {added:6.2f} s ({added / baseline:.2f}x baseline)")
    print(f"full fit with 95% intervals:         {fitted:6.2f} s ({fitted / baseline:.2f}x baseline)  "
          f"target < 10 s: {'ok' if fitted < 10 else 'MISSED'}")

    rng = np.random.default_rng(2)
    one = rng.choice(bots, 3, replace=False)[None, :]
    start = time.perf_counter()
    model.add_table(names, one, rng.gumbel(size=(1, 3)))
    quick = model.update(pairwise=False)
    updated = time.perf_counter() - start
    print(f"one more match, incremental update:  {updated:6.2f} s  target < 1 s: "
          f"{'ok' if updated < 1 else 'MISSED'}")
    # A ladder's tick: `results` new heads-up results, then the update (the median of `ticks`),
    # against the cheapest pass over a bots x bots matrix (one product with a vector), timed
    # in the same run just before it.
    member = np.full(bots, 1.0 / bots)
    square = np.ones((bots, bots))
    ticks_s, passes_s = [], []
    for _ in range(ticks):
        started = time.perf_counter()
        square @ member
        passes_s.append(time.perf_counter() - started)
        heads_up = np.array([rng.choice(bots, 2, replace=False) for _ in range(results)])
        model.add_table(names, heads_up, rng.gumbel(size=(results, 2)))
        started = time.perf_counter()
        model.update(pairwise=False)
        ticks_s.append(time.perf_counter() - started)
    del square
    tick, one_pass = float(np.median(ticks_s)), float(np.median(passes_s))
    print(f"a tick of {results} results, update:  {tick:6.2f} s (median of {ticks}; "
          f"{tick / one_pass:.0f}x one bots x bots product with a vector, {one_pass * 1000:.0f} ms)")
    print(f"peak memory of the process: {peak_mb():.0f} MB  target < 2048 MB: "
          f"{'ok' if peak_mb() < 2048 else 'MISSED'}")

    elo = {r.bot: r.elo for r in table.ratings}
    truth = 1500.0 + true - true.mean()
    error = max(abs(elo[names[i]] - truth[i]) for i in range(bots))
    widths = [r.high - r.low for r in table.ratings if r.high is not None and r.low is not None]
    width = float(np.mean(widths))
    moved = max(abs(a.elo - b.elo) for a, b in zip(table.ratings, quick.ratings, strict=True))
    print(f"largest error vs truth {error:.1f} Elo, mean 95% interval width {width:.1f} Elo, "
          f"update moved a rating by at most {moved:.3f} Elo")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    a = sub.add_parser("anchor", help="coverage and newcomer figures")
    a.add_argument("--runs", type=int, default=200, help="simulated seasons")
    a.add_argument("--matches", type=int, default=300, help="matches of the six per season")
    s = sub.add_parser("scale", help="time and memory at size")
    s.add_argument("--bots", type=int, default=1000)
    s.add_argument("--matches", type=int, default=10_000_000)
    s.add_argument("--ticks", type=int, default=3, help="ladder ticks timed after the fit")
    s.add_argument("--results", type=int, default=64, help="new heads-up results a tick")
    args = parser.parse_args()
    if args.what == "anchor":
        anchor(args.runs, args.matches)
    else:
        scale(args.bots, args.matches, args.ticks, args.results)


if __name__ == "__main__":
    main()

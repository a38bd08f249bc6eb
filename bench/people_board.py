"""The people's board (arena/ratings/people.py, issue #39): does a person's 95% interval hold
their true rating, and what does the fit cost next to the bots' model on as many matches?

    .venv/bin/python bench/people_board.py [--people 3000] [--seed 1]

Coverage: 10 bots with known ratings (drawn around 1500, sd 200) held fixed; each person's
true rating drawn around 1500 (sd 150); each match heads-up against a random bot, won with
the Bradley-Terry probability. For 5, 20 and 60 matches a person: how many get an estimate
(not a one-sided bound), and how often the interval holds the truth, with that share's own
95% interval (Wilson). Target >= 94%.

Cost: 50,000 matches of 2,000 people at 2 or 3 seats against 50 bots: ``fit_people``
against the whole bots' model fitting the same matches (``fit``), in the same process,
each timed twice, the ratio of the second runs reported (the machine is shared).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parent))  # bench/sprt_checks.py, for its wilson

from sprt_checks import wilson

from arena.ratings.model import RatedMatch, fit
from arena.ratings.people import fit_people


def coverage(people: int, seed: int) -> None:
    print("| matches a person | with an estimate | interval holds the truth | its 95% interval |")
    print("|---|---|---|---|")
    for per in (5, 20, 60):
        rng = random.Random(seed * 1000 + per)
        bots = {str(i): rng.gauss(1500, 200) for i in range(10)}
        names = [f"p{i}" for i in range(people)]
        truth = {p: rng.gauss(1500, 150) for p in names}
        matches, k = [], 0
        for p in names:
            for _ in range(per):
                b = rng.choice(list(bots))
                won = rng.random() < 1 / (1 + 10 ** ((bots[b] - truth[p]) / 400))
                matches.append(RatedMatch(k, (p, b), (1, -1) if won else (-1, 1), (k, 0)))
                k += 1
        table = fit_people(matches, bots, set(names))
        rated = [r for r in table.ratings if r.basis == "fitted"]
        hits = sum(
            r.low is not None and r.high is not None and r.low <= truth[r.bot] <= r.high for r in rated
        )
        lo, hi = wilson(hits, len(rated))
        print(f"| {per} | {len(rated)} of {people} | {hits / len(rated):.1%} | {lo:.1%}-{hi:.1%} |")


def cost(seed: int) -> None:
    rng = random.Random(seed)
    bots = {str(i): rng.gauss(1500, 200) for i in range(50)}
    names = [f"person:{i}" for i in range(2000)]
    strength = {p: rng.gauss(1500, 200) for p in names}
    matches = []
    for k in range(50_000):
        p, n = rng.choice(names), rng.choice([2, 3])
        opponents = rng.sample(list(bots), n - 1)
        scores = [strength[p] + rng.gauss(0, 300)] + [bots[b] + rng.gauss(0, 300) for b in opponents]
        matches.append(RatedMatch(k, (p, *opponents), tuple(int(s) for s in scores), (k, 0)))
    times = []
    for _ in range(2):
        started = time.perf_counter()
        fit_people(matches, bots, set(names))
        ours = time.perf_counter() - started
        started = time.perf_counter()
        fit(matches)
        times.append((ours, time.perf_counter() - started))
    ours, theirs = times[-1]
    print(f"50,000 matches, 2,000 people: fit_people {ours:.2f} s, the bots' model on the same "
          f"matches {theirs:.2f} s, ratio {ours / theirs:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    coverage(args.people, args.seed)
    cost(args.seed)


if __name__ == "__main__":
    main()

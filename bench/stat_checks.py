"""Simulation bench for the arena's statistics (issue #26): does each one keep its promise?

    .venv/bin/python bench/stat_checks.py [estimate] [intervals] [anchor]
                                         [--runs 1000] [--seed 1]

The SPRT and the verdict of ``tonk play A B --duplicate`` are checked by bench/sprt_checks.py.

``estimate`` checks the effect size that the SPRT state prints (sdk/compare.py
``elo_estimate``): on pair shapes like Tonk's (most pairs split at ½) and on pairs of two
independent matches, at a true difference of 0, 20 and 200 Elo, after 20 to 800 pairs, the
coverage of its 95% interval (target >= 0.93) and how often the interval leaves 0 out (at a
true 0 the complement of coverage; ``tonk play --duplicate`` no longer decides on it).

``intervals`` simulates seasons of duplicate play (6 bots, every 3-seat table, each deal played
in its 3 seat rotations) under three dependence structures: independent matches; shared card
luck (each seat's cards worth a lot, rotated through the bots, so duplicate cancels it); and a
bot x deal effect (a deal suits some bots, in every rotation). For the rating intervals
clustered by deal (the arena's) and by match (the old rule) it prints the coverage of the 95%
interval around the mean estimate over the runs (target >= 94%) and the ratio of the reported
standard error to the estimates' empirical standard deviation (target 0.9-1.1).

``anchor`` measures how far the scale's zero moves for bots that did nothing: seasons of 6 or
12 established bots (60 matches each at 2- to 4-seat tables, ratings spread over 600 Elo),
then (a) a hopeless bot that lost all of its 30 matches draws once, and (b) a newcomer 400 Elo
above the average plays its 20th match (crossing ``min_matches``). It prints the largest shift
of the scale (the established bots' mean move) over the runs (target <= 5 Elo), and, without a
target, the largest shift at any one of the hopeless bot's next four draws and of the
newcomer's next twenty matches (the bot's share of the zero growing, and the established
bots' own records changing).

The fair-play check's error rates are measured by bench/fairplay_stats.py.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from arena.ratings.model import ELO_SCALE, RatedMatch, fit
from arena.tournaments.sprt import OUTCOMES, expected_score
from sdk.compare import elo_estimate


def tilted(base: list[float], s: float) -> np.ndarray:
    """``base`` tilted exponentially (p_i * exp(t x_i)) to have mean pair score ``s``."""
    x, p = np.array(OUTCOMES), np.array(base)
    lo, hi = -50.0, 50.0
    for _ in range(200):
        t = (lo + hi) / 2
        q = p * np.exp(t * x)
        lo, hi = (t, hi) if (q @ x) / q.sum() < s else (lo, t)
    q = p * np.exp(lo * x)
    return q / q.sum()


def independent(s: float, draws: float = 0.1) -> np.ndarray:
    """A pair of two independent matches, each won, drawn or lost, scoring ``s`` on average."""
    w, d, loss = s - draws / 2, draws, 1 - s - draws / 2
    game = np.array([loss, d, w])
    return np.convolve(game, game)  # 0, ¼, ½, ¾, 1


#: Pair shapes at 0 Elo: share of pairs scoring 0, ¼, ½, ¾, 1 (Tonk: 65-82% split at ½).
SHAPES = {
    "tonk 65% even": [0.03, 0.145, 0.65, 0.145, 0.03],
    "tonk 82% even": [0.01, 0.08, 0.82, 0.08, 0.01],
}


def shapes(elo: float) -> dict[str, np.ndarray]:
    s = expected_score(elo)
    out = {name: tilted(base, s) for name, base in SHAPES.items()}
    out["independent halves"] = independent(s)
    return out


def estimate(runs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"Elo estimate (sdk/compare.py): 95% interval coverage, {runs} runs each")
    print(f"{'pairs':<20} {'true':>5} {'n':>5} {'coverage':>9} {'says better':>12}")
    for elo in (0.0, 20.0, 200.0):
        for name, p in shapes(elo).items():
            for n in (20, 50, 200, 800):
                covered = decided = 0
                for _ in range(runs):
                    est = elo_estimate([int(k) for k in rng.multinomial(n, p)])
                    assert est is not None
                    covered += est.low <= elo <= est.high
                    decided += est.low > 0 or est.high < 0
                print(f"{name:<20} {elo:>5g} {n:>5} {covered / runs:>9.3f} {decided / runs:>12.3f}")


STRUCTURES = ("independent", "card luck", "bot x deal")


def duplicate_season(
    rng: np.random.Generator, true: np.ndarray, deals: int, structure: str
) -> list[tuple[str, tuple[str, ...], tuple[float, ...], tuple[int, int]]]:
    """(match id, bots, scores, deal) for every rotation of every deal at every 3-seat table."""
    out = []
    tables = [t for t in itertools.combinations(range(len(true)), 3)]
    for t, table in enumerate(tables):
        for d in range(deals):
            cards = rng.normal(0.0, 2.0, 3) if structure == "card luck" else np.zeros(3)
            suits = rng.normal(0.0, 1.0, 3) if structure == "bot x deal" else np.zeros(3)
            for r in range(3):
                seats = [table[(s + r) % 3] for s in range(3)]  # bot in seat s; seat s keeps its cards
                util = ELO_SCALE * true[seats] + cards + suits[[(s + r) % 3 for s in range(3)]]
                util += rng.gumbel(size=3)
                out.append((f"{t}/{d}/{r}", tuple(f"b{i}" for i in seats), tuple(util.tolist()), (t, d)))
    return out


def intervals(runs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    true = np.array([-150.0, -75.0, 0.0, 50.0, 100.0, 200.0])
    deals = 10
    print(
        f"rating intervals: 6 bots, 20 three-seat tables x {deals} deals x 3 rotations "
        f"({20 * deals * 3} matches) per run, {runs} runs"
    )
    print(f"{'structure':<12} {'clustered by':<13} {'coverage':>8} {'SE/SD':>6}   targets >= 94%, 0.9-1.1")
    for structure in STRUCTURES:
        est = {"deal": np.zeros((runs, len(true))), "match": np.zeros((runs, len(true)))}
        se = {"deal": np.zeros((runs, len(true))), "match": np.zeros((runs, len(true)))}
        for run in range(runs):
            season = duplicate_season(rng, true, deals, structure)
            for unit in ("deal", "match"):
                rated = [RatedMatch(m, b, s, d if unit == "deal" else None) for m, b, s, d in season]
                table = {r.bot: r for r in fit(rated).ratings}
                for i in range(len(true)):
                    row = table[f"b{i}"]
                    assert row.low is not None and row.high is not None
                    est[unit][run, i] = row.elo
                    se[unit][run, i] = (row.high - row.low) / (2 * 1.959964)
        for unit in ("deal", "match"):
            centre = est[unit].mean(axis=0)
            covered = np.abs(est[unit] - centre) <= 1.959964 * se[unit]
            ratio = se[unit].mean(axis=0) / est[unit].std(axis=0, ddof=1)
            print(
                f"{structure:<12} {unit:<13} {covered.mean():>8.1%} {ratio.mean():>6.2f}   "
                f"(per bot {ratio.min():.2f}-{ratio.max():.2f}; SE {se[unit].mean():.1f} Elo)"
            )


def established(rng: np.random.Generator, k: int, matches: int) -> tuple[np.ndarray, list[RatedMatch]]:
    true = np.linspace(-300.0, 300.0, k)
    out = []
    for m in range(matches):
        seats = rng.permutation(k)[: int(rng.integers(2, 5))]
        util = ELO_SCALE * true[seats] + rng.gumbel(size=len(seats))
        out.append(RatedMatch(f"m{m}", tuple(f"b{i}" for i in seats), tuple(util.tolist())))
    return true, out


def shift(before: list[RatedMatch], after: list[RatedMatch], k: int) -> tuple[float, float]:
    """(the scale's shift: the established bots' mean move; the largest single bot's move,
    which also holds what the new games say about the bots it played)."""
    a = {r.bot: r.elo for r in fit(before).ratings}
    b = {r.bot: r.elo for r in fit(after).ratings}
    moves = np.array([b[f"b{i}"] - a[f"b{i}"] for i in range(k)])
    return abs(float(moves.mean())), float(np.abs(moves).max())


def anchor(runs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"the scale's zero, {runs} runs: the established bots' mean move (the scale's shift, "
          "target <= 5 Elo) and the largest single bot's move; the 'later' rows (no target) are "
          "the largest shift over the next matches of the same bot")
    for k in (6, 12):
        events: dict[str, list[tuple[float, float]]] = {
            "a hopeless bot draws once": [],
            "a strong newcomer's 20th match": [],
            "later: its 2nd to 5th draw": [],
            "later: the newcomer's 21st-40th": [],
        }
        for _ in range(runs):
            true, season = established(rng, k, 60 * k // 3)
            lost = [
                RatedMatch(f"h{m}", ("hopeless", f"b{int(rng.integers(k))}"), (-1e6, 0.0)) for m in range(30)
            ]
            draws = [
                RatedMatch(f"d{d}", ("hopeless", f"b{int(rng.integers(k))}"), (0.0, 0.0)) for d in range(5)
            ]
            before = season + lost
            events["a hopeless bot draws once"].append(shift(before, [*before, draws[0]], k))
            events["later: its 2nd to 5th draw"].append(
                worst([shift(before + draws[:d], before + draws[: d + 1], k) for d in range(1, 5)])
            )
            strong = 400.0 + true.mean()
            games = []
            for m in range(40):
                seats = rng.permutation(k)[: int(rng.integers(1, 4))]
                util = ELO_SCALE * np.r_[strong, true[seats]] + rng.gumbel(size=len(seats) + 1)
                games.append(RatedMatch(f"n{m}", ("new", *(f"b{i}" for i in seats)), tuple(util.tolist())))
            joined = shift(season + games[:19], season + games[:20], k)
            events["a strong newcomer's 20th match"].append(joined)
            events["later: the newcomer's 21st-40th"].append(
                worst([shift(season + games[: m - 1], season + games[:m], k) for m in range(21, 41)])
            )
        for name, moves in events.items():
            scale, single = np.array(moves).T
            verdict = "" if name.startswith("later") else " (ok)" if scale.max() <= 5 else " (MISSED)"
            print(f"  {k:>2} bots, {name:<31} scale: largest {scale.max():5.1f} Elo, median "
                  f"{np.median(scale):4.1f}{verdict}; one bot: largest {single.max():5.1f}")


def worst(moves: list[tuple[float, float]]) -> tuple[float, float]:
    """The largest scale shift and the largest single move over several steps."""
    scale, single = np.array(moves).T
    return float(scale.max()), float(single.max())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    kinds = ["estimate", "intervals", "anchor"]
    parser.add_argument("what", nargs="*", help=f"any of {', '.join(kinds)} (default: all)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    unknown = set(args.what) - set(kinds)
    if unknown:
        parser.error(f"unknown check(s) {', '.join(sorted(unknown))!r}; choose from {', '.join(kinds)}")
    args.what = args.what or kinds
    if "estimate" in args.what:
        estimate(args.runs, args.seed)
    if "intervals" in args.what:
        intervals(max(100, args.runs // 4), args.seed)
    if "anchor" in args.what:
        anchor(max(50, args.runs // 10), args.seed)


if __name__ == "__main__":
    main()

"""Simulation bench for the rating's promises (issue #38): a scale nothing later can drag, and
intervals that cover the true rating at small samples.

    .venv/bin/python bench/rating_checks.py [anchor] [coverage] [--runs N] [--seed 1]
    .venv/bin/python bench/rating_checks.py --write-docs   # the docs tables, from seed 1
    .venv/bin/python bench/rating_checks.py --check        # rerun and compare with the docs

``anchor`` measures how far the scale moves for bots that did nothing, over the whole of an
event, not one step of it: seasons of 6 or 12 established bots (careers of 60 or 600 matches
each at 2- to 4-seat tables, ratings spread over 600 Elo), every third of them a house bot
(the reference: ``fit(reference=...)``), then (a) a hopeless bot that lost all of its 30
matches draws 5 times, (b) a newcomer 400 Elo above the average plays 40 matches, (c) one of
the non-house bots brings 4 new versions, each 50 Elo stronger than the last, each playing
60 matches and then retiring. The scale's shift is the established bots' mean move (the
house bots' and the others'; the moving bot's own versions excluded); the target is <= 5 Elo
at every point of the event (the largest over its steps, from before its first match); each
cell also gives the drift, the signed shift at the end averaged over the runs with its 95%
interval. The same seasons are fitted with no reference (the pool's mean, the rule before)
as the baseline. A run's shift holds what the new games say about the bots they were played
against too, which is evidence, not drift: the drift column tells the two apart.

``coverage`` simulates duplicate seasons (6 bots, every 3-seat table, each deal in its 3
seat rotations) at 20, 40 and 100 deals per bot under three dependence structures
(independent matches; shared card luck, which duplicate cancels; a bot x deal effect) and
prints how often the 95% interval holds the *true* rating on the fit's scale
(:func:`pseudo_truth`: the fit of one 4,000-deal season, as extra noise makes a
Bradley-Terry fit read play as closer), target >= 94%, with the coverage's own 95% interval,
and the reported standard error over the estimates' spread (SE/SD). Rows: the arena's
interval (Student's t on the bot's deals less one) and the one before (the normal quantile),
read from the same fits.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
sys.path.append(str(Path(__file__).resolve().parent))  # docs_block.py beside this file

import docs_block

from arena.ratings.intervals import effective_clusters, t_quantile
from arena.ratings.model import ELO_SCALE, RatedMatch, RatingModel, fit

BEGIN = "<!-- rating-checks:{what}:begin (bench/rating_checks.py writes this part) -->"
END = "<!-- rating-checks:{what}:end -->"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "arena.md"
TARGET_SHIFT, TARGET_COVERAGE = 5.0, 0.94


def established(rng: np.random.Generator, k: int, matches: int) -> tuple[np.ndarray, list[RatedMatch]]:
    true = np.linspace(-300.0, 300.0, k)
    out = []
    for m in range(matches):
        seats = rng.permutation(k)[: int(rng.integers(2, 5))]
        util = ELO_SCALE * true[seats] + rng.gumbel(size=len(seats))
        out.append(RatedMatch(f"m{m}", tuple(f"b{i}" for i in seats), tuple(util.tolist())))
    return true, out


def games(
    rng: np.random.Generator, name: str, strength: float, true: np.ndarray, n: int, tag: str
) -> list[RatedMatch]:
    """``n`` matches of bot ``name`` at ``strength`` against 1 to 3 of the established bots."""
    out = []
    for m in range(n):
        seats = rng.permutation(len(true))[: int(rng.integers(1, 4))]
        util = ELO_SCALE * np.r_[strength, true[seats]] + rng.gumbel(size=len(seats) + 1)
        out.append(RatedMatch(f"{tag}{m}", (name, *(f"b{i}" for i in seats)), tuple(util.tolist())))
    return out


def moves(steps: list[list[RatedMatch]], bots: list[str], reference: list[str]) -> tuple[float, float, float]:
    """Over the prefixes ``steps`` (the first: before the event): (the largest shift of the
    scale at any step, the established bots' mean move from the first; the shift at the end,
    signed; the largest single bot's move)."""
    tables = [{r.bot: r.elo for r in fit(s, reference=reference).ratings} for s in steps]
    start = np.array([tables[0][b] for b in bots])
    shift = single = end = 0.0
    for t in tables[1:]:
        move = np.array([t[b] for b in bots]) - start
        end = float(move.mean())
        shift, single = max(shift, abs(end)), max(single, float(np.abs(move).max()))
    return shift, end, single


EVENTS = (
    "a hopeless bot's first 5 draws",
    "a strong newcomer's first 40 matches",
    "4 new versions of another bot",
)
RULES = ("house bots", "pool (before)")
#: Matches each established bot played before the event: the old bench's 60, and a longer
#: career, where what the new games say about the established bots is small next to drift.
CAREERS = (60, 600)


def anchor(runs: int, seed: int) -> dict[tuple[int, int, str, str], np.ndarray]:
    """(bots, career, event, rule) -> rows of :func:`moves`, one per run."""
    rng = np.random.default_rng(seed)
    out: dict[tuple[int, int, str, str], list[tuple[float, float, float]]] = {}
    for k, career in itertools.product((6, 12), CAREERS):
        bots = [f"b{i}" for i in range(k)]
        house = [f"b{i}" for i in range(1, k, 3)]  # every third: a reference across the range
        mover = "b2"  # not a house bot: it brings the new versions
        others = [b for b in bots if b != mover]
        for _ in range(runs):
            true, season = established(rng, k, career * k // 3)
            lost = [
                RatedMatch(f"h{m}", ("hopeless", f"b{int(rng.integers(k))}"), (-1e6, 0.0)) for m in range(30)
            ]
            draws = [
                RatedMatch(f"d{d}", ("hopeless", f"b{int(rng.integers(k))}"), (0.0, 0.0)) for d in range(5)
            ]
            strong = games(rng, "new", 400.0 + true.mean(), true, 40, "n")
            versions = [games(rng, f"b2v{v}", true[2] + 50.0 * v, true, 60, f"v{v}-") for v in range(1, 5)]
            cases = {
                EVENTS[0]: ([season + lost + draws[:d] for d in range(6)], bots),
                EVENTS[1]: ([season + strong[:m] for m in (0, *range(20, 41))], bots),
                EVENTS[2]: ([season + [m for v in versions[:n] for m in v] for n in range(5)], others),
            }
            for rule, reference in zip(RULES, (house, []), strict=True):
                for event, (steps, who) in cases.items():
                    out.setdefault((k, career, event, rule), []).append(moves(steps, who, reference))
    return {key: np.array(rows) for key, rows in out.items()}


def anchor_table(results: dict[tuple[int, int, str, str], np.ndarray], runs: int) -> list[str]:
    """Per event and career: for each rule, the drift (the mean signed shift at the end over
    the runs, with its 95% interval) and the largest shift at any step of any run."""
    lines = [
        "| event | career | 6 bots: house | 6 bots: pool (before) | 12 bots: house "
        "| 12 bots: pool (before) |",
        "|---|---|---|---|---|---|",
    ]
    for event, career in itertools.product(EVENTS, CAREERS):
        cells = []
        for k, rule in itertools.product((6, 12), RULES):
            rows = results[(k, career, event, rule)]
            drift, half = rows[:, 1].mean(), 1.96 * rows[:, 1].std(ddof=1) / np.sqrt(len(rows))
            cells.append(f"{drift:+.1f} \u00b1 {half:.1f}; {rows[:, 0].max():.1f}")
        lines.append(f"| {event} | {career} | " + " | ".join(cells) + " |")
    return lines


STRUCTURES = ("independent", "card luck", "bot x deal")


def duplicate_season(
    rng: np.random.Generator, true: np.ndarray, deals: int, structure: str
) -> list[RatedMatch]:
    """Every rotation of ``deals`` deals at every 3-seat table, clustered by deal."""
    out = []
    for t, table in enumerate(itertools.combinations(range(len(true)), 3)):
        for d in range(deals):
            cards = rng.normal(0.0, 2.0, 3) if structure == "card luck" else np.zeros(3)
            suits = rng.normal(0.0, 1.0, 3) if structure == "bot x deal" else np.zeros(3)
            for r in range(3):
                seats = [table[(s + r) % 3] for s in range(3)]  # bot in seat s; seat s keeps its cards
                util = ELO_SCALE * true[seats] + cards + suits[[(s + r) % 3 for s in range(3)]]
                util += rng.gumbel(size=3)
                bots = tuple(f"b{i}" for i in seats)
                out.append(RatedMatch(f"{t}/{d}/{r}", bots, tuple(util.tolist()), (t, d)))
    return out


#: Deals per bot: each of 6 bots sits at 10 of the 20 three-seat tables.
PER_BOT = (20, 40, 100)
TRUE = np.array([-150.0, -75.0, 0.0, 50.0, 100.0, 200.0])
COVERAGE_RULES = ("t on the bot's deals", "normal (before)")
Z95 = NormalDist().inv_cdf(0.975)


def coverage(runs: int, seed: int) -> dict[tuple[int, str, str], tuple[float, float, float]]:
    """(deals per bot, structure, rule) -> (coverage of the truth, its 95% half-width, the
    mean SE over the estimates' SD): one fit per season, read with each rule's quantile."""
    rng = np.random.default_rng(seed)
    out = {}
    for structure in STRUCTURES:
        truth = pseudo_truth(np.random.default_rng(seed + 1000), TRUE, structure)
        for per_bot in PER_BOT:
            elo, se, quantile = np.zeros((runs, 6)), np.zeros((runs, 6)), np.zeros((runs, 6))
            for run in range(runs):
                season = duplicate_season(rng, TRUE, per_bot // 10, structure)
                rows = {r.bot: r for r in fit(season).ratings}
                deals = len({m.deal for m in season})
                for i in range(6):
                    row = rows[f"b{i}"]
                    assert row.low is not None and row.high is not None
                    df = effective_clusters(np.array([row.matches]), deals, len(season)) - 1.0
                    quantile[run, i] = float(t_quantile(0.975, df)[0])
                    elo[run, i], se[run, i] = row.elo, (row.high - row.low) / (2 * quantile[run, i])
            ratio = float((se.mean(axis=0) / elo.std(axis=0, ddof=1)).mean())
            for rule, q in zip(COVERAGE_RULES, (quantile, Z95), strict=True):
                covered = float((np.abs(elo - truth) <= q * se).mean())
                half = 1.96 * np.sqrt(covered * (1 - covered) / elo.size)
                out[(per_bot, structure, rule)] = (covered, half, ratio)
    return out


def coverage_table(results: dict[tuple[int, str, str], tuple[float, float, float]], runs: int) -> list[str]:
    lines = [
        "| dependence | deals per bot | t on the bot's deals | normal (before) | SE/SD |",
        "|---|---|---|---|---|",
    ]
    for structure, per_bot in itertools.product(STRUCTURES, PER_BOT):
        cells = []
        for rule in COVERAGE_RULES:
            covered, half, ratio = results[(per_bot, structure, rule)]
            cells.append(f"{100 * covered:.1f}% \u00b1 {100 * half:.1f}")
        lines.append(f"| {structure} | {per_bot} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    return lines


def pseudo_truth(rng: np.random.Generator, true: np.ndarray, structure: str, deals: int = 4000) -> np.ndarray:
    """The true rating *on the model's scale* (what the fit estimates), by a fit of one season
    of ``deals`` deals per table: card luck and a bot x deal effect add noise that a
    Bradley-Terry fit reads as closer play, so its ratings are nearer each other than
    ``true`` (the population value of the maximum likelihood, which an interval covers)."""
    tables = np.array(list(itertools.combinations(range(len(true)), 3)))
    t, d = len(tables), deals
    cards = rng.normal(0.0, 2.0, (t, d, 1, 3)) if structure == "card luck" else np.zeros((t, d, 1, 3))
    suits = rng.normal(0.0, 1.0, (t, d, 1, 3)) if structure == "bot x deal" else np.zeros((t, d, 1, 3))
    rot = (np.arange(3)[:, None] + np.arange(3)[None, :]) % 3  # rot[r, s]: table slot at seat s
    seats = tables[:, rot]  # (t, 3, 3): the bot code at seat s of rotation r
    bot_suit = np.take_along_axis(np.broadcast_to(suits, (t, d, 3, 3)), np.broadcast_to(rot, (t, d, 3, 3)), 3)
    util = ELO_SCALE * true[seats][:, None] + cards + bot_suit + rng.gumbel(size=(t, d, 3, 3))
    model = RatingModel()
    who = np.broadcast_to(seats[:, None], util.shape).reshape(-1, 3)
    model.add_table([f"b{i}" for i in range(len(true))], who, util.reshape(-1, 3))
    rows = {r.bot: r.elo for r in model.fit(pairwise=False).ratings}
    return np.array([rows[f"b{i}"] for i in range(len(true))])


def tables(what: list[str], runs: dict[str, int], seed: int) -> dict[str, list[str]]:
    """Each check's docs table, the command that made it first."""
    out = {}
    if "anchor" in what:
        command = f"bench/rating_checks.py anchor --anchor-runs {runs['anchor']} --seed {seed}"
        out["anchor"] = [f"`{command}`:", "", *anchor_table(anchor(runs["anchor"], seed), runs["anchor"])]
    if "coverage" in what:
        command = f"bench/rating_checks.py coverage --coverage-runs {runs['coverage']} --seed {seed}"
        found = coverage(runs["coverage"], seed)
        out["coverage"] = [f"`{command}`:", "", *coverage_table(found, runs["coverage"])]
    return out


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    kinds = ["anchor", "coverage"]
    parser.add_argument("what", nargs="*", help=f"any of {', '.join(kinds)} (default: all)")
    parser.add_argument("--anchor-runs", type=int, default=30)
    parser.add_argument("--coverage-runs", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true", help="write the tables into docs/arena.md")
    parser.add_argument("--check", action="store_true", help="rerun and compare with docs/arena.md")
    args = parser.parse_args()
    unknown = set(args.what) - set(kinds)
    if unknown:
        parser.error(f"unknown check(s) {', '.join(sorted(unknown))!r}; choose from {', '.join(kinds)}")
    what = args.what or kinds
    made = tables(what, {"anchor": args.anchor_runs, "coverage": args.coverage_runs}, args.seed)
    if not (args.check or args.write_docs):
        for lines in made.values():
            print("\n".join(lines) + "\n")
        return 0
    marks = {name: (BEGIN.format(what=name), END.format(what=name)) for name in made}
    blocks = {name: "\n".join(lines) for name, lines in made.items()}
    return max(docs_block.publish(DOCS, *marks[name], block, args.check) for name, block in blocks.items())


if __name__ == "__main__":
    raise SystemExit(main())

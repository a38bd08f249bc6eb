"""The scale's anchor and the intervals' quantile (issue #38): a scale tied to fixed reference
bots (the house bots) that no other bot's later games or versions can drag, and intervals
that use Student's t on a bot's own deals.

Simulated as in test_rating_model.py: a seat's final score is ``ELO_SCALE * true_elo +
Gumbel noise``, so every pair follows the Bradley-Terry model exactly. The established bots
have long careers here (600 matches each), so that what the new games say about them is
small next to the drift the old rule showed (20-30 Elo; bench/rating_checks.py anchor
measures both, at 60 matches as well).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.arena import hosted_bots, new_tournament
from sqlalchemy import select

from arena.bots.hosting import HOUSE_OWNER
from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.ratings import intervals, leaderboard
from arena.ratings.model import ELO_SCALE, OptionError, RatedMatch, RatingModel, fit
from arena.ratings.pool import shares
from arena.runtime.jobs import play_match_job
from arena.store.db import dispose_engines, session_scope
from arena.store.models import BotVersion, Match
from arena.tournaments.lifecycle import start_tournament

K = 6
BOTS = [f"b{i}" for i in range(K)]
HOUSE = ["b1", "b4"]  # the reference: two fixed bots across the range
TRUE = np.linspace(-300.0, 300.0, K)


def season(rng: np.random.Generator, matches: int) -> list[RatedMatch]:
    out = []
    for m in range(matches):
        seats = rng.permutation(K)[: int(rng.integers(2, 5))]
        util = ELO_SCALE * TRUE[seats] + rng.gumbel(size=len(seats))
        out.append(RatedMatch(f"m{m}", tuple(BOTS[i] for i in seats), tuple(util.tolist())))
    return out


def games(rng: np.random.Generator, name: str, strength: float, n: int) -> list[RatedMatch]:
    """``n`` matches of ``name`` against 1 to 3 established bots."""
    out = []
    for m in range(n):
        seats = rng.permutation(K)[: int(rng.integers(1, 4))]
        util = ELO_SCALE * np.r_[strength, TRUE[seats]] + rng.gumbel(size=len(seats) + 1)
        out.append(RatedMatch(f"{name}-{m}", (name, *(BOTS[i] for i in seats)), tuple(util.tolist())))
    return out


def moves(
    before: list[RatedMatch], after: list[RatedMatch], who: list[str], reference: list[str]
) -> np.ndarray:
    a = {r.bot: r.elo for r in fit(before, reference=reference).ratings}
    b = {r.bot: r.elo for r in fit(after, reference=reference).ratings}
    return np.array([b[bot] - a[bot] for bot in who])


def test_a_hopeless_bots_draws_and_a_strong_newcomers_matches_move_no_established_bot() -> None:
    rng = np.random.default_rng(38)
    base = season(rng, 600 * K // 3)
    lost = [RatedMatch(f"h{m}", ("hopeless", BOTS[m % K]), (-1e6, 0.0)) for m in range(30)]
    draws = [RatedMatch(f"d{d}", ("hopeless", BOTS[(2 * d + 1) % K]), (0.0, 0.0)) for d in range(5)]
    strong = games(rng, "new", 400.0, 40)
    for before, after in ((base + lost, base + lost + draws), (base, base + strong)):
        for step in range(1, len(after) - len(before) + 1):  # every draw, every match
            moved = moves(before, after[: len(before) + step], BOTS, HOUSE)
            assert np.abs(moved).max() <= 5.0, (step, moved)
        # The rule before (the pool's mean, each member's share growing with its record):
        # the hopeless bot's growing share drags everyone up, the newcomer's down.
        assert abs(moves(before, after, BOTS, []).mean()) > 10.0


def test_new_versions_of_another_bot_do_not_drag_the_scale() -> None:
    # Issue #38: four versions of one bot, each 50 Elo stronger, moved every other bot by
    # -56 Elo: the retired versions kept their share of the 1500 mean.
    # 240 new matches: with 3,000 each before, what they say about the others is small.
    rng = np.random.default_rng(39)
    base = season(rng, 3000 * K // 3)
    versions = [m for v in range(1, 5) for m in games(rng, f"b2v{v}", TRUE[2] + 50.0 * v, 60)]
    others = [b for b in BOTS if b != "b2"]
    moved = moves(base, base + versions, others, HOUSE)
    assert abs(moved.mean()) <= 2.0 and np.abs(moved).max() <= 5.0, moved
    assert moves(base, base + versions, others, []).mean() < -10.0  # the rule before
    table = fit(base + versions, reference=HOUSE)
    centre = np.mean([r.elo for r in table.ratings if r.bot in HOUSE])
    assert table.reference == HOUSE and centre == pytest.approx(1500.0, abs=1e-6)


def test_an_update_with_a_reference_follows_the_full_fit() -> None:
    rng = np.random.default_rng(40)
    base = season(rng, 300)
    model = RatingModel(reference=HOUSE)
    model.add(base)
    model.fit()
    later = games(rng, "b2v2", TRUE[2] + 50.0, 30)
    model.add(later)
    quick = {r.bot: r for r in model.update().ratings}
    full = {r.bot: r for r in fit(base + later, reference=HOUSE).ratings}
    assert quick.keys() == full.keys()
    for bot, r in full.items():
        assert quick[bot].elo == pytest.approx(r.elo, abs=1e-6)
        assert quick[bot].low == pytest.approx(r.low, rel=0.005)


def test_a_reference_outside_the_pool_falls_back_to_the_pool() -> None:
    base = season(np.random.default_rng(41), 200)
    plain = fit(base)
    ghost = fit(base, reference=["nobody"])
    assert ghost.reference == plain.reference == plain.pool == BOTS
    assert [r.elo for r in ghost.ratings] == pytest.approx([r.elo for r in plain.ratings], abs=1e-9)
    with pytest.raises(OptionError, match="one string"):
        fit(base, reference="b1")
    with pytest.raises(OptionError, match="not a bot id"):
        RatingModel(reference=[1])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("df", "expected"),
    # Student's t 97.5% quantiles (tables): exact below 3 degrees of freedom, the series above.
    [(1.0, 12.7062), (2.0, 4.3027), (3.0, 3.1824), (5.0, 2.5706), (19.0, 2.0930), (99.0, 1.9842)],
)
def test_t_quantile_matches_the_tables(df: float, expected: float) -> None:
    assert float(intervals.t_quantile(0.975, np.array([df]))[0]) == pytest.approx(expected, rel=1.5e-3)
    assert float(intervals.t_quantile(0.975, np.array([1e9]))[0]) == pytest.approx(1.959964, abs=1e-6)


def test_intervals_use_t_on_the_bots_own_deals() -> None:
    # Three bots, every deal in its three rotations: each bot sits in all 20 deals, so its
    # interval is Student's t with 19 degrees of freedom times its standard error, 6.8%
    # wider than the normal quantile's (which covered 93% at 20 deals per bot).
    rng = np.random.default_rng(42)
    true = np.array([0.0, 60.0, 120.0])
    results = []
    for d in range(20):
        for r in range(3):
            seats = [(s + r) % 3 for s in range(3)]
            util = ELO_SCALE * true[seats] + rng.gumbel(size=3)
            results.append(RatedMatch(f"{d}/{r}", tuple(f"b{i}" for i in seats), tuple(util.tolist()), d))
    model = RatingModel()
    model.add(results)
    table = model.fit()
    assert model._covariance is not None
    sd = model._covariance.sd()
    for row in table.ratings:
        assert row.low is not None and row.high is not None
        code = model.data.codes[row.bot]
        assert (row.high - row.low) / 2 == pytest.approx(2.093024 * sd[code], rel=1e-4)
    assert math.isclose(float(intervals.effective_clusters(np.array([60]), 20, 60)[0]), 20.0)


def test_the_board_anchors_on_the_house_bots(sqlite_url: str) -> None:
    # The house bots are the reference; a guest operator's bot (hosted alike) is not.
    house = hosted_bots(sqlite_url, ["random", "greedy", "heuristic"])
    with session_scope(sqlite_url) as session:
        guest_owner = get_or_create_operator(session, "guest")
        guest = host_bot(session, guest_owner, "mine", "heuristic", check=False).id
    options = {"table_sizes": [2, 3], "deals_per_table": 2, "hands_per_match": 4}
    tid = new_tournament(sqlite_url, [*house, guest], **options)
    with session_scope(sqlite_url) as session:
        start_tournament(session, tid)
        ids = session.scalars(select(Match.id).where(Match.tournament_id == tid)).all()
    for match_id in ids:
        assert play_match_job(match_id, sqlite_url) == "done"
    with session_scope(sqlite_url) as session:
        reference = leaderboard.reference_versions(session)
        houses = {str(v) for v in session.scalars(select(BotVersion.id).where(BotVersion.bot_id.in_(house)))}
        board = leaderboard.current_leaderboard(session)
        results = leaderboard.match_results(session)
    assert set(reference) == houses and len(houses) == 3
    assert leaderboard.REFERENCE_OWNER == HOUSE_OWNER
    model = RatingModel(reference=reference)
    model.add(results)
    table = model.fit()
    assert set(table.reference) <= houses and table.reference
    for row in board.rows:  # the board is that fit
        r = next(r for r in table.ratings if r.bot == str(row.version_id))
        assert row.elo == pytest.approx(r.elo, abs=1e-6)
    # The zero: the house bots' mean, each weighted by its share (arena/ratings/pool.py); the
    # guest's rating is not in it.
    names, elo = model.data.names, {r.bot: r.elo for r in table.ratings}
    in_pool = np.array([n in table.pool for n in names])
    share = shares(model.data, in_pool, 20, np.array([n in houses for n in names]))
    members = [n for n in names if n in table.pool]
    assert share[members.index(str(guest_version(sqlite_url, guest)))] == 0.0
    assert float(share @ np.array([elo[n] for n in members])) == pytest.approx(1500.0, abs=1e-6)
    dispose_engines()


def guest_version(url: str, bot_id: int) -> int:
    with session_scope(url) as session:
        return int(session.scalars(select(BotVersion.id).where(BotVersion.bot_id == bot_id)).one())

"""A big store's first fit reads the done matches as columns (arena/ratings/columns.py):
the same matches, deals and ratings as from match_results, on a real PostgreSQL."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers.ladder import add_bots, new_ladder
from sqlalchemy import insert, select

from arena.ratings.columns import load_done
from arena.ratings.leaderboard import match_results
from arena.ratings.model import DuplicateMatchError, RatedMatch, RatedMatchError, RatingModel
from arena.store.db import dispose_engines, session_scope
from arena.store.models import BotVersion, Match, MatchSeat
from arena.store.statuses import MatchStatus

pytestmark = pytest.mark.postgres


def store(url: str) -> tuple[list[int], int]:
    """Six bots and a ladder of done matches: heads-up tables in both seat orders (one deal
    each, seeds past 2**63 among them), 3-seat tables, a pending match and a done one with
    a seat not scored."""
    bots = add_bots(url, 6)
    ladder = new_ladder(url)
    rng = random.Random(4)
    with session_scope(url) as session:
        version = {int(b): int(v) for b, v in session.execute(select(BotVersion.bot_id, BotVersion.id))}
        key = 0

        def match(seats: list[int], scores: list[int | None], seed: int, status: str = "done") -> None:
            nonlocal key
            key += 1
            row = {"tournament_id": ladder, "key": f"k{key}", "table_index": -key, "deal_index": 0,
                   "rotation": 0, "seed": seed, "hands": 1, "status": status}  # fmt: skip
            match_id = session.execute(insert(Match).values(**row)).inserted_primary_key[0]
            session.execute(insert(MatchSeat), [
                {"match_id": match_id, "seat": s, "bot_id": b, "bot_version_id": version[b], "score": score}
                for s, (b, score) in enumerate(zip(seats, scores, strict=True))
            ])  # fmt: skip

        for _ in range(60):
            a, b = rng.sample(bots, 2)
            seed = rng.getrandbits(64)  # half of them stored as negative int64
            win = rng.choice((3, -3, 0))
            match([a, b], [win, -win], seed)
            match([b, a], [rng.choice((3, -3)), 0], seed)
        for _ in range(20):
            trio = rng.sample(bots, 3)
            match(trio, [rng.randint(-5, 5) for _ in trio], rng.getrandbits(64))
        match(bots[:2], [None, None], 7, MatchStatus.PENDING)
        match(bots[:3], [2, None, -2], 8)
    return bots, ladder


def test_columns_give_the_matches_deals_and_fit_of_match_results(pg_url: str) -> None:
    store(pg_url)
    try:
        with session_scope(pg_url) as session:
            results = match_results(session)
            columns = RatingModel()
            assert load_done(session, columns)
        rows = RatingModel()
        rows.add(results)
        assert (columns.total, columns.data.deals) == (rows.total, rows.data.deals) == (141, 81)
        a, b = columns.fit(), rows.fit()
        assert [r.bot for r in a.ratings] == [r.bot for r in b.ratings]
        for x, y in zip(a.ratings, b.ratings, strict=True):
            assert (x.elo, x.low, x.high) == pytest.approx((y.elo, y.low, y.high), abs=1e-6)
        assert a.pairwise.keys() == b.pairwise.keys()
        # A later match of a deal loaded in bulk joins that deal; a loaded id is known.
        first = results[0]
        assert first.match_id in columns and 10**9 not in columns
        assert isinstance(first.deal, tuple)
        again = RatedMatch(10**9, first.bots[::-1], first.scores, first.deal)
        columns.add([again])
        assert columns.data.deals == 81
        columns.add([RatedMatch(10**9 + 1, first.bots, first.scores, (first.deal[0], 12345))])
        assert columns.data.deals == 82
        with pytest.raises(DuplicateMatchError, match=repr(first.match_id)):
            columns.add([RatedMatch(first.match_id, first.bots, first.scores)])
        assert columns.total == 143  # the refused match added nothing
    finally:
        dispose_engines()


def test_columns_are_checked_as_matches_are() -> None:
    model = RatingModel()
    deals = (np.zeros(2, dtype=np.int64), np.arange(2))
    with pytest.raises(RatedMatchError, match="same bot twice"):
        model.add_columns([1, 2], [2, 2], [5, 6, 7, 7], [1.0, 0.0, 1.0, 0.0], deals)
    with pytest.raises(DuplicateMatchError):
        model.add_columns([1, 1], [2, 2], [5, 6, 6, 7], [1.0, 0.0, 1.0, 0.0], deals)
    with pytest.raises(RatedMatchError, match="finite"):
        model.add_columns([1, 2], [2, 2], [5, 6, 6, 7], [1.0, float("nan"), 1.0, 0.0], deals)
    with pytest.raises(RatedMatchError, match="every seat"):
        model.add_columns([1, 2], [2, 3], [5, 6, 6, 7], [1.0, 0.0, 1.0, 0.0], deals)
    assert model.total == 0 and model.data.deals == 0  # nothing added by a refused call
    model.add_columns([1, 2], [2, 2], [5, 6, 6, 7], [1.0, 0.0, 1.0, 0.0], deals)
    assert model.total == 2 and 1 in model and model.data.names == ["5", "6", "7"]

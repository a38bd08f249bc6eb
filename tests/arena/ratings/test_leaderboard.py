"""The live leaderboard (arena.ratings.leaderboard.current_leaderboard) between full fits: matches that
finish are added to the process's model and rated by an update, which agrees with a full fit."""

from __future__ import annotations

import pytest
from helpers.arena import hosted_bots, new_tournament
from sqlalchemy import select

from arena.ratings import leaderboard
from arena.ratings.model import RatingModel
from arena.runtime.jobs import play_match_job
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Match
from arena.tournaments.lifecycle import start_tournament


def play(url: str, tid: int, count: int) -> None:
    with session_scope(url) as session:
        start_tournament(session, tid)
        ids = session.scalars(
            select(Match.id).where(Match.tournament_id == tid, Match.status == "pending").order_by(Match.id)
        ).all()
    for match_id in ids[:count]:
        assert play_match_job(match_id, url) == "done"


def test_matches_that_finish_are_rated_by_an_update(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = hosted_bots(sqlite_url, ["random", "greedy", "heuristic"])
    tid = new_tournament(sqlite_url, ids, table_sizes=[2, 3], deals_per_table=2, hands_per_match=3)
    play(sqlite_url, tid, 14)
    with session_scope(sqlite_url) as session:
        first = leaderboard.current_leaderboard(session)
    assert first.done_matches == 14
    updates: list[int] = []
    real_update = RatingModel.update

    def counting(self: RatingModel, *, pairwise: bool = True):  # type: ignore[no-untyped-def]
        updates.append(self.total)
        return real_update(self, pairwise=pairwise)

    monkeypatch.setattr(RatingModel, "update", counting)
    monkeypatch.setattr(leaderboard, "REFIT_SHARE", 1.0)  # no full refit: the update path
    play(sqlite_url, tid, 1)  # one match finishing, as the live board meets it
    with session_scope(sqlite_url) as session:
        live = leaderboard.current_leaderboard(session)
        full = {r.bot: r for r in leaderboard.fit(leaderboard.match_results(session)).ratings}
    assert updates == [15] and live.done_matches == 15
    for row in live.rows:
        r = full[str(row.version_id)]
        assert (row.basis, row.matches) == (r.basis, r.matches)
        assert row.elo == pytest.approx(r.elo, abs=1.0)
    dispose_engines()


def test_a_big_store_refits_in_the_background_and_takes_the_fit_back(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = hosted_bots(sqlite_url, ["random", "greedy", "heuristic"])
    tid = new_tournament(sqlite_url, ids, table_sizes=[2, 3], deals_per_table=2, hands_per_match=3)
    play(sqlite_url, tid, 14)
    monkeypatch.setattr(leaderboard, "BACKGROUND_MATCHES", 0)  # every store is big
    monkeypatch.setattr(leaderboard, "REFIT_SHARE", 0.0)  # every new match makes a refit due
    leaderboard.reset()
    try:
        with session_scope(sqlite_url) as session:
            leaderboard.current_leaderboard(session)
        play(sqlite_url, tid, 2)
        with session_scope(sqlite_url) as session:
            board = leaderboard.current_leaderboard(session)  # updated; the full fit started
            live = next(iter(leaderboard._models.values()))
            refit = live.refit
            assert refit is not None and board.done_matches == 16
            refit.thread.join(timeout=60)
            assert refit.done() and refit.error is None
            after = leaderboard.current_leaderboard(session)  # nothing new: the fit taken back
            assert live.refit is None
            full = {r.bot: r for r in leaderboard.fit(leaderboard.match_results(session)).ratings}
        for row in after.rows:
            r = full[str(row.version_id)]
            assert (row.elo, row.low, row.high) == pytest.approx((r.elo, r.low, r.high), abs=1e-6)
        # The update alone had the same ratings but not quite the full fit's intervals.
        gaps = [
            abs(row.low - low)
            for row in board.rows
            if row.low is not None and (low := full[str(row.version_id)].low) is not None
        ]
        assert gaps and max(gaps) > 1e-6
    finally:
        leaderboard.reset()
        dispose_engines()

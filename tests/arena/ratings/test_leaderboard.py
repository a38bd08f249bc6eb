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

"""The dashboard's queries (filters, paging, bot stats) and the ratings written from the
store, on SQLite and PostgreSQL."""

from __future__ import annotations

from helpers.arena import hosted_bots, new_tournament
from sqlalchemy import select

from arena.queries.matches import MatchFilter, get_match, match_list
from arena.queries.stats import bot_stats
from arena.queries.tournaments import list_tournaments
from arena.ratings import leaderboard
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Match
from arena.tournaments.lifecycle import extend_tournament, start_tournament
from dashboard.params import Paging


def play_all(url: str, tid: int) -> None:
    with session_scope(url) as session:
        start_tournament(session, tid)
        ids = session.scalars(
            select(Match.id).where(Match.tournament_id == tid, Match.status == "pending").order_by(Match.id)
        ).all()
    for match_id in ids:
        assert play_match_job(match_id, url) == "done"


def test_queries_stats_and_ratings(db_url: str) -> None:
    random_id, greedy_id, crash_id = hosted_bots(db_url, ["random", "greedy", "helpers.arena:CrashBot"])
    tid = new_tournament(db_url, [random_id, greedy_id, crash_id], hands_per_match=10,
                         config={"max_faults": 100})
    # The live match list (the dashboard's); its bad status and paging are 400s, tested in
    # test_dashboard_api (status=finished, per_page=0).
    with session_scope(db_url) as session:
        pending = match_list(session, db_url, MatchFilter(bot_id=greedy_id, tournament_id=tid), Paging(1, 2))
        assert pending["total"] == 4 and len(pending["matches"]) == 2  # greedy sits at 2 of 3 tables, x2
        assert all(s["score"] is None for m in pending["matches"] for s in m["seats"])
        assert leaderboard.current_leaderboard(session).rows == []
    play_all(db_url, tid)
    with session_scope(db_url) as session:
        everything = match_list(session, db_url, MatchFilter(tournament_id=tid), Paging(1, 100))["matches"]
        assert [m["status"] for m in everything] == ["done"] * 6
        assert [m["id"] for m in everything] == sorted((m["id"] for m in everything), reverse=True)
        page = match_list(session, db_url, MatchFilter(status="done"), Paging(2, 4))
        assert (page["total"], len(page["matches"])) == (6, 2)
        assert match_list(session, db_url, MatchFilter(status="failed"), Paging(1, 10))["total"] == 0
        crashed = match_list(session, db_url, MatchFilter(bot_id=crash_id), Paging(1, 100))["matches"]
        crash_ids = [m["id"] for m in crashed]
        assert len(crash_ids) == 4
        crash_matches = [get_match(session, i) for i in crash_ids]
        detail = crash_matches[0]
        assert detail.fault_records and all(f.bot_id == crash_id for f in detail.fault_records)
        assert detail.public_id and detail.seed is not None and detail.has_replay

        stats = {s.bot_id: s for s in bot_stats(session)}
        assert sum(s.chips for s in stats.values()) == 0
        assert {s.matches for s in stats.values()} == {4}
        assert stats[crash_id].faults == sum(
            f.faults for m in crash_matches for f in m.seats if f.bot_id == crash_id
        ) > 0
        only = bot_stats(session, bot_id=greedy_id, tournament_id=tid)
        assert len(only) == 1 and only[0] == stats[greedy_id]
        assert only[0].hands == 40 and only[0].chips_per_100 == 100 * only[0].chips / 40
        assert 0 < (only[0].win_rate or 0) < 1 and (only[0].latency_us_mean or 0) > 0

        board = leaderboard.current_leaderboard(session)
        assert board.done_matches == 6
        assert sorted(r.bot_id for r in board.rows) == sorted([random_id, greedy_id, crash_id])
        assert [r.rank for r in board.rows] == [1, 2, 3] and board.rows[-1].los_next is None
        assert leaderboard.current_leaderboard(session) is board  # cached: nothing new is done
        history = leaderboard.rating_history(session)
        assert {(h.tournament_id, h.bot_id) for h in history} == {
            (tid, b) for b in (random_id, greedy_id, crash_id)
        }
        # The same matches, so the same ratings (by bot: the history's order is not the rank's).
        assert {h.bot_id: h.elo for h in history} == {r.bot_id: r.elo for r in board.rows}
        extend_tournament(session, tid, 1)
    play_all(db_url, tid)
    with session_scope(db_url) as session:
        again = leaderboard.current_leaderboard(session)
        assert again is not board and again.done_matches == 12
        rows = leaderboard.rating_history(session, bot_id=greedy_id)
        assert len(rows) == 1 and rows[0].matches == 8  # the snapshot was rewritten, not added
        tournaments = list_tournaments(session)
        assert tournaments.total == 1 and tournaments.items[0].progress.done == 12
        assert list_tournaments(session, status="running").total == 0


def test_statuses_are_the_stored_strings() -> None:
    # The database and the API hold these strings: an enum value may never change.
    from arena.store.statuses import BOT_STATUSES, MATCH_STATUSES, TOURNAMENT_STATUSES, MatchStatus

    assert MATCH_STATUSES == ("pending", "running", "done", "failed")
    assert TOURNAMENT_STATUSES == ("created", "running", "paused", "finished")
    assert BOT_STATUSES == ("active", "retired")
    assert MatchStatus.DONE == "done" and f"{MatchStatus.DONE}" == "done"

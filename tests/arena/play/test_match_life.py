"""The match job counts every match exactly once: run twice, raced, or replayed after its
worker died; and arena problems fail the match (for a resume to retry), never the count."""

from __future__ import annotations

import datetime as dt
import sys
import threading

from helpers.arena import counted_once, hosted_bots, new_tournament
from sqlalchemy import func, select, update

from arena.play.heartbeat import MATCH_LEASE_S
from arena.play.lifecycle import MatchLife, worker_id
from arena.play.plan import load_plan, run_match
from arena.processes import run_process
from arena.queries.tournaments import tournament_progress
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import BotVersion, FaultRecord, Match, MatchSeat, Replay, utcnow
from arena.tournaments.lifecycle import start_tournament


def started(url: str, **options: object) -> tuple[int, list[int]]:
    ids = hosted_bots(url, ["greedy", "random", "helpers.arena:CrashBot"])
    tid = new_tournament(url, ids, table_sizes=[3], hands_per_match=8, config={"max_faults": 100}, **options)
    with session_scope(url) as session:
        start_tournament(session, tid)
        match_ids = list(
            session.scalars(select(Match.id).where(Match.tournament_id == tid).order_by(Match.id))
        )
    return tid, match_ids


def totals(url: str) -> tuple[int, int, int, int]:
    with session_scope(url) as session:
        return (
            session.execute(select(func.count()).select_from(Replay)).scalar_one(),
            session.execute(select(func.count()).select_from(FaultRecord)).scalar_one(),
            session.execute(select(func.count()).where(MatchSeat.score.is_not(None))).scalar_one(),
            session.execute(select(func.coalesce(func.sum(Match.attempts), 0))).scalar_one(),
        )


def test_running_a_job_twice_counts_once(db_url: str) -> None:
    tid, match_ids = started(db_url)
    assert play_match_job(match_ids[0], db_url) == "done"
    once = totals(db_url)
    assert play_match_job(match_ids[0], db_url) == "already-done"
    assert totals(db_url) == once
    assert once[:3] == (1, once[1], 3) and once[1] > 0  # CrashBot faults were recorded
    counted_once(db_url, tid)


def test_racing_writers_count_once(db_url: str) -> None:
    """Two workers that both played the match (say one was presumed dead) race to record it:
    exactly one write lands, whole; the other changes nothing."""
    tid, match_ids = started(db_url)
    with session_scope(db_url) as session:
        plan = load_plan(session, match_ids[0])
    results = [run_match(plan) for _ in range(2)]
    outcomes: list[bool] = []
    barrier = threading.Barrier(2)

    def record(i: int) -> None:
        barrier.wait()
        outcomes.append(MatchLife(db_url, plan.match_id, f"racer{i}").record(plan, results[i], 10))

    threads = [threading.Thread(target=record, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [False, True]
    assert totals(db_url)[:3] == (1, len(results[0].faults), 3)
    counted_once(db_url, tid)
    # And jobs racing from the start: one claims and plays, the others see it busy or done.
    answers: list[str] = []
    barrier = threading.Barrier(3)

    def job() -> None:
        barrier.wait()
        answers.append(play_match_job(match_ids[1], db_url))

    threads = [threading.Thread(target=job) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers.count("done") == 1 and set(answers) <= {"done", "busy", "already-done"}
    counted_once(db_url, tid)


def test_abandoned_matches_are_played_again(db_url: str) -> None:
    tid, match_ids = started(db_url, deals_per_table=2)
    dead = run_process([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    now = utcnow()
    me = worker_id()
    host = me.rsplit(":", 1)[0]
    cases = {
        match_ids[0]: (f"{host}:{dead.stdout.strip()}", now),  # its process is gone
        match_ids[1]: ("elsewhere:1", now - dt.timedelta(seconds=MATCH_LEASE_S + 5)),  # silent
        match_ids[2]: ("elsewhere:1", now),  # another host, beating: alive
        match_ids[3]: (me, now),  # this very process: alive
    }
    with session_scope(db_url) as session:
        for match_id, (worker, beat) in cases.items():
            session.execute(
                update(Match).where(Match.id == match_id)
                .values(status="running", worker=worker, heartbeat_at=beat, attempts=1)
            )
    with session_scope(db_url) as session:
        seeds = dict(session.execute(select(Match.id, Match.seed).where(Match.id.in_(match_ids))).all())
    # A job does not take a match from a live worker, but does take a silent one.
    assert play_match_job(match_ids[2], db_url) == "busy"
    assert play_match_job(match_ids[1], db_url) == "done"
    with session_scope(db_url) as session:
        assert MatchLife.recover(session, tid) == [match_ids[0]]
    assert play_match_job(match_ids[0], db_url) == "done"
    with session_scope(db_url) as session:
        attempts = dict(
            session.execute(select(Match.id, Match.attempts).where(Match.id.in_(match_ids[:2]))).all()
        )
        assert attempts == {match_ids[0]: 2, match_ids[1]: 2}
        # Both were dealt cards before their worker went: played again, they are dealt afresh
        # (arena/play/cuts.py); the live ones keep theirs.
        now_seeds = dict(session.execute(select(Match.id, Match.seed).where(Match.id.in_(match_ids))).all())
        assert [now_seeds[m] != seeds[m] for m in match_ids[:4]] == [True, True, False, False]
        assert tournament_progress(session, tid).running == 2
    counted_once(db_url, tid)


def test_an_arena_problem_fails_the_match_and_resume_retries_it(db_url: str) -> None:
    tid, match_ids = started(db_url)
    with session_scope(db_url) as session:
        version_id = session.scalars(
            select(MatchSeat.bot_version_id).where(MatchSeat.match_id == match_ids[0], MatchSeat.seat == 0)
        ).one()
        version = session.get(BotVersion, version_id)
        assert version is not None
        good = version.hosted
        version.hosted = "bots.nowhere:Missing"
    try:
        play_match_job(match_ids[0], db_url)
    except ValueError as exc:
        assert "cannot import 'bots.nowhere'" in str(exc)
    else:
        raise AssertionError("a seat that cannot be built must fail the job")
    with session_scope(db_url) as session:
        match = session.get(Match, match_ids[0])
        assert match is not None and match.status == "failed" and "bots.nowhere" in (match.error or "")
        assert MatchLife.recover(session, tid) == []  # a sweep leaves failures alone
        session.execute(update(BotVersion).where(BotVersion.id == version_id).values(hosted=good))
        assert MatchLife.recover(session, tid, retry_failed=True) == [match_ids[0]]
    assert play_match_job(match_ids[0], db_url) == "done"
    counted_once(db_url, tid)

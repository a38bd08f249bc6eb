"""Tournaments through RQ on the real local Redis (real gRPC bots, real stores) and through
the embedded pool give the same results; a worker SIGKILLed mid-match loses nothing and
counts nothing twice; the CLI runs, pauses on Ctrl-C and resumes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.arena import (
    GATE_ENV,
    OFF_THE_CLOCK,
    TEST_DEAL_SECRET,
    charged_fault_reasons,
    counted_once,
    grpc_bots,
    hosted_bots,
    new_tournament,
    scores_by_key,
    wait_for,
)
from helpers.paths import TESTS
from redis import Redis
from rq import Queue, SimpleWorker
from sqlalchemy import select

from arena.play import capacity
from arena.play.plan import load_plan, run_match
from arena.processes import spawn
from arena.queries.tournaments import get_tournament, tournament_progress
from arena.runtime.backends import EmbeddedBackend
from arena.runtime.driver import run_tournament
from arena.runtime.rq_backend import RqBackend
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Match, RatingSnapshot
from arena.tournaments.layout import keyed_seed
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.cli import main as tonk
from sdk.server import RunningServer, start_server

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def queue_prefix(redis_url: str, redis_prefix: str) -> Iterator[str]:
    """The prefix for queue names. RQ also lists queues and workers in two global sets; the
    conftest removes our keys, this removes our members of those sets."""
    yield redis_prefix
    client = Redis.from_url(redis_url)
    for key in ("rq:queues", "rq:workers"):
        members = [m for m in client.smembers(key) if redis_prefix.encode() in m]
        if members:
            client.srem(key, *members)
    client.close()


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    running: list[RunningServer] = [start_server(RandomBot), start_server(GreedyBot)]
    try:
        yield {"grpc-random": running[0].address, "grpc-greedy": running[1].address}
    finally:
        for server in running:
            server.stop(0)


def burst(redis_url: str, queue: str) -> None:
    """An in-process RQ worker that plays the queue dry."""
    connection = Redis.from_url(redis_url)
    SimpleWorker([Queue(queue, connection=connection)], connection=connection, name=f"{queue}-w").work(
        burst=True, logging_level="WARNING"
    )


def worker_env(url: str, redis_url: str, queue: str) -> dict[str, str]:
    return {
        **os.environ,
        "TONK_DATABASE_URL": url,
        "TONK_REDIS_URL": redis_url,
        "TONK_QUEUE": queue,
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]),
    }


def test_rq_with_grpc_bots_equals_embedded(
    pg_url: str, sqlite_url: str, redis_url: str, queue_prefix: str, servers: dict[str, str]
) -> None:
    seed = 2**63 + 2024
    results = {}
    for url in (pg_url, sqlite_url):
        ids = grpc_bots(url, servers) + hosted_bots(url, ["greedy"])
        tid = new_tournament(
            url, ids, table_sizes=[2, 3], deals_per_table=1, hands_per_match=6, seed=seed,
            config=OFF_THE_CLOCK,
        )  # fmt: skip
        if url == pg_url:
            queue = f"{queue_prefix}-matches"
            backend = RqBackend(url, redis_url, queue)
            run_tournament(url, tid, backend, wait=False)
            assert backend.submit([1, 2]) == 0  # already queued: the job ids dedupe
            burst(redis_url, queue)
            assert run_tournament(url, tid, backend).done == 12  # nothing left but finishing
            backend.close()
        else:
            pool = EmbeddedBackend(url, 2)
            seen: list[int] = []
            progress = run_tournament(url, tid, pool, on_progress=lambda p, seen=seen: seen.append(p.done))
            pool.close()
            assert progress.done == 12 and seen == sorted(seen)
        with session_scope(url) as session:
            view = get_tournament(session, tid)
            dealt = keyed_seed(TEST_DEAL_SECRET, seed)  # the seed given, keyed with the deal secret
            assert view.status == "finished" and view.seed == dealt
            assert session.scalars(select(RatingSnapshot).where(RatingSnapshot.tournament_id == tid)).all()
        counted_once(url, tid)
        assert charged_fault_reasons(url, tid) == []  # honest bots: the scores are the cards' alone
        results[url] = scores_by_key(url, tid)
    assert results[pg_url] == results[sqlite_url]
    assert len(results[pg_url]) == 12
    dispose_engines()


def test_rq_submit_queues_each_pending_match_that_has_no_job_waiting(
    redis_url: str, queue_prefix: str
) -> None:
    """The driver hands every pending match to ``submit`` at each sweep; what gets queued
    is decided by the job's state alone (no worker runs here: the states are set by hand),
    and how long one has been started unclaimed by the backend's clock (this test's: it
    moves only when told, so no stall of the test counts)."""
    from rq.job import Job, JobStatus

    from arena.runtime.rq_backend import UNCLAIMED_S

    now = [1000.0]
    backend = RqBackend(
        "sqlite:///unused.sqlite", redis_url, f"{queue_prefix}-submit", clock=lambda: now[0]
    )
    connection = backend.connection

    def dequeue(match_id: int) -> str:
        job_id = backend.job_id(match_id)
        connection.lrem(backend.queue.key, 0, job_id)  # as a worker's dequeue does
        return job_id

    def set_status(match_id: int, status: JobStatus) -> None:
        Job.fetch(dequeue(match_id), connection=connection).set_status(status)

    try:
        assert backend.submit([1, 2, 3, 4, 5]) == 5
        assert backend.submit([1, 2, 3, 4, 5]) == 0  # all waiting: the job ids dedupe
        set_status(1, JobStatus.FAILED)  # raised before its claim (the database was away)
        set_status(2, JobStatus.FINISHED)  # ended without playing (busy), now pending again
        connection.delete(Job.key_for(dequeue(3)))  # gone, as with a Redis restart
        set_status(4, JobStatus.STARTED)  # its worker died between dequeue and claim...
        set_status(5, JobStatus.STARTED)
        assert backend.submit([1, 2, 3, 4, 5]) == 3
        now[0] += UNCLAIMED_S - 0.001
        assert backend.submit([1, 2, 3, 4, 5]) == 0  # ...which is only believed after a while,
        assert backend.submit([1, 2, 3, 4, 5], replace=[5]) == 1  # or when the store knows it
        now[0] += 0.001
        assert backend.submit([1, 2, 3, 4, 5]) == 1  # 4: unclaimed for too long
        statuses = [Job.fetch(backend.job_id(m), connection=connection).get_status() for m in range(1, 6)]
        assert statuses == [JobStatus.QUEUED] * 5
        assert sorted(backend.queue.get_job_ids()) == sorted(backend.job_id(m) for m in range(1, 6))
    finally:
        backend.close()


def test_sigkill_mid_match_loses_nothing(sqlite_url: str, redis_url: str, queue_prefix: str) -> None:
    url = sqlite_url
    queue = f"{queue_prefix}-kill"
    ids = hosted_bots(url, ["helpers.arena:SlowGreedy", "greedy"])
    tid = new_tournament(url, ids, deals_per_table=2, hands_per_match=30, seed=77)
    backend = RqBackend(url, redis_url, queue)
    run_tournament(url, tid, backend, wait=False)
    worker = spawn(
        [sys.executable, "-m", "sdk.cli", "worker"],
        env=worker_env(url, redis_url, queue),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        def caught_mid_match() -> bool:
            with session_scope(url) as session:
                rows = session.execute(
                    select(Match.status, Match.started_at).where(Match.tournament_id == tid)
                ).all()
            # `tonk worker` plays the tournament's matches at once, each in a thread (and a
            # job taken but not claimed yet would only be replaced after UNCLAIMED_S)
            return "pending" not in {s for s, _ in rows} and sum(s == "running" for s, _ in rows) >= 2

        wait_for(caught_mid_match, timeout=60, step=0.02)
        time.sleep(0.15)  # a few hands into it (a match takes about a second)
        os.killpg(worker.pid, signal.SIGKILL)
    finally:
        worker.wait()
    assert worker.returncode == -signal.SIGKILL
    with session_scope(url) as session:
        before = {m.id: (m.status, m.finished_at, m.attempts) for m in
                  session.scalars(select(Match).where(Match.tournament_id == tid))}
    killed = [i for i, (status, _, _) in before.items() if status == "running"]
    assert len(killed) >= 2
    counted_once(url, tid)  # the killed matches left no trace but their claims
    with session_scope(url) as session:  # and their bots' capacity slots, until recovered
        assert capacity.in_flight(session, ids) == {bot: len(killed) for bot in ids}
    # Restart: the resume sees the worker gone, queues the match again, and a new worker
    # finishes the tournament where it stopped.
    run_tournament(url, tid, backend, wait=False)
    burst(redis_url, queue)
    progress = run_tournament(url, tid, backend)
    backend.close()
    assert (progress.done, progress.total) == (4, 4)
    counted_once(url, tid)
    with session_scope(url) as session:
        after = {m.id: (m.status, m.finished_at, m.attempts) for m in
                 session.scalars(select(Match).where(Match.tournament_id == tid))}
        for match_id, (status, finished, attempts) in before.items():
            if status == "done":
                assert after[match_id] == (status, finished, attempts)  # not played again
        assert all(after[m][2] == 2 for m in killed)
        plan = load_plan(session, killed[0])
        assert capacity.in_flight(session) == {}  # recovery freed the dead worker's slots
    # Same seed, same deals, same (deterministic) bots: the replayed match is the one it was.
    assert [s for s in scores_by_key(url, tid)[_key(url, killed[0])]] == run_match(plan).scores


def _key(url: str, match_id: int) -> str:
    with session_scope(url) as session:
        match = session.get(Match, match_id)
        assert match is not None
        return match.key


def test_cli_runs_pauses_on_ctrl_c_and_resumes(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hosted_bots(sqlite_url, ["random", "greedy", "helpers.arena:GatedGreedy"])
    monkeypatch.setenv("TONK_DATABASE_URL", sqlite_url)
    monkeypatch.delenv("TONK_REDIS_URL", raising=False)
    monkeypatch.setenv("TONK_EMBEDDED_WORKERS", "2")
    assert tonk(["tournament", "create", "--name", "cli", "--bots", "random,greedy,gatedgreedy",
                 "--tables", "2", "--deals", "2", "--hands", "12", "--seed", "9"]) == 0
    assert "tournament 1 created: 12 matches" in capsys.readouterr().out
    assert tonk(["tournament", "create", "--name", "bad", "--bots", "random,nobody",
                 "--tables", "2", "--deals", "1", "--hands", "1"]) == 2
    assert "no bot named 'nobody'" in capsys.readouterr().err
    # Two tokens for gatedgreedy's 8 matches: the run can finish its 4 random-greedy matches
    # and 2 of gatedgreedy's, never more, however long the test takes to send its interrupt.
    gate = tmp_path / "gate"
    gate.mkdir()
    for token in range(2):
        (gate / str(token)).touch()
    run = spawn(
        [sys.executable, "-m", "sdk.cli", "tournament", "run", "1"],
        env={**worker_env(sqlite_url, "", "unused"), "TONK_EMBEDDED_WORKERS": "2", GATE_ENV: str(gate)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as at a terminal, even when the tests run as a background job (a shell starts
        # those with SIGINT ignored, which a child inherits and Python then leaves ignored).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )

    def some_done() -> bool:
        if run.poll() is not None:  # it ended before its interrupt: say how
            _out, err = run.communicate()
            ended = f"`tonk tournament run` ended with {run.returncode} before Ctrl-C"
            raise AssertionError(f"{ended}:\n{err[-4000:]}")
        with session_scope(sqlite_url) as session:
            return tournament_progress(session, 1).done >= 2

    try:
        # Patience, not a speed limit: beside busy loops the whole test took 50 s here, and the
        # whole suite's parallel workers load the machine more.
        wait_for(some_done, timeout=180)
    except AssertionError as gave_up:
        if run.poll() is None:  # still running with fewer than 2 done: what did it say, and how far?
            run.kill()
            _out, err = run.communicate(timeout=30)
            with session_scope(sqlite_url) as session:
                progress = tournament_progress(session, 1)
            said = f"fewer than 2 matches done in 180 s ({progress}); its stderr:\n{err[-4000:]}"
            raise AssertionError(said) from gave_up
        raise
    run.send_signal(signal.SIGINT)
    _out, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    assert "paused" in err
    with session_scope(sqlite_url) as session:
        assert get_tournament(session, 1).status == "paused"
        assert 2 <= tournament_progress(session, 1).done <= 4 + 2
    shutil.rmtree(gate)  # open for the resume (which runs without the variable anyway)
    assert tonk(["tournament", "status", "1"]) == 0
    assert "paused" in capsys.readouterr().out
    assert tonk(["tournament", "resume", "1", "--quiet"]) == 0
    assert "tournament 1: finished; 12/12 done" in capsys.readouterr().out
    counted_once(sqlite_url, 1)
    assert tonk(["tournament", "extend", "1", "--deals", "1"]) == 0
    assert "6 matches added" in capsys.readouterr().out
    assert tonk(["tournament", "run", "1", "--quiet"]) == 0
    assert tonk(["tournament", "list"]) == 0
    assert "18/18" in capsys.readouterr().out
    assert tonk(["leaderboard"]) == 0
    board = capsys.readouterr().out
    assert "greedy" in board and "18 matches rated" in board
    assert tonk(["leaderboard", "--history"]) == 0
    assert tonk(["tournament", "pause", "7"]) == 2
    assert "no tournament 7" in capsys.readouterr().err
    assert tonk(["worker", "--burst"]) == 2  # no Redis configured
    dispose_engines()

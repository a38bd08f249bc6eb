"""Infrastructure faults during a tournament: an RQ worker SIGKILLed mid-match, the Redis
server killed and restarted (empty), PostgreSQL cutting every connection, and the process
running the embedded pool SIGKILLed (its pool processes then end by themselves: nothing
outlives it). After each, resuming finishes the tournament with no match lost or counted
twice, and the scores and ratings equal an undisturbed run of the same seed.

Only servers these tests start are disturbed: a private ``redis-server`` on a free loopback
port, and the connections to this test's own PostgreSQL database (``pg_terminate_backend``
filtered on its name). The machine's shared Redis and PostgreSQL are never restarted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.arena import InlineBackend, fix_deal_secret
from helpers.faultbots import ROOT, serve_fault, start_worker, stop_process, worker_env
from helpers.services import PrivateRedis

import arena.play.lifecycle
import arena.runtime.driver
from arena.processes import descendants, process_info, run_process, spawn
from arena.queries.tournaments import Progress
from arena.runtime.driver import run_tournament
from arena.runtime.jobs import play_match_job
from arena.runtime.rq_backend import RqBackend
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Bot, Match, MatchSeat, RatingSnapshot, Replay
from arena.tournaments.lifecycle import create_tournament
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.server import start_server

pytestmark = [pytest.mark.slow]

SEED = 8_675_309
SHAPE: dict[str, Any] = {
    "table_sizes": [2, 3],
    "deals_per_table": 2,
    "hands_per_match": 3,
    "seed": SEED,
    # Ample deadlines: these tests are about the arena's machinery, not about late bots. The
    # lifecycle one too: at its default 1 s, a StartMatch held up past it on a loaded machine
    # (a worker restarting against a cut database) was a TIMEOUT, a forfeit, other scores; at
    # 5 s it still was once, in a parallel run keeping both cores busy.
    "config": {
        "decision_deadline_ms": 30_000, "lifecycle_deadline_ms": 30_000, "time_bank_ms": 0, "max_faults": 3,
    },
}
MATCHES = (3 * 2 + 1 * 6) * 2  # three 2-seat tables and one 3-seat table (all 6 orders), 2 deals


# -- the bots and the undisturbed run ---------------------------------------------------------


@pytest.fixture(scope="module")
def bots() -> Iterator[dict[str, str]]:
    """Deterministic gRPC bots; one takes ~10 ms a decision so matches last long enough to
    be caught mid-way."""
    slow = serve_fault("sleep", delay_s=0.01, base="greedy")
    plain = [start_server(RandomBot), start_server(GreedyBot)]
    try:
        yield {"slow-greedy": slow.address, "random": plain[0].address, "greedy": plain[1].address}
    finally:
        slow.stop()
        for server in plain:
            server.stop(0)


def register(url: str, addresses: dict[str, str]) -> list[int]:
    from helpers.faultbots import register_bots

    return list(register_bots(url, addresses, owner_name="infra").values())


def new_tournament(url: str, addresses: dict[str, str]) -> int:
    ids = register(url, addresses)
    with session_scope(url) as session:
        fix_deal_secret(session)  # every store deals the reference's cards
        return create_tournament(session, name="infra", bot_ids=ids, **SHAPE).id


@dataclass
class Outcome:
    scores: dict[str, list[int | None]]
    ratings: dict[str, tuple[float, float, float, int]]
    attempts: int = 0
    seeds: dict[str, int] = field(default_factory=dict)


def outcome_of(url: str, tid: int) -> Outcome:
    """Scores by match key and the rating snapshot by bot name; checks each match counted
    once on the way."""
    from sqlalchemy import func, select

    with session_scope(url) as session:
        matches = session.execute(
            select(Match.id, Match.key, Match.status, Match.attempts, Match.seed)
            .where(Match.tournament_id == tid)
        ).all()
        replays = dict(session.execute(select(Replay.match_id, func.count()).group_by(Replay.match_id)).all())
        seats = session.execute(
            select(Match.key, MatchSeat.seat, MatchSeat.score)
            .join(MatchSeat, MatchSeat.match_id == Match.id)
            .where(Match.tournament_id == tid)
            .order_by(Match.key, MatchSeat.seat)
        ).all()
        ratings = session.execute(
            select(
                Bot.name, RatingSnapshot.elo, RatingSnapshot.low, RatingSnapshot.high, RatingSnapshot.matches
            )
            .join(Bot, Bot.id == RatingSnapshot.bot_id)
            .where(RatingSnapshot.tournament_id == tid)
        ).all()
    assert len(matches) == MATCHES
    assert {status for _, _, status, _, _ in matches} == {"done"}, "a match was lost"
    assert all(replays.get(m) == 1 for m, *_ in matches), "a match was recorded twice (or not at all)"
    scores: dict[str, list[int | None]] = {}
    for key, _seat, score in seats:
        scores.setdefault(key, []).append(score)
    assert all(sum(s or 0 for s in v) == 0 for v in scores.values())
    return Outcome(
        scores,
        {name: (elo, low, high, n) for name, elo, low, high, n in ratings},
        sum(a for _, _, _, a, _ in matches),
        {key: seed for _, key, _, _, seed in matches},
    )


@pytest.fixture(scope="module")
def reference(bots: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    url = f"sqlite:///{tmp_path_factory.mktemp('reference') / 'arena.sqlite'}"
    tid = new_tournament(url, bots)
    progress = run_tournament(url, tid, InlineBackend(url))
    assert progress.done == MATCHES
    result = outcome_of(url, tid)
    dispose_engines()
    assert result.attempts == MATCHES and len(result.ratings) == 3
    return result


def assert_same(got: Outcome, want: Outcome) -> None:
    # A match played again after its cards were dealt is dealt afresh (#37, docs/robustness.md,
    # "Replays that favour no one"): its scores, and so the ratings, are its new deal's. Every
    # match dealt as in the undisturbed run scores as there.
    afresh = {key for key, seed in got.seeds.items() if seed != want.seeds[key]}
    assert {k: v for k, v in got.scores.items() if k not in afresh} == {
        k: v for k, v in want.scores.items() if k not in afresh
    }
    assert got.scores.keys() == want.scores.keys()
    assert got.ratings.keys() == want.ratings.keys()
    if afresh:
        return
    for name, values in got.ratings.items():
        assert values == pytest.approx(want.ratings[name], abs=1e-6), name


# -- a private Redis server ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# -- driving a tournament through disruptions --------------------------------------------------


@dataclass
class Workers:
    url: str
    redis_url: str
    queue: str
    live: list[subprocess.Popen[bytes]] = field(default_factory=list)
    log: Path | None = None
    deaths: int = 0
    started: int = 0

    def ensure(self, n: int = 2) -> None:
        """Replace dead workers, as a supervisor (systemd, compose) would."""
        for worker in [w for w in self.live if w.poll() is not None]:
            self.live.remove(worker)
            stop_process(worker)
            self.deaths += 1
        while len(self.live) < n:
            self.started += 1
            name = f"{self.queue}-w{self.started}"
            self.live.append(start_worker(self.url, self.redis_url, self.queue, name, self.log))

    def stop(self) -> None:
        for worker in self.live:
            stop_process(worker)
        self.live.clear()


def matches_by_status(url: str, tid: int) -> dict[str, list[tuple[int, str | None]]]:
    from sqlalchemy import select

    out: dict[str, list[tuple[int, str | None]]] = {}
    with session_scope(url) as session:
        for match_id, status, worker in session.execute(
            select(Match.id, Match.status, Match.worker).where(Match.tournament_id == tid)
        ):
            out.setdefault(status, []).append((match_id, worker))
    return out


def drive(
    url: str,
    tid: int,
    make_backend: Callable[[], Any],
    on_progress: Callable[[Progress], None],
    stalled_after: float,
    diagnose: Callable[[], str] = lambda: "",
) -> int:
    """Run the tournament to the end like an operator would: whenever the driver itself
    fails (its database connection cut, Redis gone), resume it. Returns the resumes. Fails
    the test (with ``diagnose()``) once no match has been done for ``stalled_after`` seconds,
    even mid-drive: a stalled tournament is a failure with a story, not a pytest-timeout stack
    dump. Not a bound on the whole run: on a busy machine every match takes longer, and a
    tournament that keeps finishing matches is not stalled however long it takes."""
    resumes = 0
    done = -1
    deadline = time.monotonic() + stalled_after

    def stalled() -> bool:
        return time.monotonic() > deadline

    def watched(progress: Progress) -> None:
        nonlocal done, deadline
        if progress.done > done:
            done, deadline = progress.done, time.monotonic() + stalled_after
        if stalled():  # pytest.fail is a BaseException: run_tournament ends
            pytest.fail(f"no match done in {stalled_after} s: {progress}; "
                        f"{matches_by_status(url, tid)}; {diagnose()}")  # fmt: skip
        try:
            on_progress(progress)
        except Exception as exc:  # the test's own step failed: not a driver failure to resume
            pytest.fail(f"on_progress failed: {exc!r}; {diagnose()}")

    while True:
        backend = make_backend()
        try:
            progress = run_tournament(url, tid, backend, on_progress=watched, poll_s=0.1)
            if progress.done == progress.total:
                return resumes
        except Exception:
            time.sleep(0.3)
        finally:
            with contextlib.suppress(Exception):
                backend.close()
        resumes += 1
        if stalled():
            pytest.fail(f"no match done in {stalled_after} s; {diagnose()}")


def worker_log_tail(log: Path, lines: int = 40) -> str:
    if not log.exists():
        return "(no worker log)"
    return "worker log:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def refuse_claims(url: str, times: int) -> None:
    """PostgreSQL itself refuses the next ``times`` claims of a match (pending -> running),
    as an outage between a worker's dequeue and its claim would: a trigger raises, counting
    on a sequence, which a rollback does not undo. Only this test's own database."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as db:
        db.execute("CREATE SEQUENCE refused_claims")
        db.execute(
            f"""CREATE FUNCTION refuse_claim() RETURNS trigger AS $$
            BEGIN
              IF OLD.status = 'pending' AND NEW.status = 'running'
                 AND nextval('refused_claims') <= {int(times)} THEN
                RAISE EXCEPTION 'claim of match % refused (test outage)', NEW.id;
              END IF;
              RETURN NEW;
            END $$ LANGUAGE plpgsql"""
        )
        db.execute(
            "CREATE TRIGGER refuse_claim BEFORE UPDATE ON matches"
            " FOR EACH ROW EXECUTE FUNCTION refuse_claim()"
        )


def terminate_db_connections(url: str) -> int:
    """Cut every connection to this test's own database (a PostgreSQL outage as its clients
    see it); returns how many were cut. Other databases on the server are not touched."""
    import psycopg
    from helpers.services import PG_ADMIN_URL

    name = url.rsplit("/", 1)[1]
    assert name.startswith("tonk_test_"), name  # only ever a database a test created
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(rows)


# -- the tests ----------------------------------------------------------------------------


@pytest.mark.redis
@pytest.mark.postgres
def test_rq_tournament_survives_worker_kill_redis_restart_and_pg_outage(
    bots: dict[str, str],
    reference: Outcome,
    pg_url: str,
    redis_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The driver's periods, shortened so the test takes seconds, not minutes: how often it
    # sweeps (abandoned matches, pending ones with no job waiting, as after the restarted
    # Redis), and how long a silent match keeps its lease.
    monkeypatch.setattr(arena.runtime.driver, "RECOVER_S", 1.0)
    monkeypatch.setattr(arena.play.lifecycle, "MATCH_LEASE_S", 8.0)
    url = pg_url
    redis = PrivateRedis()
    redis.start()
    workers = Workers(url, redis.url, f"{redis_prefix}-infra", log=tmp_path / "workers.log")
    events: list[str] = []
    try:
        tid = new_tournament(url, bots)
        workers.ensure(2)

        started = time.monotonic()

        def clock() -> str:
            return f"{time.monotonic() - started:.1f}s"

        def disrupt(progress: Progress) -> None:
            workers.ensure(2)
            if not events and progress.done >= 2:
                # 1. SIGKILL the worker playing a match, mid-match.
                running = matches_by_status(url, tid).get("running", [])
                pids = {w.pid: w for w in workers.live}
                for _match, worker_id in running:
                    pid = int((worker_id or ":0").rsplit(":", 1)[1])
                    if pid in pids:
                        stop_process(pids[pid], signal.SIGKILL)
                        # Mid-match only if a match of its is still running now: it may have
                        # finished between the look and the kill (then try again later).
                        after = matches_by_status(url, tid).get("running", [])
                        if any(who == worker_id for _m, who in after):
                            events.append(f"{clock()} worker {pid} killed mid-match")
                        break
            elif len(events) == 1 and progress.done >= 6 and progress.unfinished:
                # 2. The Redis server dies and comes back empty: the queue is gone.
                redis.restart()
                events.append(f"{clock()} redis restarted")
                # 3. Then, in the same look, PostgreSQL cuts every connection to the database,
                # twice: while matches are known to be left, so the outage is mid-tournament.
                for _ in range(2):
                    terminate_db_connections(url)
                    time.sleep(0.2)
                events.append(f"{clock()} postgres connections terminated")

        resumes = drive(
            url,
            tid,
            lambda: RqBackend(url, redis.url, workers.queue),
            disrupt,
            stalled_after=60,
            diagnose=lambda: f"events {events}; {worker_log_tail(tmp_path / 'workers.log')}",
        )
        got = outcome_of(url, tid)
    finally:
        workers.stop()
        redis.kill()
        dispose_engines()
    assert len(events) == 3, events
    assert_same(got, reference)
    assert got.attempts > MATCHES  # the killed match (at least) was played again
    print(f"infra/rq: {events}; finished at {clock()}; resumes {resumes}; ", end="")
    print(f"worker deaths {workers.deaths}; attempts {got.attempts} for {MATCHES} matches")


@pytest.mark.redis
@pytest.mark.postgres
def test_rq_job_that_fails_before_its_claim_is_queued_again(
    bots: dict[str, str],
    reference: Outcome,
    pg_url: str,
    redis_url: str,
    redis_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A job that raises before it claims its match leaves the match pending and the job
    # failed: the driver must see that at its next sweep (a Redis restart looks the same:
    # pending matches with no job waiting) and queue the match again.
    monkeypatch.setattr(arena.runtime.driver, "RECOVER_S", 0.5)
    url = pg_url
    tid = new_tournament(url, bots)
    refuse_claims(url, times=3)
    log = tmp_path / "workers.log"
    workers = Workers(url, redis_url, f"{redis_prefix}-claims", log=log)
    try:
        workers.ensure(1)
        drive(
            url,
            tid,
            lambda: RqBackend(url, redis_url, workers.queue),
            lambda _progress: workers.ensure(1),
            stalled_after=60,
            diagnose=lambda: worker_log_tail(log),
        )
        got = outcome_of(url, tid)
    finally:
        workers.stop()
        dispose_engines()
    assert_same(got, reference)
    assert got.attempts == MATCHES  # a refused claim is not an attempt
    assert "test outage" in log.read_text(), "no claim was refused: the test tested nothing"


def test_embedded_runner_killed_mid_tournament_resumes(
    bots: dict[str, str], reference: Outcome, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    tid = new_tournament(url, bots)
    dispose_engines()
    env = {**worker_env(url, "", "unused"), "TONK_REDIS_URL": "", "TONK_EMBEDDED_WORKERS": "2"}
    command = [sys.executable, "-m", "sdk.cli", "tournament"]
    runner = spawn(
        [*command, "run", str(tid), "--quiet"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    pool: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while True:
            by_status = matches_by_status(url, tid)
            pool = {p.pid for p in descendants(runner.pid) if p.running}
            # The fork server and two pool processes, playing.
            if len(by_status.get("done", [])) >= 3 and by_status.get("running") and len(pool) >= 3:
                break
            assert runner.poll() is None, "the runner ended before it could be killed"
            assert time.monotonic() < deadline, f"no match was ever running in a pool: {pool}"
            time.sleep(0.02)
        # kill -9 of the command alone: its pool must end by itself (arena/processes.py,
        # exit_with), not because a group was signalled.
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(10)
        gone_by = time.monotonic() + 15
        while time.monotonic() < gone_by and any(_alive(pid) for pid in pool):
            time.sleep(0.1)
        left = {pid: info.command() for pid in pool if (info := process_info(pid)) and info.running}
        assert left == {}, "pool processes outlived a kill -9 of their command"
    finally:
        # Whatever happened, nothing this test started may stay: one process group.
        stop_process(runner, signal.SIGKILL)
        for pid in pool:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert runner.returncode == -signal.SIGKILL
    # Read after the kill: a match seen running a moment before may have finished since.
    caught = matches_by_status(url, tid).get("running", [])
    resumed = run_process(
        [*command, "resume", str(tid), "--quiet"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    got = outcome_of(url, tid)
    dispose_engines()
    assert_same(got, reference)
    assert got.attempts >= MATCHES + len(caught)
    print(f"infra/embedded: killed with {len(caught)} match(es) running; attempts {got.attempts}")


def test_an_error_while_recording_fails_the_match_at_once(
    bots: dict[str, str], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import select
    from sqlalchemy.exc import OperationalError

    from arena.tournaments.lifecycle import start_tournament

    tid = new_tournament(sqlite_url, bots)
    with session_scope(sqlite_url) as session:
        start_tournament(session, tid)
        match_id = session.scalars(select(Match.id).where(Match.tournament_id == tid)).first()
    assert match_id is not None

    def cut(*args: Any, **kwargs: Any) -> bool:
        raise OperationalError("UPDATE matches ...", {}, Exception("terminating connection"))

    monkeypatch.setattr(arena.play.lifecycle.MatchLife, "record", cut)
    try:
        with pytest.raises(OperationalError):
            play_match_job(match_id, sqlite_url)
        with session_scope(sqlite_url) as session:
            status = session.scalar(select(Match.status).where(Match.id == match_id))
    finally:
        dispose_engines()
    assert status == "failed"


def _alive(pid: int) -> bool:
    info = process_info(pid)
    return info is not None and info.running

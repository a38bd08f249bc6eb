"""Many matches in flight: each bot's declared capacity holds across worker processes (and
a worker's crash, tests/arena/runtime/test_backends.py), the scheduler's picks, and results that
do not depend on how many matches are played at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.arena import (
    OFF_THE_CLOCK,
    SETTINGS,
    charged_fault_reasons,
    charged_faults,
    counted_once,
    hosted_bots,
    new_tournament,
    scores_by_key,
    wait_for,
)
from helpers.paths import TESTS
from redis import Redis
from rq import Queue, Worker
from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry
from sqlalchemy import select

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import register_bot
from arena.play import capacity
from arena.processes import spawn
from arena.queries.tournaments import tournament_progress
from arena.runtime.backends import EmbeddedBackend
from arena.runtime.driver import run_tournament
from arena.runtime.rq_backend import RqBackend
from arena.runtime.scheduling import matches_to_start, pending_window
from arena.store.db import dispose_engines, session_scope
from arena.store.models import BotVersion, FaultRecord, Match
from bots.random_bot import RandomBot
from sdk.bot import Bot, MatchInfo, MatchSummary
from sdk.server import RunningServer, start_server


class Gauge:
    """Matches a served bot is in now (StartMatch to EndMatch), and the most at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.matches = 0

    def bot(self) -> Bot:
        gauge = self

        class Counted(RandomBot):
            def on_match_start(self, info: MatchInfo) -> None:
                with gauge.lock:
                    gauge.now += 1
                    gauge.matches += 1
                    gauge.most = max(gauge.most, gauge.now)

            def on_match_end(self, summary: MatchSummary) -> None:
                with gauge.lock:
                    gauge.now -= 1

        return Counted()


@pytest.fixture
def counted_servers() -> Iterator[list[tuple[RunningServer, Gauge]]]:
    """Four served bots declaring 2 matches at once in GetInfo, each with its gauge."""
    out = []
    for _ in range(4):
        gauge = Gauge()
        out.append((start_server(gauge.bot, max_matches=2), gauge))
    try:
        yield out
    finally:
        for server, _ in out:
            server.stop(0)


def register_checked(url: str, servers: list[tuple[RunningServer, Gauge]]) -> list[int]:
    """Registered through the full check, which reads the capacity from GetInfo."""
    with session_scope(url) as session:
        owner = get_or_create_operator(session, "capacity-owner")
        return [
            register_bot(session, owner, f"counted{i}", server.address, settings=SETTINGS).id
            for i, (server, _) in enumerate(servers)
        ]


def match_ids(url: str, tid: int) -> list[int]:
    with session_scope(url) as session:
        return list(session.scalars(select(Match.id).where(Match.tournament_id == tid)))


def worker_env(url: str, redis_url: str, queue: str, slots: int) -> dict[str, str]:
    return {
        **os.environ,
        "TONK_DATABASE_URL": url,
        "TONK_REDIS_URL": redis_url,
        "TONK_QUEUE": queue,
        "TONK_MATCHES_PER_WORKER": str(slots),
        "TONK_ALLOWED_BOT_HOSTS": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]),
    }


@pytest.mark.redis
@pytest.mark.slow
def test_capacity_holds_across_two_rq_workers(
    pg_url: str, redis_url: str, redis_prefix: str, counted_servers: list[tuple[RunningServer, Gauge]]
) -> None:
    """Every match queued at once (no driver pacing them) and two `tonk worker` processes
    with 8 threads each: no bot is ever in more than the 2 matches it declared, while the
    workers do play several matches at once."""
    url, queue = pg_url, f"{redis_prefix}-capacity"
    ids = register_checked(url, counted_servers)
    with session_scope(url) as session:
        versions = session.scalars(select(BotVersion).where(BotVersion.bot_id.in_(ids))).all()
        assert {v.info["max_concurrent_matches"] for v in versions} == {2}
        assert {capacity.capacity_of(session, bot) for bot in ids} == {2}
    for _, gauge in counted_servers:  # forget the registration check's matches
        gauge.matches = gauge.most = 0
    # 24 matches; no honest bot can be late, so "no fault charged" below is about capacity
    tid = new_tournament(url, ids, deals_per_table=2, hands_per_match=4, seed=515, config=OFF_THE_CLOCK)
    backend = RqBackend(url, redis_url, queue)
    run_tournament(url, tid, backend, wait=False)
    workers = [
        spawn(
            [sys.executable, "-m", "sdk.cli", "worker", "--burst"],
            env=worker_env(url, redis_url, queue, 8),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        for worker in workers:
            _, err = worker.communicate(timeout=240)
            assert worker.returncode == 0, err.decode()[-2000:]
        # RQ's own bookkeeping stayed right with 8 jobs at once per worker: every job is
        # finished (those whose bots were busy went back to the queue first), none is left
        # started or failed, and the workers deregistered.
        rq_queue = Queue(queue, connection=backend.connection)
        assert rq_queue.count == 0
        assert StartedJobRegistry(queue=rq_queue).count == 0
        assert FailedJobRegistry(queue=rq_queue).count == 0
        assert sorted(FinishedJobRegistry(queue=rq_queue).get_job_ids()) == sorted(
            backend.job_id(m) for m in match_ids(url, tid)
        )
        assert Worker.all(queue=rq_queue) == []
        progress = run_tournament(url, tid, backend)  # anything a worker left (none expected)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        backend.close()
        Redis.from_url(redis_url).srem("rq:queues", f"rq:queue:{queue}")
    assert (progress.done, progress.total) == (24, 24)
    counted_once(url, tid)
    gauges = [gauge for _, gauge in counted_servers]
    assert sum(g.matches for g in gauges) == 48  # two seats a match
    assert max(g.most for g in gauges) == 2  # the bound, reached
    with session_scope(url) as session:
        assert capacity.in_flight(session) == {}
        # No fault charged; a slow notice (recorded, not charged) may come of a loaded machine.
        assert session.execute(charged_faults(FaultRecord.kind, FaultRecord.reason)).all() == []
    dispose_engines()


def test_the_scheduler_fills_free_capacity_in_play_order(sqlite_url: str) -> None:
    """Three bots of capacity 1, 2 and 3 (hosted, declared by their version's info): a
    2-seat round robin starts, in deal-major order, exactly what fits; matches already
    waiting for a worker and matches in flight use capacity up."""
    url = sqlite_url
    ids = hosted_bots(url, ["random", "greedy", "heuristic"])
    with session_scope(url) as session:
        for bot, cap in zip(ids, (1, 2, 3), strict=True):
            version = session.scalars(select(BotVersion).where(BotVersion.bot_id == bot)).one()
            version.info = {**version.info, "max_concurrent_matches": cap}
    tid = new_tournament(url, ids, deals_per_table=2)  # tables (r,g) (r,h) (g,h), 2 rotations
    with session_scope(url) as session:
        from arena.tournaments.lifecycle import start_tournament

        start_tournament(session, tid)
    with session_scope(url) as session:
        pending = pending_window(session, tid)
        assert len(pending) == 12
        # deal 0: t0 r0 (r,g) fits; t0 r1 needs r again; t1 (r,h) too; t2 r0 and r1 (g,h):
        # g has 2 slots, one taken by t0 r0, so one of them
        first = matches_to_start(session, pending, queued=())
        assert first == [pending[0], pending[4]]
        # those two now waiting for a worker: nothing else fits
        assert matches_to_start(session, pending, queued=first) == []
        # one of them claimed by a worker (a lease) and the other still queued: the same
        assert capacity.acquire(session, pending[0], ids[:2], "test:1")
        assert matches_to_start(session, pending, queued=[pending[4]]) == []
        capacity.release(session, pending[0])
        assert matches_to_start(session, pending, queued=[pending[4]]) == [pending[0]]


def test_a_bot_never_gets_more_leases_than_its_capacity(sqlite_url: str) -> None:
    url = sqlite_url
    ids = hosted_bots(url, ["random", "greedy"])
    tid = new_tournament(url, ids, deals_per_table=3)
    with session_scope(url) as session:
        version = session.scalars(select(BotVersion).where(BotVersion.bot_id == ids[0])).one()
        version.info = {**version.info, "max_concurrent_matches": 2}
        matches = pending_window(session, tid)
    taken = []
    for match_id in matches:
        with session_scope(url) as session:
            if capacity.acquire(session, match_id, ids, "test:1"):
                taken.append(match_id)
            else:
                session.rollback()
    assert taken == matches[:2]
    with session_scope(url) as session:
        assert capacity.in_flight(session, ids) == {ids[0]: 2, ids[1]: 2}
        capacity.release(session, matches[1])
    with session_scope(url) as session:
        assert capacity.acquire(session, matches[2], ids, "test:1")  # the freed slot, reused
        assert capacity.in_flight(session, ids) == {ids[0]: 2, ids[1]: 2}


@pytest.mark.slow
def test_results_do_not_depend_on_matches_in_flight(sqlite_url: str, tmp_path: Path) -> None:
    """The same tournament (same seed) played one match at a time and with 16 matches in
    flight in each of two processes gives the same result for every match."""
    servers = [start_server(RandomBot, max_matches=16), start_server(RandomBot, max_matches=16)]
    try:
        results = []
        for workers, slots in ((1, 1), (2, 16)):
            url = f"sqlite:///{tmp_path / f'arena-{workers}-{slots}.sqlite'}"
            with session_scope(url) as session:
                owner = get_or_create_operator(session, "det-owner")
                ids = [
                    register_bot(session, owner, f"det{i}", s.address, settings=SETTINGS).id
                    for i, s in enumerate(servers)
                ]
            ids += hosted_bots(url, ["greedy", "heuristic"])
            tid = new_tournament(
                url, ids, table_sizes=[2, 3], deals_per_table=2, hands_per_match=3, seed=2**40 + 7,
                config=OFF_THE_CLOCK,
            )
            backend = EmbeddedBackend(url, workers, slots=slots)
            try:
                progress = run_tournament(url, tid, backend, poll_s=0.05)
            finally:
                backend.close()
            assert progress.done == progress.total == 2 * (6 * 2 + 4 * 6)  # n (n - 1) seat orders a deal
            counted_once(url, tid)
            assert charged_fault_reasons(url, tid) == []  # honest bots: the scores are the cards' alone
            results.append(scores_by_key(url, tid))
            dispose_engines()
        assert results[0] == results[1]
    finally:
        for server in servers:
            server.stop(0)


def test_matches_submitted_at_once_without_a_driver_all_get_played(sqlite_url: str) -> None:
    """The dashboard submits every match to the embedded pool and does not drive: those
    whose bots are busy go back to the pool's queue until a slot frees, none is dropped."""
    url = sqlite_url
    # A bot that thinks 50 ms a decision: each match lasts long enough to be seen in flight.
    ids = hosted_bots(url, ["helpers.faultbots:SleepyBot", "greedy"])
    with session_scope(url) as session:
        version = session.scalars(select(BotVersion).where(BotVersion.bot_id == ids[0])).one()
        version.info = {**version.info, "max_concurrent_matches": 1}
    tid = new_tournament(url, ids, deals_per_table=3, hands_per_match=3)  # 6 matches
    pool = EmbeddedBackend(url, 1, slots=4)
    try:
        run_tournament(url, tid, pool, wait=False)
        most = 0

        def all_done() -> bool:
            nonlocal most
            with session_scope(url) as session:
                most = max(most, capacity.in_flight(session, ids).get(ids[0], 0))
                return tournament_progress(session, tid).done == 6

        wait_for(all_done, timeout=90, step=0.02)
    finally:
        pool.close()
    assert most == 1
    counted_once(url, tid)



def test_capacities_of_a_whole_pool_equal_each_bots_own(db_url: str) -> None:
    """Past IN_LIST_MAX bots, capacities reads every bot's latest version and keeps those asked:
    the same answers as capacity_of one by one, bots not asked left out, a bot's newest version
    read (not its first)."""
    count = capacity.IN_LIST_MAX + 5
    with session_scope(db_url) as session:
        owner = get_or_create_operator(session, "house")
        bots = [
            register_bot(session, owner, f"pool{k}", f"127.0.0.1:{20000 + k}", settings=SETTINGS, check=False)
            for k in range(count + 2)
        ]
        session.flush()
        ids = [bot.id for bot in bots]
        for bot, declared in ((ids[0], 7), (ids[1], 0)):  # 0 declares nothing: the default
            info = {"max_concurrent_matches": declared}
            session.add(BotVersion(bot_id=bot, number=2, address=f"127.0.0.1:{29000 + declared}", info=info))
    asked = ids[:count]
    with session_scope(db_url) as session:
        many = capacity.capacities(session, asked)
        few = capacity.capacities(session, asked[:3])
        one_by_one = {bot: capacity.capacity_of(session, bot) for bot in asked}
    assert many == one_by_one and set(many) == set(asked)
    assert few == {bot: one_by_one[bot] for bot in asked[:3]}
    assert many[ids[0]] == 7 and many[ids[1]] == capacity.declared_capacity(None) != 7

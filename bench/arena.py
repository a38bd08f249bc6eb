"""Arena throughput: matches per second on RQ (1 and 2 workers) and on the embedded pool,
and what the queue costs a match.

    .venv/bin/python bench/arena.py [--deals 2] [--hands 300] [--trials 3] [--remote-ms MS]
                                    [--database-url URL]

Every run plays the same tournament (same seed, deterministic house bots hosted in the
worker), so the work is identical and only the way it is run differs:

- inline: ``play_match_job`` called in this process, one match after another (claim, play,
  record: everything but the queue);
- rq-1 / rq-2: ``tonk worker`` processes on their own queue; the clock runs from enqueueing
  to the moment the store recorded the last match;
- embedded: the local process pool (2 processes), timed the same way.

Workers and the pool are started once and warmed up (a first match pays for imports,
connections and statement caches; long-lived workers do not), then the configurations take
turns for ``--trials`` rounds and the median of each is reported, which keeps a noisy
machine from favouring whichever ran in a quiet moment.

The queue's cost is also measured directly: no-op jobs through the same worker class on a
private queue (the wall time RQ itself spends per job), which is far steadier than the
difference of two tournaments' times. So is the driver's sweep (``--sweep-only`` runs just
that): every few seconds it asks the queue about every pending match, timed with 5,000
queued matches against loading the same jobs with ``Job.fetch_many`` (the baseline, in the
same run).

Targets: the queue adds under 5% to a match's time (rq-1 per match vs inline per match), and
2 workers give at least 1.7x the matches per second of one (with instant in-process bots
the referee's CPU is the bound, so this needs two idle cores). The store is a fresh
database on the local PostgreSQL (a temporary SQLite file if it is not reachable); Redis is
local.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from redis import Redis  # noqa: E402
from rq import Queue, Worker  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from arena.bots.owners import get_or_create_operator  # noqa: E402
from arena.bots.registry import host_bot  # noqa: E402
from arena.config import Settings  # noqa: E402
from arena.processes import ensure_watched, spawn  # noqa: E402
from arena.runtime.backends import EmbeddedBackend  # noqa: E402
from arena.runtime.driver import RECOVER_S, run_tournament  # noqa: E402
from arena.runtime.jobs import play_match_job  # noqa: E402
from arena.runtime.rq_backend import RqBackend  # noqa: E402
from arena.store.db import dispose_engines, session_scope  # noqa: E402
from arena.store.models import Match, Tournament  # noqa: E402
from arena.store.statuses import TournamentStatus  # noqa: E402
from arena.tournaments.lifecycle import create_tournament, start_tournament  # noqa: E402

PG_ADMIN_URL = os.environ.get("TONK_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
SEED = 20_240_601
BOTS = {"random": "random", "greedy": "greedy", "greedy-b": "bots.greedy:GreedyBot"}
# --remote-ms: the same bots, waiting as a bot across a network would (written to a temporary
# module the workers import), so a worker mostly waits, as arena workers do on real bots.
REMOTE_MODULE = """
import time
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot

class NetRandom(RandomBot):
    name = "net-random"
    def act(self, obs):
        time.sleep({delay})
        return super().act(obs)

class NetGreedy(GreedyBot):
    name = "net-greedy"
    def act(self, obs):
        time.sleep({delay})
        return super().act(obs)
"""
REMOTE_BOTS = {
    "net-random": "tonk_bench_bots:NetRandom",
    "net-greedy": "tonk_bench_bots:NetGreedy",
    "net-greedy-b": "tonk_bench_bots:NetGreedy",
}


@contextlib.contextmanager
def fresh_store(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    try:
        import psycopg

        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except Exception:  # no PostgreSQL here: fall back to SQLite
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/bench.sqlite"
        return
    name = f"tonk_bench_{uuid.uuid4().hex[:10]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        dispose_engines()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Bench:
    def __init__(
        self, url: str, redis_url: str, deals: int, hands: int, bots: dict[str, str], path: str = ""
    ):
        self.url = url
        self.bots = bots
        self.seed = SEED if bots is BOTS else SEED + 100
        self.path = path  # where the workers find the bots' module
        self.redis_url = redis_url
        self.deals = deals
        self.hands = hands
        self.matches = deals * 6  # a 3-seat deal is played in all 6 seat orders
        self.connection = Redis.from_url(redis_url)
        self.queues: list[str] = []
        self.last = 0  # the tournament of the latest run
        self.procs: list[subprocess.Popen[bytes]] = []

    def tournament(self, warmup: bool = False) -> int:
        """The benchmark's tournament (always the same matches), or a one-deal warm-up."""
        with session_scope(self.url) as session:
            house = get_or_create_operator(session, "house")
            ids = [host_bot(session, house, name, path, check=False).id for name, path in self.bots.items()]
            return create_tournament(
                session, name="warm-up" if warmup else "bench", bot_ids=ids, table_sizes=[3],
                deals_per_table=1 if warmup else self.deals, hands_per_match=self.hands,
                seed=self.seed + 1 if warmup else self.seed, settings=Settings(),
            ).id

    def finished_by(self, tid: int) -> float:
        """Wait (polling gently: the poller shares the CPUs) until every match is done; the
        wall-clock time the store recorded the last one."""
        while True:
            with session_scope(self.url) as session:
                # Finished, not just all done: the last job marks it right after its match.
                if session.get(Tournament, tid).status == TournamentStatus.FINISHED:  # type: ignore[union-attr]
                    last = session.execute(
                        select(func.max(Match.finished_at)).where(Match.tournament_id == tid)
                    ).scalar_one()
                    break
            time.sleep(0.2)
        assert last is not None  # a finished tournament's matches all finished
        if last.tzinfo is None:  # SQLite: naive, stored in UTC
            last = last.replace(tzinfo=dt.UTC)
        return float(last.timestamp())

    def inline(self, warmup: bool = False) -> float:
        tid = self.tournament(warmup)
        self.last = tid
        with session_scope(self.url) as session:
            start_tournament(session, tid)
            ids = list(session.scalars(select(Match.id).where(Match.tournament_id == tid).order_by(Match.id)))
        started = time.perf_counter()
        for match_id in ids:
            assert play_match_job(match_id, self.url) == "done"
        return time.perf_counter() - started

    def queued(self, backend: RqBackend | EmbeddedBackend, warmup: bool = False) -> float:
        tid = self.tournament(warmup)
        self.last = tid
        started = time.time()
        run_tournament(self.url, tid, backend, wait=False)
        return self.finished_by(tid) - started

    def rq(self, workers: int) -> RqBackend:
        """A queue with ``workers`` idle ``tonk worker`` processes on it."""
        queue = f"tonk-bench-{uuid.uuid4().hex[:8]}"
        self.queues.append(queue)
        path = os.pathsep.join([str(ROOT), self.path, os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "TONK_DATABASE_URL": self.url, "TONK_REDIS_URL": self.redis_url,
               "TONK_QUEUE": queue, "PYTHONPATH": path}
        for _ in range(workers):
            self.procs.append(spawn([sys.executable, "-m", "sdk.cli", "worker"], env=env,
                                               stdout=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while len(Worker.all(queue=Queue(queue, connection=self.connection))) < workers:
            if time.monotonic() > deadline:
                raise RuntimeError("the RQ workers did not start")
            time.sleep(0.05)
        return RqBackend(self.url, self.redis_url, queue, connection=self.connection)

    def close(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            proc.wait(timeout=30)
        for queue in self.queues:
            forget_queue(self.connection, queue)
        self.connection.close()


def forget_queue(connection: Redis, name: str) -> None:
    """Remove everything RQ keeps for the private queue ``name``: its keys, its jobs' and its
    workers' (all named after it), and its entries in RQ's queue and worker sets."""
    leftovers = list(connection.scan_iter(match=f"*{name}*", count=1000))
    if leftovers:
        connection.delete(*leftovers)
    for key in ("rq:queues", "rq:workers"):
        members = [m for m in connection.smembers(key) if name.encode() in m]
        if members:
            connection.srem(key, *members)


def rq_job_cost(redis_url: str, jobs: int = 200) -> float:
    """Milliseconds of wall time RQ itself spends per job: ``jobs`` no-op jobs (``math.floor``)
    through the worker class ``tonk worker`` uses, in burst mode, on a private queue. Far less
    noisy than the difference of two tournaments' times, which swings by several percent."""
    from rq import SimpleWorker

    connection = Redis.from_url(redis_url)
    name = f"tonk-bench-noop-{uuid.uuid4().hex[:10]}"
    queue = Queue(name, connection=connection)
    try:
        queue.enqueue_many(
            [
                Queue.prepare_data(
                    "math.floor", args=(1.5,), job_id=f"{name}-{i}", result_ttl=60, failure_ttl=60
                )
                for i in range(jobs)
            ]
        )  # fmt: skip
        worker = SimpleWorker([queue], connection=connection, name=f"{name}-worker")
        started = time.perf_counter()
        worker.work(burst=True, logging_level="WARNING")
        elapsed = time.perf_counter() - started
        done = queue.finished_job_registry.count
    finally:
        forget_queue(connection, name)
        connection.close()
    if done != jobs:
        raise RuntimeError(f"only {done} of {jobs} no-op jobs finished")
    return 1000 * elapsed / jobs


def sweep_cost(redis_url: str, pending: int = 5000, trials: int = 5) -> tuple[float, float]:
    """Milliseconds for one driver sweep's queue check of ``pending`` queued matches
    (``RqBackend.submit``, which queues nothing here) and for ``Job.fetch_many`` of the same
    jobs (the baseline); medians of ``trials``. Everything on a private queue, removed after."""
    from rq.job import Job

    connection = Redis.from_url(redis_url)
    name = f"tonk-bench-sweep-{uuid.uuid4().hex[:10]}"
    backend = RqBackend("sqlite:///unused.sqlite", redis_url, name, connection=connection)
    matches = list(range(1, pending + 1))
    ids = [backend.job_id(m) for m in matches]
    sweep, baseline = [], []
    try:
        if backend.submit(matches) != pending:
            raise RuntimeError("the sweep bench could not queue its jobs")
        for _ in range(trials):
            started = time.perf_counter()
            if backend.submit(matches) != 0:
                raise RuntimeError("a queued match was queued again")
            sweep.append(time.perf_counter() - started)
            started = time.perf_counter()
            Job.fetch_many(ids, connection=connection)
            baseline.append(time.perf_counter() - started)
    finally:
        forget_queue(connection, name)
        connection.close()
    return 1000 * statistics.median(sweep), 1000 * statistics.median(baseline)


def print_sweep_cost(redis_url: str, pending: int = 5000) -> None:
    sweep_ms, fetch_ms = sweep_cost(redis_url, pending)
    print(f"driver sweep, {pending:,} pending matches all queued: {sweep_ms:.1f} ms "
          f"(Job.fetch_many of the same jobs: {fetch_ms:.1f} ms; ratio {sweep_ms / fetch_ms:.2f}); "
          f"every {RECOVER_S:g} s = {100 * sweep_ms / 1000 / RECOVER_S:.1f}% of one core")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=2, help="deals (x6 seat orders = matches)")
    parser.add_argument("--hands", type=int, default=300, help="hands per match")
    parser.add_argument("--trials", type=int, default=3, help="rounds; the median is reported")
    parser.add_argument("--remote-ms", type=float, default=0.0,
                        help="bots wait this long per decision, like bots across a network (default: 0, "
                             "in-process bots: every match is CPU-bound on its worker)")
    parser.add_argument("--database-url", default=None, help="default: a fresh local PostgreSQL database")
    parser.add_argument("--redis-url", default=os.environ.get("TONK_REDIS_URL") or "redis://127.0.0.1:6379/0")
    parser.add_argument("--sweep-only", action="store_true", help="only the driver's sweep cost")
    args = parser.parse_args()
    if args.sweep_only:
        print_sweep_cost(args.redis_url)
        return 0
    with fresh_store(args.database_url) as url, tempfile.TemporaryDirectory() as folder:
        bots = BOTS
        if args.remote_ms > 0:
            Path(folder, "tonk_bench_bots.py").write_text(REMOTE_MODULE.format(delay=args.remote_ms / 1000))
            sys.path.insert(0, folder)
            bots = REMOTE_BOTS
        bench = Bench(url, args.redis_url, args.deals, args.hands, bots, folder)
        try:
            rq1, rq2 = bench.rq(1), bench.rq(2)
            pool = EmbeddedBackend(url, 2)
            runs: dict[str, Callable[[bool], float]] = {
                "inline (no queue)": bench.inline,
                "rq, 1 worker": lambda warm: bench.queued(rq1, warm),
                "rq, 2 workers": lambda warm: bench.queued(rq2, warm),
                "embedded pool, 2": lambda warm: bench.queued(pool, warm),
            }
            latency = f", each decision waiting {args.remote_ms:g} ms" if args.remote_ms > 0 else ""
            print(f"store {url.split('@')[-1]}; {bench.matches} matches of {args.hands} hands (random, "
                  f"greedy, greedy at a 3-seat table{latency}); {os.cpu_count()} cores, "
                  f"load {os.getloadavg()[0]:.1f}")
            for run in runs.values():
                run(True)
            times: dict[str, list[float]] = {name: [] for name in runs}
            tournaments: dict[str, list[int]] = {name: [] for name in runs}
            for _ in range(args.trials):
                for name, run in runs.items():
                    times[name].append(run(False))
                    tournaments[name].append(bench.last)
            pool.close()
        finally:
            bench.close()
        played: dict[str, float] = {}
        busy: dict[str, float] = {}  # seconds matches were in progress (claim to record)
        with session_scope(url) as session:
            for name, ids in tournaments.items():
                played[name] = float(session.execute(
                    select(func.avg(Match.duration_ms)).where(Match.tournament_id.in_(ids))
                ).scalar_one() or 0)
                spans = session.execute(
                    select(Match.started_at, Match.finished_at).where(Match.tournament_id.in_(ids))
                ).all()
                busy[name] = sum(
                    (end - start).total_seconds() for start, end in spans if start and end
                )
    n = bench.matches
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{'run':<20} {'median s':>9} {'matches/s':>10} {'ms/match':>9} {'play ms':>8} {'overlap':>8}"
          f"   trials (s)")
    for name, seconds in median.items():
        trials = " ".join(f"{t:.2f}" for t in times[name])
        overlap = busy[name] / sum(times[name])
        print(f"{name:<20} {seconds:9.2f} {n / seconds:10.2f} {1000 * seconds / n:9.1f} "
              f"{played[name]:8.1f} {overlap:8.2f}   {trials}")
    inline_ms = 1000 * median["inline (no queue)"] / n
    queued_ms = 1000 * median["rq, 1 worker"] / n
    overhead = queued_ms / inline_ms - 1
    scaling = median["rq, 1 worker"] / median["rq, 2 workers"]
    print("play ms: the referee's own time per match (as recorded); the rest of a match's time is "
          "claiming it and recording it (one transaction), and for the queues, the queue.\n"
          "overlap: matches in progress at once, on average (claim to record, over all trials); "
          "2.00 means two workers never waited for each other or for the queue, so any shortfall "
          "in their speed-up is CPU contention")
    print(f"queue cost per match: {queued_ms - inline_ms:+.1f} ms = {100 * overhead:+.1f}% of an inline "
          f"match (target < 5%): {'ok' if overhead < 0.05 else 'MISSED'}")
    job_ms = statistics.median(rq_job_cost(args.redis_url) for _ in range(3))
    print(f"RQ's own work per job, measured directly (no-op jobs, same worker class): {job_ms:.1f} ms "
          f"= {100 * job_ms / inline_ms:.1f}% of an inline match")
    print_sweep_cost(args.redis_url)
    print(f"2 workers / 1 worker: {scaling:.2f}x (target >= 1.7x): {'ok' if scaling >= 1.7 else 'MISSED'}")
    print(f"embedded pool (2) / 1 RQ worker: {median['rq, 1 worker'] / median['embedded pool, 2']:.2f}x; "
          f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    ensure_watched()  # nothing it starts outlives it, however it ends (arena/processes.py)
    sys.exit(main())

"""Where match jobs run: on RQ workers (``TONK_REDIS_URL`` set) or in a local process pool
(the embedded default), and the loop that drives a tournament to its end.

Both backends run the same :func:`arena.jobs.play_match_job`; the store, not the queue, is
the truth about what is done, so progress is read from the store and a backend may be lost
(a Redis flush, a killed pool) without losing or double-counting a match: driving the
tournament again re-submits whatever is not done, and the job is idempotent.

RQ jobs get an explicit id, ``{queue}-match-{match_id}``, so a match is on the queue at most
once: submitting it again while it is queued is a no-op, and a finished or dead job is
replaced. ``tonk worker`` (:func:`run_worker`) runs an RQ worker on the configured queue; a
plain ``rq worker -u URL QUEUE`` works as well.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, ClassVar, Final, Protocol

from sqlalchemy import select

from arena.config import Settings
from arena.db import session_scope
from arena.jobs import play_match_job, recover_matches
from arena.models import Match
from arena.processes import descendants, exit_with
from arena.store import Progress, tournament_progress
from arena.tournaments import finish_if_complete, get_tournament_row, start_tournament

JOB_FUNCTION: Final = "arena.jobs.play_match_job"
#: Seconds between the driver's sweeps: abandoned matches are reset, and every pending match
#: without a job waiting for it (its job failed before claiming it, or the queue was lost in a
#: Redis restart) is queued again.
RECOVER_S: Final = 5.0
#: A job claims its match first thing; one still "started" this long after the driver first
#: saw it with its match pending lost its worker before the claim, and is replaced.
UNCLAIMED_S: Final = 15.0
#: RQ job statuses of a job that will still run.
_WAITING: Final = frozenset({"queued", "scheduled", "deferred"})
#: RQ keeps a finished job's result this long (seconds), a failed one's this long.
RESULT_TTL: Final = 3600
FAILURE_TTL: Final = 7 * 24 * 3600


class QueueNotConfiguredError(ValueError):
    """An RQ action without ``TONK_REDIS_URL``."""


class Backend(Protocol):
    """Runs match jobs somewhere."""

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        """Queue the matches not already queued or being played; ``replace`` names matches
        whose current job is known dead (it is replaced). Returns how many were queued."""
        ...

    def close(self, *, cancel: bool = False) -> None: ...


class EmbeddedBackend:
    """A local process pool. Processes come from a fork server (a clean process that
    imported the arena once), so nothing of the caller's state, such as open database
    connections or gRPC threads, leaks into them.

    Nothing it starts outlives it: each worker ends when the process that made the pool ends,
    however it ends, and closing the last open pool of a process stops the fork server.
    """

    #: The open pools of this process: the fork server is shared, so the last one stops it
    #: (a pool never closed keeps it: it may still have workers).
    _open: ClassVar[set[EmbeddedBackend]] = set()
    _open_lock = threading.Lock()

    def __init__(
        self, database_url: str, workers: int = 0, *, hosted_addresses: Mapping[str, str] | None = None
    ):
        self.database_url = database_url
        self.hosted = dict(hosted_addresses) if hosted_addresses else None
        self.workers = workers or os.cpu_count() or 1
        with self._open_lock:
            self._open.add(self)
        self._pool = self._new_pool()
        self._futures: dict[int, Future[str]] = {}

    def _new_pool(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        # The server imports these once; each pool process is then a cheap fork of it
        # ("__main__" too, or every process would re-run the main script).
        context.set_forkserver_preload(["__main__", "arena.jobs", "arena.execution"])
        # A kill -9 of this process must not leave its pool behind (arena/processes.py).
        return ProcessPoolExecutor(
            max_workers=self.workers, mp_context=context, initializer=exit_with, initargs=(os.getpid(),)
        )

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        queued = 0
        for match_id in match_ids:
            future = self._futures.get(match_id)
            if future is not None and not future.done():
                continue
            try:
                self._futures[match_id] = self._pool.submit(
                    play_match_job, match_id, self.database_url, self.hosted
                )
            except BrokenProcessPool:
                # A pool process died (killed, or a hosted bot crashed it): start a new pool.
                # Its matches are left running with a dead worker, which the sweep replays.
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
                self._futures = {}
                self._futures[match_id] = self._pool.submit(
                    play_match_job, match_id, self.database_url, self.hosted
                )
            queued += 1
        return queued

    def errors(self) -> list[BaseException]:
        """Exceptions of finished jobs (their matches are marked failed in the store)."""
        out = []
        for match_id, future in list(self._futures.items()):
            if future.done():
                del self._futures[match_id]
                exc = future.exception()
                if exc is not None:
                    out.append(exc)
        return out

    def _processes(self) -> list[Any]:
        # ProcessPoolExecutor keeps its workers in a private dict; there is no public way.
        return list(getattr(self._pool, "_processes", {}).values())

    def close(self, *, cancel: bool = False) -> None:
        if cancel:
            # Matches being played are abandoned: their processes go, and a resume sees
            # their workers dead and plays them again.
            for process in self._processes():
                with contextlib.suppress(Exception):
                    process.kill()
        self._pool.shutdown(wait=not cancel, cancel_futures=True)
        with self._open_lock:
            self._open.discard(self)
            if not self._open:
                _stop_fork_server()


def _stop_fork_server(wait_s: float = 10.0) -> None:
    """Stop this process's multiprocessing fork server (a child process that would otherwise
    live as long as this one); the next pool starts a new one. Stopping waits for the server
    to exit, which it does only once every process forked from it has ended (they hold its
    "alive" pipe), so it is skipped if any is still running after ``wait_s``."""
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    stop = getattr(server, "_stop", None)  # CPython's own way, used by its tests; no public one
    if pid is None or stop is None:
        return
    deadline = time.monotonic() + wait_s
    while any(p.running for p in descendants(pid)):
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        stop()


class RqBackend:
    """Match jobs on an RQ queue."""

    def __init__(
        self,
        database_url: str,
        redis_url: str,
        queue_name: str,
        *,
        connection: Any = None,
        hosted_addresses: Mapping[str, str] | None = None,
    ):
        from redis import Redis
        from rq import Queue

        self.database_url = database_url
        self.hosted = dict(hosted_addresses) if hosted_addresses else None
        self.connection = connection or Redis.from_url(redis_url)
        self.queue = Queue(queue_name, connection=self.connection)
        # Matches seen pending while their job was "started", and since when (monotonic).
        self._unclaimed: dict[int, float] = {}

    def job_id(self, match_id: int) -> str:
        return job_id(self.queue.name, match_id)

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        """Queue the (pending) matches that have no job waiting: none at all (never queued,
        or lost with a Redis restart), or one that finished or failed without playing its
        match, or one started by a worker that died before claiming it."""
        from rq import Queue
        from rq.job import Job

        if not match_ids:
            return 0
        # One pipelined HGET per job rather than Job.fetch_many: the driver asks about every
        # pending match at each sweep, and this is 6 to 9 times cheaper (bench/arena.py --sweep-only).
        statuses = self._statuses([self.job_id(m) for m in match_ids])
        now = time.monotonic()
        unclaimed: dict[int, float] = {}
        todo, stale = [], []
        for match_id, status in zip(match_ids, statuses, strict=True):
            if status in _WAITING:
                continue
            if status == "started" and match_id not in replace:
                since = self._unclaimed.get(match_id, now)
                if now - since < UNCLAIMED_S:
                    unclaimed[match_id] = since
                    continue
            if status is not None:
                stale.append(self.job_id(match_id))
            todo.append(match_id)
        self._unclaimed = unclaimed
        if stale:
            with self.connection.pipeline() as pipe:
                for job in Job.fetch_many(stale, connection=self.connection):
                    if job is not None:
                        job.delete(pipeline=pipe)
                pipe.execute()
        if todo:
            self.queue.enqueue_many(
                [
                    Queue.prepare_data(
                        JOB_FUNCTION,
                        args=(match_id, self.database_url, self.hosted),
                        job_id=self.job_id(match_id),
                        timeout=self._timeout(),
                        result_ttl=RESULT_TTL,
                        failure_ttl=FAILURE_TTL,
                        description=f"match {match_id}",
                    )
                    for match_id in todo
                ]
            )
        return len(todo)

    def _statuses(self, job_ids: Sequence[str]) -> list[str | None]:
        from rq.job import Job

        with self.connection.pipeline(transaction=False) as pipe:
            for job_id_ in job_ids:
                pipe.hget(Job.key_for(job_id_), "status")
            raw = pipe.execute()
        return [value.decode() if isinstance(value, bytes) else value for value in raw]

    def _timeout(self) -> int:
        # A generous ceiling: the referee bounds every decision; this only catches a hosted
        # bot that never returns. An expired job leaves its match to the recovery sweep.
        return 6 * 3600

    def close(self, *, cancel: bool = False) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()


def job_id(queue_name: str, match_id: int) -> str:
    """RQ job ids allow letters, digits, ``_`` and ``-`` only."""
    return f"{_safe(queue_name)}-match-{match_id}"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def make_backend(
    settings: Settings, database_url: str | None = None, *, hosted_addresses: Mapping[str, str] | None = None
) -> EmbeddedBackend | RqBackend:
    """RQ when ``settings.redis_url`` is set, else the embedded pool."""
    url = database_url or settings.database_url
    if settings.redis_url:
        return RqBackend(url, settings.redis_url, settings.queue_name, hosted_addresses=hosted_addresses)
    return EmbeddedBackend(url, settings.embedded_workers, hosted_addresses=hosted_addresses)


def unfinished_matches(database_url: str, tournament_id: int) -> list[int]:
    """Ids of the tournament's pending matches, in play order (deal-major)."""
    with session_scope(database_url) as session:
        return list(
            session.scalars(
                select(Match.id)
                .where(Match.tournament_id == tournament_id, Match.status == "pending")
                .order_by(Match.deal_index, Match.table_index, Match.rotation)
            )
        )


def run_tournament(
    database_url: str,
    tournament_id: int,
    backend: Backend,
    *,
    wait: bool = True,
    on_progress: Callable[[Progress], None] | None = None,
    poll_s: float = 0.25,
) -> Progress:
    """Start (or resume) the tournament and submit every match not done, retrying failed
    and abandoned ones (a finished tournament is left as it is). With ``wait``, keep going
    until no match is pending or running (or the tournament is paused), calling
    ``on_progress`` with the counts from the store, and sweep for abandoned matches every
    ``RECOVER_S``. Returns the last progress."""
    with session_scope(database_url) as session:
        if get_tournament_row(session, tournament_id).status == "finished":
            return tournament_progress(session, tournament_id)  # nothing to do: not an error
        start_tournament(session, tournament_id)
        reset = recover_matches(session, tournament_id, retry_failed=True)
    backend.submit(unfinished_matches(database_url, tournament_id), replace=reset)
    with session_scope(database_url) as session:
        # Paused after its last match was done: nothing to play, but it must still finish.
        finish_if_complete(session, tournament_id)
        progress = tournament_progress(session, tournament_id)
    if not wait:
        return progress
    swept = time.monotonic()
    while True:
        if isinstance(backend, EmbeddedBackend):
            backend.errors()  # the store has them (failed matches); just drop the futures
        with session_scope(database_url) as session:
            progress = tournament_progress(session, tournament_id)
            status = get_tournament_row(session, tournament_id).status
        if on_progress is not None:
            on_progress(progress)
        if progress.unfinished == 0 or status != "running":
            with session_scope(database_url) as session:  # a sequential test may add pairs here
                finish_if_complete(session, tournament_id)
                progress = tournament_progress(session, tournament_id)
                status = get_tournament_row(session, tournament_id).status
            if progress.unfinished == 0 or status != "running":
                break
            backend.submit(unfinished_matches(database_url, tournament_id))  # its next batch
        now = time.monotonic()
        if now - swept >= RECOVER_S:
            swept = now
            with session_scope(database_url) as session:
                reset = recover_matches(session, tournament_id)
            # Every pending match, not only the ones just reset: the backend skips those
            # with a job waiting, and queues again any whose job is gone or ended unclaimed.
            backend.submit(unfinished_matches(database_url, tournament_id), replace=reset)
        time.sleep(poll_s)
    with session_scope(database_url) as session:
        finish_if_complete(session, tournament_id)
    return _progress(database_url, tournament_id)


def _progress(database_url: str, tournament_id: int) -> Progress:
    with session_scope(database_url) as session:
        return tournament_progress(session, tournament_id)


def tournament_status(database_url: str, tournament_id: int) -> str:
    with session_scope(database_url) as session:
        return get_tournament_row(session, tournament_id).status


def worker_name(queue_name: str) -> str:
    """Unique per process, and containing the queue name (so tooling can find a queue's
    workers by name)."""
    return f"{_safe(queue_name)}.{_safe(socket.gethostname())}.{os.getpid()}"


def run_worker(
    settings: Settings, *, burst: bool = False, fork: bool = False, name: str | None = None
) -> bool:
    """Run an RQ worker on ``settings.queue_name`` until stopped (or, with ``burst``, until
    the queue is empty). Matches run in the worker process itself unless ``fork`` (RQ's
    fork-per-job, which isolates a crashing hosted bot at a few ms per match). Returns
    whether any job ran."""
    from redis import Redis
    from rq import Queue, SimpleWorker, Worker

    import arena.jobs  # noqa: F401 - imported once here rather than in every job

    if not settings.redis_url:
        raise QueueNotConfiguredError(
            f"an RQ worker needs TONK_REDIS_URL, got {settings.redis_url!r}; without it matches run "
            "in the embedded pool"
        )
    connection = Redis.from_url(settings.redis_url)
    worker_class = Worker if fork else SimpleWorker
    worker = worker_class(
        [Queue(settings.queue_name, connection=connection)],
        connection=connection,
        name=name or worker_name(settings.queue_name),
    )
    return bool(worker.work(burst=burst, logging_level="WARNING"))

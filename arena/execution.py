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

A tournament started without a driver staying to run it (the dashboard's API) is driven by
a :class:`Sweeper` in the process that started it: the driver's sweep, every ``RECOVER_S``,
over every running tournament of the store.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import queue
import re
import socket
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar, Final, Protocol

from sqlalchemy import and_, func, select

from arena.config import Settings, load_settings
from arena.db import session_scope
from arena.deals import overdue_deals, reveal_deals, reveal_overdue
from arena.jobs import recover_matches
from arena.models import Match, Tournament
from arena.processes import descendants
from arena.queries.tournaments import Progress, tournament_progress
from arena.scheduling import matches_to_start, pending_window
from arena.statuses import MatchStatus, TournamentStatus
from arena.tournaments import finish_if_complete, get_tournament_row, start_tournament

log = logging.getLogger("tonk.execution")

JOB_FUNCTION: Final = "arena.jobs.play_match_job"
#: Seconds between the driver's sweeps: abandoned matches are reset, and every pending match
#: without a job waiting for it (its job failed before claiming it, or the queue was lost in a
#: Redis restart) is queued again.
RECOVER_S: Final = 5.0
#: A job claims its match first thing; one still "started" this long after the driver first
#: saw it with its match pending lost its worker before the claim, and is replaced.
UNCLAIMED_S: Final = 15.0
_UNFINISHED: Final = (MatchStatus.PENDING, MatchStatus.RUNNING)
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

    def waiting(self, match_ids: Collection[int]) -> set[int]:
        """Of ``match_ids``, those submitted and not yet claimed or finished."""
        ...

    def close(self, *, cancel: bool = False) -> None: ...


class EmbeddedBackend:
    """A local pool of processes, each playing up to ``slots`` matches at once in threads
    (arena.workers.pool_process). Processes come from a fork server (a clean process that
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
        self,
        database_url: str,
        workers: int = 0,
        *,
        hosted_addresses: Mapping[str, str] | None = None,
        slots: int = 0,
    ):
        self.database_url = database_url
        self.hosted = dict(hosted_addresses) if hosted_addresses else None
        self.workers = workers or os.cpu_count() or 1
        with self._open_lock:
            self._open.add(self)
        self.slots = slots or load_settings().matches_per_worker
        self._context = multiprocessing.get_context("forkserver")
        # The server imports these once; each pool process is then a cheap fork of it
        # ("__main__" too, or every process would re-run the main script).
        self._context.set_forkserver_preload(["__main__", "arena.jobs", "arena.workers", "arena.execution"])
        self._tasks: Any = self._context.Queue()
        self._done: Any = self._context.Queue()
        self._processes: list[Any] = []
        #: Matches handed to the pool and not reported done yet.
        self._submitted: set[int] = set()
        # A dashboard submits from request threads and from its Sweeper's thread.
        self._lock = threading.RLock()
        self._errors: list[str] = []
        self._start_processes()

    def _start_processes(self) -> None:
        from arena.workers import pool_process

        alive = [p for p in self._processes if p.is_alive()]
        if len(alive) < len(self._processes):
            # A process died (killed, or a hosted bot crashed it): the ids it had taken are
            # unknown, so forget every submission; the sweep finds its matches abandoned and
            # submits them again (a match is claimed once, so a duplicate is harmless).
            self._submitted.clear()
        self._processes = alive
        while len(self._processes) < self.workers:
            process = self._context.Process(
                target=pool_process,
                # os.getpid(): the process ends with this one, however it ends (arena/processes.py).
                args=(self._tasks, self._done, self.database_url, self.hosted, self.slots, os.getpid()),
                daemon=True,
            )
            process.start()
            self._processes.append(process)

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        with self._lock:
            self._start_processes()
            queued = 0
            for match_id in match_ids:
                if match_id in self._submitted and match_id not in replace:
                    continue
                self._submitted.add(match_id)
                self._tasks.put(match_id)
                queued += 1
            return queued

    def waiting(self, match_ids: Collection[int]) -> set[int]:
        """Of ``match_ids``, those handed to the pool and not finished."""
        with self._lock:
            self.errors()
            return self._submitted & set(match_ids)

    def errors(self) -> list[str]:
        """Errors of finished jobs (their matches are marked failed in the store)."""
        with self._lock:
            while True:
                try:
                    self._finished(*self._done.get_nowait())
                except queue.Empty:
                    break
            out, self._errors = self._errors, []
            return out

    def pause(self, seconds: float) -> None:
        """Wait up to ``seconds``, less if a match finishes: the driver then fills its bots'
        slots at once rather than at its next poll."""
        with contextlib.suppress(queue.Empty):
            self._finished(*self._done.get(timeout=seconds))

    def _finished(self, match_id: int, error: str | None) -> None:
        with self._lock:
            self._submitted.discard(match_id)
            if error is not None:
                self._errors.append(error)

    def process_ids(self) -> list[int]:
        """The pool's worker processes now, so that a tool that must never leave processes
        behind (``bench/load.py --watchdog``) can kill them."""
        return [p.pid for p in self._processes if p.pid is not None]

    def close(self, *, cancel: bool = False) -> None:
        if cancel:
            # Matches being played are abandoned: their processes go, and a resume sees
            # their workers dead and plays them again.
            for process in self._processes:
                with contextlib.suppress(Exception):
                    process.kill()
        else:
            with contextlib.suppress(queue.Empty):  # matches not started stay pending
                while True:
                    self._tasks.get(timeout=0.05)
            for _ in self._processes:
                self._tasks.put(None)  # each process stops after its matches in play
        for process in self._processes:
            process.join()
        self._processes = []
        for q in (self._tasks, self._done):
            q.close()
            q.join_thread()
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
        clock: Callable[[], float] = time.monotonic,
    ):
        from redis import Redis
        from rq import Queue

        self.database_url = database_url
        self.hosted = dict(hosted_addresses) if hosted_addresses else None
        self.connection = connection or Redis.from_url(redis_url)
        self.queue = Queue(queue_name, connection=self.connection)
        # Matches seen pending while their job was "started", and since when (by ``clock``).
        self._unclaimed: dict[int, float] = {}
        self._clock = clock

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
        now = self._clock()
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
        asked = set(match_ids)
        self._unclaimed = {m: t for m, t in self._unclaimed.items() if m not in asked} | unclaimed
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

    def waiting(self, match_ids: Collection[int]) -> set[int]:
        """Of ``match_ids``, those whose job is queued, or started and not yet unclaimed
        for ``UNCLAIMED_S`` (the driver passes pending matches only)."""
        ids = list(match_ids)
        if not ids:
            return set()
        now = self._clock()
        out = set()
        for match_id, status in zip(ids, self._statuses([self.job_id(m) for m in ids]), strict=True):
            if status == "started":
                if now - self._unclaimed.setdefault(match_id, now) < UNCLAIMED_S:
                    out.add(match_id)
                continue
            self._unclaimed.pop(match_id, None)
            if status in _WAITING:
                out.add(match_id)
        return out

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
    return EmbeddedBackend(
        url, settings.embedded_workers, hosted_addresses=hosted_addresses, slots=settings.matches_per_worker
    )


def unfinished_matches(database_url: str, tournament_id: int) -> list[int]:
    """Ids of the tournament's pending matches, in play order (deal-major)."""
    with session_scope(database_url) as session:
        return list(
            session.scalars(
                select(Match.id)
                .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
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
    """Start (or resume) the tournament and play every match not done, retrying failed and
    abandoned ones (a finished tournament is left as it is).

    Without ``wait`` every pending match is submitted at once (nobody stays to pace them: a
    match whose bots are busy goes back to the queue, arena.jobs). With ``wait``, keep going
    until no match is pending or running (or the tournament is paused): at each poll submit
    the matches whose bots have free capacity (arena.scheduling), call ``on_progress`` with
    the counts from the store, and sweep for abandoned matches every ``RECOVER_S``. Returns
    the last progress."""
    with session_scope(database_url) as session:
        if get_tournament_row(session, tournament_id).status == TournamentStatus.FINISHED:
            return tournament_progress(session, tournament_id)  # nothing to do: not an error
        start_tournament(session, tournament_id)
        reset = recover_matches(session, tournament_id, retry_failed=True)
    if not wait:
        backend.submit(unfinished_matches(database_url, tournament_id), replace=reset)
    else:
        dead = set(reset)  # their jobs are known dead: replace them when submitted
        _schedule(database_url, tournament_id, backend, dead)
    with session_scope(database_url) as session:
        # Paused after its last match was done: nothing to play, but it must still finish.
        finish_if_complete(session, tournament_id)
        progress = tournament_progress(session, tournament_id)
    if not wait:
        return progress
    swept = time.monotonic()
    while True:
        with session_scope(database_url) as session:
            progress = tournament_progress(session, tournament_id)
            status = get_tournament_row(session, tournament_id).status
        if on_progress is not None:
            on_progress(progress)
        if progress.unfinished == 0 or status != TournamentStatus.RUNNING:
            with session_scope(database_url) as session:  # a sequential test may add pairs here
                finish_if_complete(session, tournament_id)
                progress = tournament_progress(session, tournament_id)
                status = get_tournament_row(session, tournament_id).status
            if progress.unfinished == 0 or status != TournamentStatus.RUNNING:
                break
            backend.submit(unfinished_matches(database_url, tournament_id))  # its next batch
        now = time.monotonic()
        if now - swept >= RECOVER_S:
            swept = now
            with session_scope(database_url) as session:
                dead.update(recover_matches(session, tournament_id))
            reveal_overdue(database_url, tournament_id, getattr(backend, "hosted", None))
        _schedule(database_url, tournament_id, backend, dead)
        pause = getattr(backend, "pause", None)  # a backend that can tell when a match ends
        if pause is not None:
            pause(poll_s)
        else:
            time.sleep(poll_s)
    reveal_overdue(database_url, tournament_id, getattr(backend, "hosted", None))
    with session_scope(database_url) as session:
        finish_if_complete(session, tournament_id)
    return _progress(database_url, tournament_id)


def _schedule(database_url: str, tournament_id: int, backend: Backend, dead: set[int]) -> int:
    """Submit the pending matches whose bots have room now; returns how many."""
    with session_scope(database_url) as session:
        pending = pending_window(session, tournament_id)
    # A backend that cannot tell (one that plays a match as it is submitted) has none waiting.
    ask = getattr(backend, "waiting", None)
    waiting = ask([m for m in pending if m not in dead]) if ask is not None else set()
    with session_scope(database_url) as session:
        chosen = matches_to_start(session, pending, waiting)
    replace = dead.intersection(chosen)
    dead.difference_update(chosen)
    return backend.submit(chosen, replace=replace)


class Sweeper:
    """The driver's sweep, in a background thread, for the tournaments nobody drives: every
    ``interval_s``, for each running tournament of the store, abandoned matches back to
    pending, then the pending matches whose bots have room submitted (what
    :func:`run_tournament` does at each poll), and a tournament whose matches are all done
    finished. Matches handed back to wait for an offline connected bot, matches of a pool
    process that died, and whole tournaments a restarted dashboard finds running are all
    queued again this way. A driver running at the same time does no harm: a match is
    claimed once, and RQ job ids are per match.

    ``backend`` is called for the backend the first time there is something to submit (so
    an idle process starts no pool)."""

    def __init__(self, database_url: str, backend: Callable[[], Backend], interval_s: float = RECOVER_S):
        self.database_url = database_url
        self.backend = backend
        self.interval_s = interval_s
        self._dead: dict[int, set[int]] = {}  # per tournament, as run_tournament's ``dead``
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tonk-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sweep()
            except Exception as exc:  # the store or queue away for a moment: next time
                log.warning("the tournament sweep failed: %s", exc)

    def sweep(self) -> int:
        """One sweep over the running tournaments; returns how many matches it submitted."""
        with session_scope(self.database_url) as session:
            unfinished = dict(
                session.execute(
                    select(Tournament.id, func.count(Match.id))
                    .outerjoin(
                        Match, and_(Match.tournament_id == Tournament.id, Match.status.in_(_UNFINISHED))
                    )
                    .where(Tournament.status == TournamentStatus.RUNNING)
                    .group_by(Tournament.id)
                ).all()
            )
        self._dead = {t: dead for t, dead in self._dead.items() if t in unfinished}
        submitted = 0
        for tournament_id, count in sorted(unfinished.items()):
            if self._stop.is_set():
                break
            # EndDeal of deals whose worker died before it claimed the notice: before the
            # tournament may finish (a finished one is not swept).
            self._reveal_overdue(tournament_id)
            if not count:  # its last match was recorded as it was paused and resumed, say
                with session_scope(self.database_url) as session:
                    finish_if_complete(session, tournament_id)
                continue
            dead = self._dead.setdefault(tournament_id, set())
            with session_scope(self.database_url) as session:
                dead.update(recover_matches(session, tournament_id))
                pending = session.scalar(
                    select(Match.id)
                    .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
                    .limit(1)
                )
            if pending is not None:  # all in play by live workers: nothing to do here
                submitted += _schedule(self.database_url, tournament_id, self.backend(), dead)
        return submitted

    def _reveal_overdue(self, tournament_id: int) -> None:
        with session_scope(self.database_url) as session:
            seeds = overdue_deals(session, tournament_id)
        if seeds:  # rare: only then is the backend (and its pool) wanted, for hosted bots
            reveal_deals(self.database_url, tournament_id, seeds, getattr(self.backend(), "hosted", None))


def _progress(database_url: str, tournament_id: int) -> Progress:
    with session_scope(database_url) as session:
        return tournament_progress(session, tournament_id)


def worker_name(queue_name: str) -> str:
    """Unique per process, and containing the queue name (so tooling can find a queue's
    workers by name)."""
    return f"{_safe(queue_name)}.{_safe(socket.gethostname())}.{os.getpid()}"


def run_worker(
    settings: Settings,
    *,
    burst: bool = False,
    fork: bool = False,
    name: str | None = None,
    slots: int | None = None,
) -> bool:
    """Run an RQ worker on ``settings.queue_name`` until stopped (or, with ``burst``, until
    the queue is empty and its matches are played). Matches run in threads of the worker
    process, ``slots`` (default ``settings.matches_per_worker``) at once, unless ``fork``
    (RQ's fork-per-job, one match at a time, which isolates a crashing hosted bot).
    Returns whether any job ran."""
    from redis import Redis
    from rq import Queue, Worker

    import arena.jobs  # noqa: F401 - imported once here rather than in every job
    from arena.workers import ThreadedWorker

    if not settings.redis_url:
        raise QueueNotConfiguredError(
            f"an RQ worker needs TONK_REDIS_URL, got {settings.redis_url!r}; without it matches run "
            "in the embedded pool"
        )
    connection = Redis.from_url(settings.redis_url)
    queues = [Queue(settings.queue_name, connection=connection)]
    worker_name_ = name or worker_name(settings.queue_name)
    worker: Worker | ThreadedWorker
    if fork:
        worker = Worker(queues, connection=connection, name=worker_name_)
    else:
        worker = ThreadedWorker(
            queues, connection=connection, name=worker_name_, slots=slots or settings.matches_per_worker
        )
    return bool(worker.work(burst=burst, logging_level="WARNING"))

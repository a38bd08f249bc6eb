"""Where match jobs run: a :class:`Backend` takes match ids and plays them somewhere.

Two kinds: RQ workers (``TONK_REDIS_URL`` set; arena/runtime/rq_backend.py) or a local
process pool (:class:`EmbeddedBackend`, the default). Both run the same job
(arena.runtime.jobs.play_match_job); the store, not the queue, is the truth about what is
done, so a backend may be lost (a Redis flush, a killed pool) without losing or
double-counting a match: driving the tournament again (arena/runtime/driver.py) re-submits
whatever is not done, and the job is idempotent.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import queue
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from arena.config import Settings, load_settings
from arena.processes import descendants
from arena.runtime.pool import pool_process
from arena.runtime.rq_backend import RqBackend


class Backend(Protocol):
    """Runs match jobs somewhere."""

    def submit(self, match_ids: Sequence[int], *, replace: Collection[int] = ()) -> int:
        """Queue the matches not already queued or being played; ``replace`` names matches
        whose current job is known dead (it is replaced). Returns how many were queued."""
        ...

    def queued(self, match_ids: Collection[int]) -> set[int]:
        """Of ``match_ids``, those submitted and not yet claimed or finished."""
        ...

    def close(self, *, cancel: bool = False) -> None: ...


class EmbeddedBackend:
    """A local pool of processes, each playing up to ``slots`` matches at once in threads
    (arena.runtime.pool.pool_process). Processes come from a fork server (a clean process that
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
        self._context.set_forkserver_preload(["__main__", "arena.runtime.pool", "arena.runtime.backends"])
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

    def queued(self, match_ids: Collection[int]) -> set[int]:
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

"""Worker processes that play many matches at once, each match in its own thread.

A match spends nearly all its time waiting on bots (a blocking gRPC call releases the GIL),
so one process holds many matches: :data:`~arena.config.Settings.matches_per_worker`
threads each play one match through the same synchronous referee. Two kinds of process:

* :class:`ThreadedWorker`, behind ``tonk worker``: an RQ worker (a ``SimpleWorker``) whose
  main loop dequeues a job only when a thread is free and runs it with RQ's own
  ``prepare_execution``/``perform_job`` in that thread. rq 3 keeps one Execution per running
  job (``worker.executions``), so the started registry, job statuses, results, the failed
  registry and ``rq info`` stay right; a job's timeout is a timer per thread
  (``TimerDeathPenalty``) since SIGALRM only reaches the main thread. A plain ``rq worker``
  still runs the same job, one at a time.
* :func:`pool_process`, the body of each embedded pool process (arena.execution's
  EmbeddedBackend): it takes a match id from the shared task queue only when a thread is
  free, so the processes share the work, and reports each finished job on the done queue;
  a match whose bots are busy goes back to the end of the task queue, as on RQ.
"""

from __future__ import annotations

import random
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.queues import Queue as ProcessQueue
from typing import Any, Final

from rq import SimpleWorker
from rq.job import Job
from rq.queue import Queue
from rq.timeouts import TimerDeathPenalty
from rq.worker import WorkerStatus

from arena.jobs import WAITING, WAITING_PAUSE_S, play_match_job

#: Seconds between the worker's heartbeats while all its threads are busy.
_BUSY_BEAT_S: Final = 5.0
_BURST_RECHECK_S: Final = 0.05


class ThreadedWorker(SimpleWorker):
    """An RQ worker playing up to ``slots`` jobs at once, each in a thread of this process."""

    death_penalty_class = TimerDeathPenalty

    def __init__(self, *args: Any, slots: int = 32, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.slots = max(1, slots)
        self._free = threading.Semaphore(self.slots)
        self._threads = ThreadPoolExecutor(self.slots, thread_name_prefix="tonk-match")
        self._running = 0
        self._count_lock = threading.Lock()

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        while True:
            result = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
            if result is not None or timeout is not None or not self._running:
                return result
            # Burst mode found the queue empty while jobs run: one may still put its match
            # back (its bots were busy, arena.jobs), so the burst ends only when all are done.
            time.sleep(_BURST_RECHECK_S)

    def execute_job(self, job: Job, queue: Queue) -> None:
        """Start ``job`` in a thread, then return once a thread is free for the next one
        (heartbeating meanwhile), so the main loop never dequeues a job it cannot start."""
        self._free.acquire()  # free: the previous call waited for it
        try:
            execution = self.prepare_execution(job)  # in the started registry before we return
            with self._count_lock:
                self._running += 1
            self._threads.submit(self._perform, job, queue, execution)
        except BaseException:
            self._free.release()
            raise
        while not self._free.acquire(timeout=_BUSY_BEAT_S):
            self.heartbeat()
        self._free.release()

    def _perform(self, job: Job, queue: Queue, execution: Any) -> None:
        try:
            self.perform_job(job, queue, execution)
        finally:
            with self._count_lock:
                self._running -= 1
            if not self.executions:
                self.set_state(WorkerStatus.IDLE)
            self._free.release()

    def teardown(self) -> None:
        # A warm shutdown (SIGTERM, or burst mode with an empty queue) lets the matches in
        # play finish and be recorded first.
        self._threads.shutdown(wait=True)
        super().teardown()  # type: ignore[no-untyped-call]


def pool_process(
    tasks: ProcessQueue[int | None],
    done: ProcessQueue[tuple[int, str | None]],
    database_url: str,
    hosted_addresses: dict[str, str] | None,
    slots: int,
    owner: int | None = None,
) -> None:
    """Play the match ids read from ``tasks`` (None stops), ``slots`` at a time; report
    ``(match_id, None)`` or ``(match_id, error text)`` on ``done`` for each. ``owner``: the
    process whose pool this is; this one exits when it does, even by SIGKILL (no task would
    ever come, and a process left waiting would hold the fork server alive too)."""
    if owner is not None:
        from arena.processes import exit_with

        exit_with(owner)
    free = threading.Semaphore(max(1, slots))

    def play(match_id: int) -> None:
        error: str | None = None
        try:
            if play_match_job(match_id, database_url, hosted_addresses) == WAITING:
                # Its bots are busy (nobody paced the submissions, e.g. the dashboard's):
                # back to the end of the queue after a pause, still submitted for the parent.
                time.sleep(WAITING_PAUSE_S * (0.5 + random.random()))
                tasks.put(match_id)
                return
        except Exception as exc:  # the store has it (the match is failed); the parent logs it
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:2000]
        finally:
            free.release()
        done.put((match_id, error))

    with ThreadPoolExecutor(max(1, slots), thread_name_prefix="tonk-match") as threads:
        while True:
            free.acquire()  # take work only when a thread is free for it
            match_id = tasks.get()
            if match_id is None:
                break
            threads.submit(play, match_id)

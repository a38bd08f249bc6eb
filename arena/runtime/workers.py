"""Worker processes that play many matches at once, each match in its own thread.

A match spends nearly all its time waiting on bots (a blocking gRPC call releases the GIL),
so one process holds many matches: :data:`~arena.config.Settings.matches_per_worker`
threads each play one match through the same synchronous referee.

:class:`ThreadedWorker`, behind ``tonk worker`` (:func:`run_worker`), is an RQ worker (a
  ``SimpleWorker``) whose main loop dequeues a job only when a thread is free and runs it with RQ's own
  ``prepare_execution``/``perform_job`` in that thread. rq 3 keeps one Execution per running
  job (``worker.executions``), so the started registry, job statuses, results, the failed
  registry and ``rq info`` stay right; a job's timeout is a timer per thread
  (``TimerDeathPenalty``) since SIGALRM only reaches the main thread. A plain ``rq worker``
  still runs the same job, one at a time. The embedded pool's processes do the same without
  RQ (arena/runtime/pool.py).

SIGTERM and SIGINT stop a ``ThreadedWorker`` warmly, each time (the matches in play are played
out and recorded first; SIGKILL is the cold stop, whose matches are replayed): its
handlers only note the signal (arena/runtime/stopping.py), and the main loop waits on the
queue a second at a time to see it.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from rq import SimpleWorker
from rq.job import Job
from rq.queue import Queue
from rq.timeouts import TimerDeathPenalty
from rq.utils import now
from rq.worker import WorkerStatus

from arena.config import Settings
from arena.runtime.rq_backend import QueueNotConfiguredError, safe_name
from arena.runtime.stopping import StopSignals

#: Seconds between the worker's heartbeats while all its threads are busy.
_BUSY_BEAT_S: Final = 5.0
_BURST_RECHECK_S: Final = 0.05
#: Seconds the main loop waits on the queue at a time before it looks for a stop.
_STOP_SLICE_S: Final = 1
#: Seconds the worker's command channel is listened to at a time (see subscribe).
_LISTEN_S: Final = 1.0


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
        self._stop_signals = StopSignals()

    def _install_signal_handlers(self) -> None:
        # rq's handlers raise StopRequested in whatever the main thread runs: lost in a
        # weakref callback (the worker ran on), or, the worker busy, not raised at all while
        # the main thread waited up to dequeue_timeout (405 s) on an empty queue. Ours only
        # note the signal; the main thread sees the stop within a dequeue slice.
        if self._stop_signals.install():
            self._stop_signals.when_requested(self._request_warm_stop, name="tonk-worker-stop")

    def _request_warm_stop(self) -> None:
        self.log.info("Worker %s: stopping after its %d matches in play", self.name, self._running)
        self._stop_requested = True
        self._shutdown_requested_date = now()
        self.set_shutdown_requested_date()  # type: ignore[no-untyped-call]  # for `rq info`

    def subscribe(self) -> None:
        """rq's subscription to the worker's command channel, listened to a second at a time
        (rq: 60 s). rq's teardown unsubscribes, which leaves the listening thread waiting a
        whole listen for the subscription to come back, then waits for that thread: a
        stopping worker hung up to a minute on it (longer than compose gives it)."""
        self.log.info("Worker %s: subscribing to channel %s", self.name, self.pubsub_channel_name)
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(  # type: ignore[assignment]
            sleep_time=_LISTEN_S, daemon=True, exception_handler=self._pubsub_exception_handler
        )

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        idle_since = time.monotonic()
        while not self._stop_requested:
            if timeout is None:  # burst mode: a look, no wait
                result = super().dequeue_job_and_maintain_ttl(None, max_idle_time)
                if result is not None or not self._running:
                    return result
                # The queue is empty while jobs run: one may still put its match back (its
                # bots were busy, arena.play.lifecycle), so the burst ends only when all are done.
                time.sleep(_BURST_RECHECK_S)
                continue
            # A wait for a job is cut in slices (rq's own ends after max_idle_time) to see a stop.
            result = super().dequeue_job_and_maintain_ttl(min(timeout, _STOP_SLICE_S), _STOP_SLICE_S)
            if result is not None:
                return result
            if max_idle_time is not None and time.monotonic() - idle_since >= max_idle_time:
                return None
        return None

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
        try:
            super().teardown()  # type: ignore[no-untyped-call]
        finally:
            self._stop_signals.close()


def worker_name(queue_name: str) -> str:
    """Unique per process, and containing the queue name (so tooling can find a queue's
    workers by name)."""
    return f"{safe_name(queue_name)}.{safe_name(socket.gethostname())}.{os.getpid()}"


def clear_dead_namesake(connection: Any, name: str) -> bool:
    """Mark dead the registration a SIGKILLed worker of this ``name`` on this host left behind.

    RQ keeps a worker's key until its TTL runs out (minutes) and refuses a new worker of the
    same name meanwhile ("There exists an active worker named ..."), so a supervisor restarting
    ``tonk worker --name X`` after a kill -9 would fail until then. Only a registration whose
    host is this one and whose process is gone is cleared; a live namesake, or one on another
    host (whose process cannot be checked from here), is left for RQ to refuse. Returns whether
    one was cleared. The dead worker's matches are not touched: the match heartbeats hand them
    on (arena/play/heartbeat.py)."""
    from rq import Worker

    from arena.processes import alive

    key = Worker.redis_worker_namespace_prefix + name
    fields = connection.hmget(key, "hostname", "pid", "death")
    hostname, pid, death = (f.decode() if isinstance(f, bytes) else f for f in fields)
    if hostname is None or death is not None or hostname != socket.gethostname():
        return False
    if pid is not None and pid.isdigit() and alive(int(pid)):
        return False
    dead = Worker.find_by_key(key, connection=connection)
    if dead is None:  # expired meanwhile
        return False
    dead.register_death()  # type: ignore[no-untyped-call]  # out of its queues' sets, with a death time, gone in 60 s
    return True


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

    if not settings.redis_url:
        raise QueueNotConfiguredError(
            f"an RQ worker needs TONK_REDIS_URL, got {settings.redis_url!r}; without it matches run "
            "in the embedded pool"
        )
    connection = Redis.from_url(settings.redis_url)
    queues = [Queue(settings.queue_name, connection=connection)]
    worker_name_ = name or worker_name(settings.queue_name)
    if name:
        clear_dead_namesake(connection, name)
    worker: Worker | ThreadedWorker
    if fork:
        # A job's process ends with its match: a template or a spare started there would serve
        # no later match (arena/sandbox/spares.py), only cost a start each.
        os.environ.setdefault("TONK_SANDBOX_TEMPLATES", "0")
        os.environ.setdefault("TONK_SANDBOX_SPARES", "0")
        worker = Worker(queues, connection=connection, name=worker_name_)
    else:
        worker = ThreadedWorker(
            queues, connection=connection, name=worker_name_, slots=slots or settings.matches_per_worker
        )
    return bool(worker.work(burst=burst, logging_level="WARNING"))

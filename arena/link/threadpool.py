"""A thread pool whose idle threads end: the gateway's store, GetInfo and admission threads.

``concurrent.futures.ThreadPoolExecutor`` starts threads on demand up to ``max_workers`` and
keeps every one until shutdown. A flood of connecting bots (issue 35) grew the dashboard's
embedded gateway from 18 threads to 56, and it stayed at 55 once the flood was over: each
idle thread held its stack and its place in every thread listing for the process's life.
:class:`IdleExitThreadPool` starts threads the same way and ends one once it has waited
``idle_s`` seconds without work, so a burst's threads are gone a little after the burst.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, Final, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

#: How long a thread waits for work before it ends.
IDLE_S: Final = 10.0


class PoolShutDownError(RuntimeError):
    """Work submitted to a pool that was shut down (ThreadPoolExecutor's RuntimeError)."""


class IdleExitThreadPool(Executor):
    """At most ``max_workers`` threads named ``{prefix}_{n}``, each started when work waits
    with no idle thread to take it, and ended after ``idle_s`` seconds with nothing to do.
    Threads are daemons: a process exits without waiting for work in hand (the gateway's
    own ``stop`` waits for what it needs)."""

    def __init__(self, max_workers: int, thread_name_prefix: str, idle_s: float = IDLE_S) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.prefix = thread_name_prefix
        self.idle_s = idle_s
        self._cond = threading.Condition(threading.Lock())
        self._work: collections.deque[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]]
        self._work = collections.deque()
        self._threads: set[threading.Thread] = set()
        self._idle = 0  # threads waiting for work
        self._started = 0  # threads ever started (their names' numbers)
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        with self._cond:
            if self._shutdown:
                raise PoolShutDownError("cannot schedule new work after shutdown")
            self._work.append((future, fn, args, kwargs))
            # Each waiting piece of work needs a thread: an idle one (woken here), else a new one.
            if self._idle >= len(self._work):
                self._cond.notify()
            elif len(self._threads) < self.max_workers:
                self._start()
        return future

    def _start(self) -> None:
        thread = threading.Thread(target=self._run, name=f"{self.prefix}_{self._started}", daemon=True)
        self._started += 1
        self._threads.add(thread)
        thread.start()

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            with self._cond:
                while not self._work:
                    if self._shutdown:
                        self._threads.discard(me)
                        return
                    self._idle += 1
                    woken = self._cond.wait(self.idle_s)
                    self._idle -= 1
                    if not woken and not self._work:  # idle for idle_s: this thread is not needed
                        self._threads.discard(me)
                        return
                future, fn, args, kwargs = self._work.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:
                    future.set_exception(exc)
            del future, fn, args, kwargs  # nothing of the work is held while idle

    @property
    def threads(self) -> int:
        """Threads alive in the pool now (busy or idle)."""
        with self._cond:
            return len(self._threads)

    @property
    def idle(self) -> int:
        """Threads waiting for work now."""
        with self._cond:
            return self._idle

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._cond:
            self._shutdown = True
            if cancel_futures:
                while self._work:
                    self._work.popleft()[0].cancel()
            self._cond.notify_all()
            threads = list(self._threads)
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()

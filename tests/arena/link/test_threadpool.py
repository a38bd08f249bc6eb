"""IdleExitThreadPool (arena/link/threadpool.py): every piece of work runs, on at most max_workers
threads, and the threads a burst started end once idle; shutdown as ThreadPoolExecutor's."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest
from helpers.net import wait_for

from arena.link.threadpool import IdleExitThreadPool, PoolShutDownError


def test_a_burst_runs_everything_on_at_most_max_workers_threads_which_then_end() -> None:
    pool = IdleExitThreadPool(8, "burst", idle_s=0.2)
    gate = threading.Event()
    seen: set[str] = set()
    lock = threading.Lock()

    def work(n: int) -> int:
        gate.wait(10)
        with lock:
            seen.add(threading.current_thread().name)
        return n * n

    futures = [pool.submit(work, n) for n in range(100)]
    assert pool.threads == 8  # all busy at the gate: no more than max_workers were started
    gate.set()
    assert [f.result(10) for f in futures] == [n * n for n in range(100)]
    assert len(seen) <= 8 and all(name.startswith("burst_") for name in seen)
    wait_for("the idle threads to end", lambda: pool.threads == 0, timeout=30)
    assert not [t for t in threading.enumerate() if t.name.startswith("burst_")]
    # An emptied pool starts threads again for new work.
    assert pool.submit(work, 3).result(10) == 9
    pool.shutdown()
    assert pool.threads == 0


def test_an_idle_thread_takes_new_work_rather_than_a_new_thread() -> None:
    pool = IdleExitThreadPool(8, "reuse", idle_s=30)
    for n in range(20):
        assert pool.submit(lambda n=n: n + 1).result(10) == n + 1
        # One piece at a time: each finds the thread the last one used waiting.
        wait_for("the thread to wait for work", lambda: pool.idle == 1, timeout=10, poll=0.01)
    assert pool.threads == 1
    pool.shutdown()


def test_errors_reach_the_caller_and_the_thread_carries_on() -> None:
    pool = IdleExitThreadPool(1, "errors", idle_s=30)

    def fail() -> None:
        raise KeyError("nope")

    with pytest.raises(KeyError, match="nope"):
        pool.submit(fail).result(10)
    assert pool.submit(int, "7").result(10) == 7
    pool.shutdown()


def test_shutdown_cancels_waiting_work_when_asked_and_refuses_new_work() -> None:
    pool = IdleExitThreadPool(1, "stop", idle_s=30)
    started, gate = threading.Event(), threading.Event()

    def hold() -> bool:
        started.set()
        return gate.wait(10)

    running = pool.submit(hold)
    assert started.wait(10)
    waiting = pool.submit(int, "1")
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(CancelledError):
        waiting.result(10)
    gate.set()
    assert running.result(10) is True
    with pytest.raises(PoolShutDownError):
        pool.submit(int, "2")
    wait_for("the thread to end", lambda: pool.threads == 0, timeout=30)


def test_a_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="max_workers must be at least 1, got 0"):
        IdleExitThreadPool(0, "none")

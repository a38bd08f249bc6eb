"""StopSignals (arena/runtime/stopping.py): a signal is noted, never raised; a watcher thread
acts on it; ``close`` puts the handlers back. Real signals to this process."""

from __future__ import annotations

import os
import signal
import threading

from helpers.net import wait_for

from arena.runtime.stopping import StopSignals


def test_a_signal_is_noted_and_the_watcher_acts_on_it_outside_the_handler() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    stop = StopSignals()
    acted: list[str] = []
    assert stop.install()
    try:
        stop.when_requested(lambda: acted.append(threading.current_thread().name), name="watcher")
        assert not stop.requested and not stop.wait(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt: only a note
        assert stop.wait(10) and stop.received == [signal.SIGINT]
        wait_for("the watcher", lambda: acted == ["watcher"], timeout=10)
        os.kill(os.getpid(), signal.SIGTERM)  # a second one is noted again, and acted on once
        assert stop.wait(10)
        wait_for("the second note", lambda: stop.received == [signal.SIGINT, signal.SIGTERM], timeout=10)
        assert acted == ["watcher"]
    finally:
        stop.close()
    assert {s: signal.getsignal(s) for s in before} == before


def test_outside_the_main_thread_nothing_is_installed() -> None:
    installed: list[bool] = []
    thread = threading.Thread(target=lambda: installed.append(StopSignals().install()))
    thread.start()
    thread.join(10)
    assert installed == [False]


def test_a_closed_watcher_never_acts() -> None:
    stop = StopSignals()
    acted: list[int] = []
    watcher = stop.when_requested(lambda: acted.append(1))
    stop.close()
    watcher.join(10)
    stop.received.append(signal.SIGTERM)  # as the handler would
    assert not watcher.is_alive() and acted == []

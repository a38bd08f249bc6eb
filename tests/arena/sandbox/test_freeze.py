"""The freezer of a sandbox (arena/sandbox/freeze.py) on a real process tree: a parent and a
child that left its session, both burning CPU, stopped by signals (the way without a control
group; the control group's freezer is exercised by tests/arena/play/test_hosted_own_clock.py).
A sandbox that serves several matches is frozen only when none of their calls is in flight."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from arena import processes
from arena.sandbox.freeze import Freezer

# A parent that starts a child in a session of its own, then both spin.
TREE = """
import os
if os.fork() == 0:
    os.setsid()
while True:
    pass
"""


@pytest.fixture
def tree() -> Iterator[int]:
    """The pid of a process (standing for bubblewrap) whose descendants spin."""
    root = subprocess.Popen(["/bin/sh", "-c", f"{sys.executable} -c '{TREE}' & wait"], start_new_session=True)
    try:
        for _ in range(500):
            if len(processes.descendants(root.pid)) >= 2:
                break
            time.sleep(0.01)
        yield root.pid
    finally:
        for p in processes.descendants(root.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
        root.kill()
        root.wait()


def states(root: int) -> list[str]:
    return sorted(p.state for p in processes.descendants(root))


def test_signals_stop_every_process_below_the_root_and_let_them_run_again(tree: int) -> None:
    freezer = Freezer(None, tree)
    assert freezer.method == "signals"
    assert len(states(tree)) == 2
    freezer.enable()
    assert freezer.frozen and states(tree) == ["T", "T"]
    with freezer.awake():
        assert not freezer.frozen
        time.sleep(0.05)
        assert "T" not in states(tree)
    assert states(tree) == ["T", "T"]
    freezer.disable()
    time.sleep(0.05)
    assert "T" not in states(tree)


def test_a_shared_sandbox_is_frozen_only_when_no_call_of_any_match_is_in_flight(tree: int) -> None:
    freezer = Freezer(None, tree)
    freezer.enable()
    first_in, second_done, first_out = threading.Event(), threading.Event(), threading.Event()

    def first_match() -> None:
        with freezer.awake():
            first_in.set()
            second_done.wait(10)
        first_out.set()

    thread = threading.Thread(target=first_match)
    thread.start()
    try:
        assert first_in.wait(10)
        with freezer.awake():  # the second match's call, while the first's is in flight
            pass
        # The second call ended with the first still in flight: nothing was stopped.
        assert not freezer.frozen and "T" not in states(tree)
        second_done.set()
        assert first_out.wait(10)
        assert freezer.frozen and states(tree) == ["T", "T"]
    finally:
        second_done.set()
        thread.join()
        freezer.disable()

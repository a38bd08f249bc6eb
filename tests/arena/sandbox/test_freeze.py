"""The freezer of a sandbox (arena/sandbox/freeze.py) on a real process tree: a parent and a
child that left its session, both burning CPU, stopped by signals (the way without a control
group) and by cgroup v2's ``cgroup.freeze`` wherever the machine has a v2 tree (a v1 machine's
freezer runs in tests/arena/play/test_hosted_own_clock.py, with the sandbox's own group). A
sandbox that serves several matches is frozen only when none of their calls is in flight."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena import processes
from arena.sandbox import cgroups
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


def v2_tree() -> Path | None:
    """A cgroup v2 hierarchy this test may make a group in: the root where the machine runs v2
    alone, or the unified one a hybrid (v1) machine mounts beside its controllers."""
    for root in (cgroups.ROOT, cgroups.ROOT / "unified"):
        v2 = (root / "cgroup.max.depth").exists()  # a v1 hierarchy has no such file
        if v2 and os.access(root, os.W_OK):
            return root
    return None


def cpu_ticks(pid: int) -> int:
    fields = (processes.PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_cgroup_v2s_freezer_stops_every_process_of_the_group(tree: int) -> None:
    """``cgroup.freeze`` (the v2 path of cgroups.Group.freeze), on whatever v2 tree this
    machine has: the spinning tree gets no CPU while frozen, and runs again once thawed."""
    root = v2_tree()
    if root is None:
        pytest.skip("no writable cgroup v2 hierarchy on this machine")
    folder = root / f"tonk-test-freeze-{os.getpid()}"
    folder.mkdir()
    group = cgroups.Group([folder])
    try:
        pids = [p.pid for p in processes.descendants(tree)]
        for pid in pids:
            (folder / "cgroup.procs").write_text(str(pid))
        assert group.can_freeze
        assert group.freeze(True)
        before = [cpu_ticks(pid) for pid in pids]
        time.sleep(0.3)
        assert [cpu_ticks(pid) for pid in pids] == before
        assert group.freeze(False)
        time.sleep(0.3)
        assert all(cpu_ticks(pid) > b for pid, b in zip(pids, before, strict=True))
    finally:
        group.freeze(False)
        for pid in group.pids():  # back to the root, so the folder can go
            with contextlib.suppress(OSError):
                (root / "cgroup.procs").write_text(str(pid))
        folder.rmdir()


def test_a_process_that_joined_the_group_since_its_last_freeze_is_stopped_by_the_next() -> None:
    """The machine's own kind of group (v1 here is stopped by signals, listed from the group):
    a process that joins between two freezes a moment apart, as a bot's fork does, is in the
    group's list at once and is stopped by the next. v1 keeps a list an open file read for as
    long as it is read again within a second, so a list read from a kept descriptor missed it."""
    group = cgroups.make_group()
    if group is None:
        pytest.skip("this machine does not let the worker make control groups")
    first, second = (subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2))
    try:
        for procs in group.procs_files:
            procs.write_text(str(first.pid))
        freezer = Freezer(group, os.getpid())  # the root, which is not in the group
        freezer.enable()  # reads the group's list (v1), or freezes it whole (v2)
        with freezer.awake():
            assert group.members() == [first.pid]
            for procs in group.procs_files:
                procs.write_text(str(second.pid))
            assert sorted(group.members()) == sorted([first.pid, second.pid])
        assert freezer.frozen
        before = cpu_ticks(second.pid)
        time.sleep(0.3)
        assert cpu_ticks(second.pid) == before, "the process that joined ran while frozen"
        freezer.disable()
    finally:
        group.remove()  # kills both
        for spinner in (first, second):
            spinner.kill()
            spinner.wait(10)

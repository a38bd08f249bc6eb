"""Small /proc files read from kept descriptors (arena/sandbox/procfiles.py), on real processes:
a kept read is the file now (not the first read's copy), a task that ended reads as gone, and
no descriptor outlives the tasks it was kept for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from arena.sandbox.freeze import _state_in
from arena.sandbox.procfiles import ProcFiles


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_kept_read_is_the_file_now(sleeper: subprocess.Popen[bytes]) -> None:
    files = ProcFiles("stat")
    try:
        assert _state_in(files.read(sleeper.pid)) in {"S", "R"}
        os.kill(sleeper.pid, signal.SIGSTOP)
        for _ in range(200):  # the stop is taken when the process next runs
            if _state_in(files.read(sleeper.pid)) == "T":
                break
            time.sleep(0.01)
        assert _state_in(files.read(sleeper.pid)) == "T"  # the same descriptor, read again
        os.kill(sleeper.pid, signal.SIGCONT)
        for _ in range(200):
            if _state_in(files.read(sleeper.pid)) != "T":
                break
            time.sleep(0.01)
        assert _state_in(files.read(sleeper.pid)) in {"S", "R"}
    finally:
        files.close()


def test_a_threads_schedstat_grows_through_a_kept_descriptor() -> None:
    files = ProcFiles("schedstat")
    try:
        me = os.getpid()
        first = files.read(me)
        assert first is not None
        began = time.thread_time()
        while time.thread_time() - began < 0.05:  # on a CPU: field 0 grows
            pass
        later = files.read(me)
        assert later is not None and int(later.split()[0]) > int(first.split()[0])
    finally:
        files.close()


def test_an_ended_task_reads_as_gone_and_its_descriptor_is_let_go() -> None:
    before = open_fds()
    files = ProcFiles("stat")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: its number names nothing now
    assert files.read(proc.pid) is None
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as live:
        try:
            assert files.read(live.pid) is not None
            assert len(open_fds() - before) == 1  # one kept descriptor
            files.keep_only([])  # it is no longer listed: its descriptor is closed
            assert open_fds() == before
            assert files.read(live.pid) is not None  # and opened again if asked
        finally:
            live.kill()
    live.wait()
    assert files.read(live.pid) is None  # ended since: the kept descriptor says so
    files.close()
    assert open_fds() == before
    assert files.read(os.getpid()) is None  # closed: nothing is opened again

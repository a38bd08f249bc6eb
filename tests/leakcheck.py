"""No test leaves a process running: a pytest plugin (loaded by conftest.py).

A process belongs to the session if it descends from the pytest process, or if it was started
with this session's ``TONK_TEST_SESSION`` in its environment (which finds it after it was
orphaned, when its parent is 1). Two checks:

- after each test, a process of the session that was not there before the test, and is still
  running a few seconds later, fails the test (an error at its teardown naming the processes),
  and is killed, so the next test starts clean and is not blamed. A process started meanwhile
  by one that was already there (a browser of a session fixture starting a helper process) is
  that fixture's, not the test's: the session's last look still covers it;
- at the end of the session, any process of the session left running fails the run.

The resource tracker multiprocessing starts for this process is not a test's: it serves the
whole process and ends with it. It is stopped before the session's last look.
"""

from __future__ import annotations

import gc
import os
import time
import uuid
from collections.abc import Iterator

import pytest

from arena.processes import ProcessInfo, all_processes, descendants, kill_all, with_environment

MARKER = "TONK_TEST_SESSION"
#: How long a process the test asked to stop may take to go before it counts as left behind.
GRACE_S = float(os.environ.get("TONK_TEST_LEAK_GRACE_S", "5"))


def session_processes() -> dict[int, ProcessInfo]:
    table = all_processes()
    mine = descendants(os.getpid(), table)
    value = os.environ.get(MARKER)
    if value:
        mine += with_environment(MARKER, value, table)
    exempt = {os.getpid(), _resource_tracker_pid()}
    return {p.pid: p for p in mine if p.running and p.pid not in exempt}


def _resource_tracker_pid() -> int | None:
    import multiprocessing.resource_tracker as tracker

    pid: int | None = getattr(tracker._resource_tracker, "_pid", None)
    return pid


def still_running(pids: set[int], grace_s: float = GRACE_S) -> dict[int, ProcessInfo]:
    """Those of ``pids`` (of the session) still running after at most ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        left = {pid: p for pid, p in session_processes().items() if pid in pids}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def _started_by(pid: int, older: set[int], table: dict[int, ProcessInfo]) -> bool:
    """Whether ``pid`` descends from one of the ``older`` processes (below this pytest)."""
    seen: set[int] = set()
    parent = table[pid].ppid
    while parent in table and parent not in seen:
        if parent in older:
            return True
        seen.add(parent)
        parent = table[parent].ppid
    return parent in older


def describe(processes: dict[int, ProcessInfo]) -> str:
    return "\n".join(f"  pid {p.pid} (parent {p.ppid}): {p.command()[:200]}" for p in processes.values())


def pytest_configure(config: pytest.Config) -> None:
    # Inherited by every process the tests start (unless a test hands a child an environment
    # of its own, which the process tree still covers while its parent lives). A new value
    # each session, so a pytest run by a test keeps its processes apart from its caller's.
    os.environ[MARKER] = uuid.uuid4().hex


@pytest.fixture(autouse=True)
def _no_process_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    before = set(session_processes())
    yield
    now = session_processes()
    new = {pid for pid in set(now) - before if not _started_by(pid, before, now)}
    if not new:
        return
    left = still_running(new)
    if left:
        report = describe(left)
        kill_all(left)
        pytest.fail(f"{request.node.nodeid} left {len(left)} process(es) running:\n{report}", pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    gc.collect()  # pools and queues nobody holds any more let go of their semaphores
    import multiprocessing.resource_tracker as tracker

    stop = getattr(tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()
    left = still_running(set(session_processes()))
    if left:
        report = describe(left)
        kill_all(left)
        session.config.get_terminal_writer().line(
            f"\nprocesses left running at the end of the session (killed now):\n{report}", red=True
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

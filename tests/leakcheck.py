"""No test leaves a process running: a pytest plugin (loaded by conftest.py).

A process belongs to the session if it descends from the pytest process, or if it was started
with this session's ``TONK_TEST_SESSION`` in its environment (which finds it after it was
orphaned, when its parent is 1). Under pytest-xdist each worker is a session of its own, and
the run as a whole (the controller, or a pytest without workers) also has ``TONK_TEST_RUN``,
which every worker and what it starts inherit: the run's last look finds an orphan of any
worker by it. Two checks:

- after each test, a process of the session that was not there before the test, and is still
  running a few seconds later, fails the test (an error at its teardown naming the processes),
  and is killed, so the next test starts clean and is not blamed. A process started meanwhile
  by one that was already there (a browser of a session fixture starting a helper process) is
  that fixture's, not the test's: the session's last look still covers it;
- at the end of the session, any process of the session left running fails the run.

The resource tracker multiprocessing starts for this process is not a test's: it serves the
whole process and ends with it. It is stopped before the session's last look.

Both need the session to end. When the run itself is killed, two more things hold:

- the run's first pytest starts a watchdog (arena/processes.py's ``watch_run``): when that
  pytest ends, however it ends (SIGKILL included), every process carrying the run's mark or
  seen in its tree is killed (xdist's workers and all they started, in whatever session) and
  the run's temporary folder (tests/scratch.py) is removed. Every pytest of the run adopts its
  orphans (``adopt_orphans``), so what daemonises stays in its tree; and what the tests start
  through ``arena.processes.spawn`` (every helper does) dies the moment its starter does;
- SIGTERM ends a pytest as Ctrl-C does (KeyboardInterrupt in the main thread: the fixtures'
  finalizers run), and xdist's controller passes it on to its workers first, as a terminal
  passes Ctrl-C to its whole process group.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest
import scratch

from arena.processes import (
    ProcessInfo,
    adopt_orphans,
    all_processes,
    descendants,
    kill_all,
    watch_run,
    with_environment,
)

MARKER = "TONK_TEST_SESSION"
#: The whole run's marker: set by the pytest that the run started, inherited by xdist's workers.
RUN_MARKER = "TONK_TEST_RUN"
#: How long a process the test asked to stop may take to go before it counts as left behind.
GRACE_S = float(os.environ.get("TONK_TEST_LEAK_GRACE_S", "5"))


def session_processes(marker: str = MARKER) -> dict[int, ProcessInfo]:
    table = all_processes()
    mine = descendants(os.getpid(), table)
    value = os.environ.get(marker)
    if value:
        mine += with_environment(marker, value, table)
    exempt = {os.getpid(), _resource_tracker_pid()}
    return {p.pid: p for p in mine if p.running and p.pid not in exempt}


def _resource_tracker_pid() -> int | None:
    import multiprocessing.resource_tracker as tracker

    pid: int | None = getattr(tracker._resource_tracker, "_pid", None)
    return pid


def still_running(pids: set[int], grace_s: float = GRACE_S, marker: str = MARKER) -> dict[int, ProcessInfo]:
    """Those of ``pids`` (of the session) still running after at most ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        left = {pid: p for pid, p in session_processes(marker).items() if pid in pids}
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


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # set by pytest-xdist in its workers only


def pytest_configure(config: pytest.Config) -> None:
    # Inherited by every process the tests start (unless a test hands a child an environment
    # of its own, which the process tree still covers while its parent lives). A new value
    # each session, so a pytest run by a test keeps its processes apart from its caller's.
    os.environ[MARKER] = uuid.uuid4().hex
    if not _is_worker(config):  # a worker keeps its run's; a pytest run by a test starts its own
        os.environ[RUN_MARKER] = os.environ[MARKER]
        watch_run(scratch.made())
    adopt_orphans()  # what daemonises stays in the tree: checked after each test, seen by the watchdog
    _end_on_sigterm(config)


def _end_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM raises KeyboardInterrupt in the main thread, once (a second one while the
    finalizers run is let pass: SIGKILL is the hard stop, and the watchdog cleans up then)."""
    if threading.current_thread() is not threading.main_thread():
        return
    received = False

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        if received:
            return
        received = True
        for pid in _worker_pids(config):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)


def _worker_pids(config: pytest.Config) -> list[int]:
    """The pids of pytest-xdist's workers, in its controller (none elsewhere, or without xdist)."""
    dsession = config.pluginmanager.getplugin("dsession")
    group = getattr(getattr(dsession, "nodemanager", None), "group", None)
    pids = []
    for gateway in group or ():
        popen = getattr(getattr(gateway, "_io", None), "popen", None)  # execnet's popen gateways
        if popen is not None:
            pids.append(popen.pid)
    return pids


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


#: What each xdist worker found left at its end (workers report; the controller fails the run).
_LEFT_BY_WORKERS: list[str] = []


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
def pytest_testnodedown(node: Any, error: object) -> None:
    report = getattr(node, "workeroutput", {}).get("leaked_processes")
    if report:
        _LEFT_BY_WORKERS.append(f"{node.gateway.id}:\n{report}")


@pytest.hookimpl(trylast=True)  # after pytest-xdist has stopped its workers
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    gc.collect()  # pools and queues nobody holds any more let go of their semaphores
    import multiprocessing.resource_tracker as tracker

    stop = getattr(tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()
    worker = _is_worker(session.config)
    marker = MARKER if worker else RUN_MARKER
    left = still_running(set(session_processes(marker)), marker=marker)
    reports = [*_LEFT_BY_WORKERS, describe(left)] if left else list(_LEFT_BY_WORKERS)
    if left:
        kill_all(left)
    if not reports:
        return
    if worker:  # its exit status does not reach the run's: the controller reads this instead
        session.config.workeroutput["leaked_processes"] = "\n".join(reports)  # type: ignore[attr-defined]
        return
    session.config.get_terminal_writer().line(
        "\nprocesses left running at the end of the session (killed now):\n" + "\n".join(reports), red=True
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED

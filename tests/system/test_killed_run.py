"""A killed test run leaves nothing behind (issue #41): a pytest ended from outside, by SIGTERM
(then SIGKILL if it lingers, as a CI's time limit does) or by SIGKILL at once, with xdist's
workers or without, leaves no process of its run running, in whatever session it was started,
and no folder in its temporary folder.

The run is tests/system/killed_run_target.py in a pytest of its own: a private
``redis-server``, a bot, ``tonk gateway`` and ``tonk worker``, each started by the suite's own
helpers, all up when it is killed. Its processes are found by a mark of this test's in their
environment (what they inherit, however they re-parent themselves) and by the pids it recorded
(what a process given an environment of its own would escape the first by). How they end is
tests/leakcheck.py's and arena/processes.py's business (the watchdog, the parent-death signal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from helpers.net import wait_for
from helpers.paths import TESTS
from leakcheck import GRACE_S, MARKER, RUN_MARKER

from arena.processes import ProcessInfo, process_info, spawn, with_environment

pytestmark = [pytest.mark.slow, pytest.mark.redis]

ROOT = TESTS.parent
TARGET = TESTS / "system" / "killed_run_target.py"
#: Given to the killed run by this test: inherited by every process of it.
KILLED_RUN = "TONK_KILLED_RUN"
#: How long a SIGTERM'd run may take to run its finalizers before it is SIGKILLed.
TERM_GRACE_S = 60.0


def left_running(mark: str, recorded: list[tuple[int, int]]) -> list[ProcessInfo]:
    """The run's processes still running: by the mark, and by the recorded (pid, start)."""
    found = {p.pid: p for p in with_environment(KILLED_RUN, mark) if p.running}
    for pid, started in recorded:
        info = process_info(pid)
        if info is not None and info.started == started and info.running:
            found[pid] = info
    return list(found.values())


def describe(processes: list[ProcessInfo]) -> str:
    return "\n".join(f"  pid {p.pid} (parent {p.ppid}): {p.command()[:160]}" for p in processes)


@pytest.mark.parametrize(
    ("sig", "workers"),
    [(signal.SIGTERM, ["-n", "1"]), (signal.SIGKILL, ["-n", "1"]), (signal.SIGKILL, [])],
    ids=["SIGTERM, xdist", "SIGKILL, xdist", "SIGKILL, one process"],
)
def test_a_killed_run_leaves_no_process_and_no_folder(tmp_path: Path, sig: int, workers: list[str]) -> None:
    mark = uuid.uuid4().hex
    base = tmp_path / "tmp"  # the killed run's /tmp: its own run folder is made in it
    base.mkdir()
    record = tmp_path / "started"
    log = tmp_path / "pytest.log"
    # Nothing of this run's: the killed one makes its own folder, marks and watchdog.
    env = {k: v for k, v in os.environ.items()
           if k not in ("TONK_TEST_TMPDIR", MARKER, RUN_MARKER) and not k.startswith("PYTEST_XDIST")}
    env.update(TMPDIR=str(base), TONK_KILLED_RUN=mark, TONK_KILLED_RUN_RECORD=str(record))
    with open(log, "wb") as out:
        run = spawn(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *workers,
             str(TARGET)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        wait_for("the run's processes to be up", lambda: record.exists() or run.poll() is not None, 240)
        assert run.poll() is None, f"the run ended before it was killed:\n{log.read_text()[-4000:]}"
        recorded = [(int(pid), int(started)) for _name, pid, started in
                    (line.split() for line in record.read_text().splitlines())]  # fmt: skip
        assert len(recorded) == 4
        up = left_running(mark, recorded)
        assert {pid for pid, _ in recorded} <= {p.pid for p in up}
        assert any(f.name.startswith("tonk-test-run-") for f in base.iterdir())

        run.send_signal(sig)
        try:
            run.wait(TERM_GRACE_S if sig == signal.SIGTERM else 10)
        except subprocess.TimeoutExpired:
            run.kill()  # as a CI's time limit does after its SIGTERM
            run.wait(10)
        finished = log.read_text()

        wait_for("the run's processes to end", lambda: not left_running(mark, recorded), GRACE_S)
        wait_for("the run's folder to go", lambda: not any(base.iterdir()), GRACE_S)
    finally:
        left = left_running(mark, [])
        if run.poll() is None:
            run.kill()
            run.wait(10)
        for p in left:  # only on failure: never this test's own leftovers
            os.kill(p.pid, signal.SIGKILL)
    if sig == signal.SIGTERM:
        # Ended as Ctrl-C ends it: the test's fixture was finalized, the session reported.
        assert record.with_name(record.name + ".finalized").exists(), finished[-4000:]
        assert "KeyboardInterrupt" in finished or "Interrupted" in finished, finished[-4000:]

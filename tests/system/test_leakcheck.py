"""The suite's leaked-process check (tests/leakcheck.py) catches what it must: a process a
test leaves running, an orphaned one (parent 1), and one left at the end of the session. It
runs a small suite in a pytest of its own and reads what that one reports."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.paths import TESTS
from leakcheck import MARKER

from arena.processes import process_info, run_process

ROOT = TESTS.parent

CONFTEST = (
    "from leakcheck import (  # noqa\n"
    "    _no_process_left_behind, pytest_configure, pytest_sessionfinish, pytest_testnodedown,\n"
    ")\n"
)
SUITE = '''
import subprocess, sys
from pathlib import Path
import pytest

OUT = Path(__file__).parent

def sleeper():
    return [sys.executable, "-c", "import time; time.sleep(120)"]

def test_clean():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_leaves_a_child():
    p = subprocess.Popen(sleeper())
    (OUT / "child.pid").write_text(str(p.pid))

def test_leaves_an_orphan():
    # The shell exits at once: its sleeper is orphaned (and adopted by pytest, its subreaper).
    line = f"{sys.executable} -c 'import time; time.sleep(120)' >/dev/null 2>&1 & echo $!"
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True).stdout
    (OUT / "orphan.pid").write_text(out.strip())

@pytest.fixture(scope="session")
def server():
    p = subprocess.Popen(sleeper())
    (OUT / "session.pid").write_text(str(p.pid))
    yield p  # never stopped

def test_uses_a_session_process(server):
    assert server.poll() is None
'''


def gone(pid: int) -> bool:
    info = process_info(pid)
    return info is None or not info.running


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist workers"])
def test_leaked_processes_fail_the_test_that_left_them_and_the_session(
    tmp_path: Path, workers: list[str]
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k != MARKER}
    env["TONK_TEST_LEAK_GRACE_S"] = "0.5"
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT)])
    run = run_process(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *workers,
         str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "test_suite.py::test_leaves_a_child left 1 process(es) running" in out, out
    assert "test_suite.py::test_leaves_an_orphan left 1 process(es) running" in out, out
    orphan = int((tmp_path / "orphan.pid").read_text())
    assert f"pid {orphan} (parent " in out, out  # found, though its starter had gone
    assert "processes left running at the end of the session" in out, out
    assert "4 passed, 2 errors" in out, out  # each leak is an error at its test's teardown
    for name in ("child.pid", "orphan.pid", "session.pid"):
        pid = int((tmp_path / name).read_text())
        assert gone(pid), (name, pid)  # and the check killed what it found


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist workers"])
def test_a_run_leaves_nothing_in_the_temporary_folder(workers: list[str]) -> None:
    """The suite's own tests, run with a fresh temporary folder: one that kills a process owning a
    multiprocessing pool (its ``pymp-*`` folder is never removed by it) and ones with
    ``tmp_path`` leave nothing there once pytest has ended (tests/scratch.py)."""
    # A short path: multiprocessing's sockets live under it, and a socket's path has 107 bytes.
    folder = Path(tempfile.mkdtemp(prefix="t"))
    from leakcheck import RUN_MARKER
    from scratch import RUN_TMP

    env = {k: v for k, v in os.environ.items() if k not in (MARKER, RUN_MARKER, RUN_TMP)}
    env["TMPDIR"] = str(folder)
    tests = [
        "tests/system/test_no_process_left.py::test_pool_processes_end_when_their_owner_is_killed",
        "tests/system/test_make_test.py",
        "tests/arena/sandbox/test_slots.py",
    ]
    run = run_process(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, *tests],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    try:
        assert run.returncode == 0, run.stdout + run.stderr
        assert sorted(p.name for p in folder.iterdir()) == [], run.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)

"""arena/processes.py's guarantees for what a run starts, each measured on real processes: a
child of :func:`spawn` dies with its starter (SIGKILL included) even when a short-lived thread
asked for it, it carries the run's mark in an environment given whole, and a watched run's
watchdog kills what daemonised itself out of the run's tree and removes the run's folders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.net import wait_for
from helpers.paths import TESTS

from arena.processes import _SETPRIV, RUN_MARK, _setpriv_wrapped, alive, process_info, spawn

ROOT = TESTS.parent


def gone(pid: int) -> bool:
    info = process_info(pid)
    return info is None or not info.running


def test_a_child_asked_for_from_a_short_lived_thread_outlives_the_thread() -> None:
    # The parent-death signal follows the thread that forked: a child forked by this thread
    # would be killed when it returns (measured: dead 0.5 s later).
    box: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=lambda: box.append(spawn(["sleep", "60"])))
    thread.start()
    thread.join()
    child = box[0]
    try:
        time.sleep(1.0)  # the thread has long ended
        assert child.poll() is None, f"killed with its thread (status {child.returncode})"
    finally:
        child.kill()
        child.wait()


def test_a_child_dies_with_its_starter_even_by_sigkill_and_in_a_session_of_its_own() -> None:
    code = (
        "import subprocess, sys, time\n"
        "from arena.processes import spawn\n"
        "child = spawn(['sleep', '300'], start_new_session=True, env={'PATH': '/usr/bin:/bin'})\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    starter = spawn([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    child = int(starter.stdout.readline())
    try:
        assert alive(child)
        starter.kill()
        starter.wait()
        wait_for("the starter's child to die with it", lambda: gone(child), 30)
    finally:
        if not gone(child):
            os.kill(child, signal.SIGKILL)


def test_an_environment_given_whole_carries_the_runs_mark() -> None:
    assert os.environ.get(RUN_MARK), "the test run is watched (tests/leakcheck.py)"
    out = spawn(["env"], env={"PATH": "/usr/bin:/bin"}, stdout=subprocess.PIPE, text=True).communicate()[0]
    assert f"{RUN_MARK}={os.environ[RUN_MARK]}" in out.splitlines()


WATCHED = """
import os, subprocess, sys, tempfile, time
from arena.processes import watch_run
folder = tempfile.mkdtemp(dir=sys.argv[1])
watch_run([folder])
# A daemon: forked twice, in a session of its own, its starter gone; plain subprocess, not spawn.
with open(sys.argv[2], "w") as out:
    subprocess.run(["sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!"], stdout=out)
print(folder, flush=True)
time.sleep(300)
"""


def test_a_watched_runs_daemons_and_folders_go_when_it_is_killed(tmp_path: Path) -> None:
    daemon_file = tmp_path / "daemon.pid"
    owner = spawn([sys.executable, "-c", WATCHED, str(tmp_path), str(daemon_file)], cwd=ROOT,
                  stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert owner.stdout is not None
    folder = Path(owner.stdout.readline().strip())
    daemon = int(daemon_file.read_text())
    try:
        assert folder.is_dir() and alive(daemon)
        assert process_info(daemon).ppid != owner.pid  # type: ignore[union-attr]  # out of its tree
        owner.kill()
        owner.wait()
        wait_for("the daemon to be killed", lambda: gone(daemon), 30)
        wait_for("the run's folder to go", lambda: not folder.exists(), 30)
    finally:
        if not gone(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_a_child_whose_starter_died_before_the_signal_was_set_exits_instead_of_running(
    tmp_path: Path,
) -> None:
    # A starter killed between fork and prctl leaves a parent-death signal that never fires;
    # the wrapper then finds it was re-parented and must not run the command at all.
    if _SETPRIV is None:
        pytest.skip("setpriv is not installed; spawn uses the preexec check instead")
    marker = tmp_path / "ran"
    orphaned = subprocess.run(_setpriv_wrapped(["touch", str(marker)], parent=1), check=False)
    assert orphaned.returncode == 1 and not marker.exists()
    kept = subprocess.run(_setpriv_wrapped(["touch", str(marker)], parent=os.getpid()), check=False)
    assert kept.returncode == 0 and marker.exists()

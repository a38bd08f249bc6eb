"""A short run of the loopback load test (bench/load.py) in CI: the dashboard under gunicorn
answers many concurrent clients on the leaderboard and a replay's JSON while a tournament is
being played, without a single error. The full 50-client, 30-second run is the benchmark."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.paths import ROOT

from arena.processes import process_info, run_process


def load_run(
    clients: int, seconds: int, watchdog: int, scratch: Path
) -> subprocess.CompletedProcess[str]:
    """``bench/load.py --json`` in a child process; its own timeout is a minute past the
    watchdog's and stays under pytest's 300 s, so a stall is reported by the watchdog. Its
    temporary files go under ``scratch``, so a test can see that it left none."""
    command = [sys.executable, str(ROOT / "bench" / "load.py"), "--json"]
    command += ["--clients", str(clients), "--seconds", str(seconds), "--watchdog", str(watchdog)]
    env = {**os.environ, "TMPDIR": str(scratch)}
    return run_process(command, capture_output=True, text=True, timeout=watchdog + 60, cwd=ROOT, env=env)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The run's TMPDIR: a short path (its fork server's socket lives there, and a Unix
    socket's path is limited to 107 bytes), empty again once the run is over."""
    folder = Path(tempfile.mkdtemp(prefix="tl-"))
    try:
        yield folder
        assert list(folder.iterdir()) == [], "the run left its scratch files behind"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_dashboard_under_load_while_a_tournament_runs_has_no_errors(scratch: Path) -> None:
    # It takes about 10 s. Should it ever stall, its watchdog prints every thread's stack,
    # which this test then shows, well before pytest's own timeout kills it without a word.
    run = load_run(clients=12, seconds=6, watchdog=180, scratch=scratch)
    assert run.returncode == 0, run.stderr[-8000:]
    summary = json.loads(run.stdout)
    routes = summary["routes"]
    assert set(routes) == {"leaderboard", "replay", "baseline"}
    for name, route in routes.items():
        assert route["errors"] == 0, (name, route)
        assert route["requests"] >= 12, (name, route)  # every client got answers on every route
    assert summary["tournament"]["of"] > 0


def test_a_stalled_load_run_prints_every_threads_stack_and_exits(scratch: Path) -> None:
    # A watchdog shorter than the run stands in for a stall: the run must stop with the
    # stacks that say where it was, not hang until pytest's timeout kills it silently.
    run = load_run(clients=2, seconds=30, watchdog=4, scratch=scratch)
    assert run.returncode == 1, run.stderr[-2000:]
    assert "still running after 4 s; every thread's stack:" in run.stderr
    assert 'File "' in run.stderr.split("every thread's stack:", 1)[1]  # at least one frame
    assert run.stdout == ""  # no summary from a run that did not finish


WATCHDOG = """
import os, sys, time
sys.path.insert(0, sys.argv[2])
import load
from arena.runtime.backends import EmbeddedBackend
from arena.processes import descendants
pool = EmbeddedBackend(sys.argv[1], 1)
pool.submit([1])
deadline = time.monotonic() + 60
while not pool.errors() and time.monotonic() < deadline:  # the job fails; its process stays
    pool.pause(0.5)
load.arm_watchdog(1.0)
print(" ".join(str(p.pid) for p in descendants(os.getpid())), flush=True)
time.sleep(120)
"""


def test_the_watchdog_kills_every_process_the_run_started() -> None:
    # What made the stalled run flaky: a process started after the watchdog's list was taken
    # (here the pool's worker, its fork server and tracker) outlived the run and held its
    # stderr open, so the caller waited for its own timeout.
    # A store no job can open (its folder cannot be made): the job fails, its process stays.
    command = [sys.executable, "-c", WATCHDOG, "sqlite:////dev/null/arena.sqlite", str(ROOT / "bench")]
    run = run_process(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 1, run.stderr[-2000:]
    assert "every thread's stack:" in run.stderr
    pids = [int(pid) for pid in run.stdout.split()]
    assert len(pids) >= 3, run.stdout  # fork server, resource tracker, worker
    left = [info for pid in pids if (info := process_info(pid)) is not None and info.running]
    assert left == []

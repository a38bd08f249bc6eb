"""``kill -9`` of ``tonk tournament run`` leaves no process behind: the embedded pool's
processes die with it (arena/runtime/processes.py, exit_with). The real command, a real SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers.paths import ROOT

from arena.runtime.processes import descendants, process_info


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_tournament_run_leaves_no_pool_process(sqlite_url: str) -> None:
    from sqlalchemy import func, select

    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import host_bot
    from arena.store.db import dispose_engines, session_scope
    from arena.store.models import Match
    from arena.tournaments.lifecycle import create_tournament

    with session_scope(sqlite_url) as session:
        operator = get_or_create_operator(session, "house")
        ids = [host_bot(session, operator, name, "helpers.faultbots:SleepyBot", check=False).id
               for name in ("sleepy-a", "sleepy-b")]
        tid = create_tournament(session, name="long", bot_ids=ids, table_sizes=[2], deals_per_table=4,
                                hands_per_match=50, seed=7).id
    env = {
        **os.environ,
        "TONK_DATABASE_URL": sqlite_url,
        "TONK_EMBEDDED_WORKERS": "2",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = subprocess.Popen(
        [sys.executable, "-m", "sdk.cli", "tournament", "run", str(tid), "--quiet"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    pool: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with session_scope(sqlite_url) as session:
                running = session.scalar(
                    select(func.count(Match.id)).where(Match.tournament_id == tid, Match.status == "running")
                )
            pool = {p.pid for p in descendants(command.pid) if p.running}
            if running and len(pool) >= 3:  # the fork server and two pool processes, playing
                break
            assert command.poll() is None, "the tournament ended before the test could kill it"
            time.sleep(0.2)
        assert running and len(pool) >= 3, f"the pool never started playing: {pool}"

        os.kill(command.pid, signal.SIGKILL)
        command.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in pool):
            time.sleep(0.1)
        left = {p: info.command() for p in pool if (info := process_info(p)) and info.running}
        assert left == {}, "pool processes outlived a kill -9 of their command"
    finally:
        # Whatever happened, nothing this test started may stay.
        for pid in pool | {command.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if command.poll() is None:
            command.kill()
            command.wait(10)
        dispose_engines()


def _alive(pid: int) -> bool:
    info = process_info(pid)
    return info is not None and info.running

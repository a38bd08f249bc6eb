"""Nothing the arena starts outlives what started it: the embedded pool's workers, the
multiprocessing fork server and `tonk dashboard`'s pool, however their owner ends (closed,
SIGTERM, SIGKILL). The suite's own check (tests/leakcheck.py) would also catch a leak here;
these tests say which promise broke."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from helpers.paths import ROOT

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.processes import ProcessInfo, descendants, process_info, spawn
from arena.runtime.backends import EmbeddedBackend
from arena.store.db import dispose_engines, session_scope
from arena.tournaments.lifecycle import create_tournament

TOKEN = "operator-token-for-process-tests"


def children_now() -> dict[int, ProcessInfo]:
    """This process's descendants, less multiprocessing's resource tracker (it serves the
    whole process and ends with it)."""
    import multiprocessing.resource_tracker as tracker

    exempt = getattr(tracker._resource_tracker, "_pid", None)
    return {p.pid: p for p in descendants(os.getpid()) if p.running and p.pid != exempt}


def wait_gone(pids: set[int], limit_s: float = 30.0) -> set[int]:
    """Those of ``pids`` still running after at most ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while True:
        left = {pid for pid in pids if (info := process_info(pid)) is not None and info.running}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def first_errors(pool: EmbeddedBackend, limit_s: float = 60.0) -> list[str]:
    """The errors of the pool's first finished jobs, waiting at most ``limit_s`` for one."""
    deadline = time.monotonic() + limit_s
    while not (errors := pool.errors()) and time.monotonic() < deadline:
        pool.pause(0.5)
    return errors


#: A store no job can open (its folder cannot be made): a job fails at once. (A job for a
#: match that is not in a store ends quietly, as one the ladder withdrew.)
BROKEN_STORE = "sqlite:////dev/null/arena.sqlite"


def test_closing_the_last_pool_stops_its_workers_and_the_fork_server() -> None:
    before = set(children_now())
    pool = EmbeddedBackend(BROKEN_STORE, 2)
    try:
        assert pool.submit([1]) == 1  # the job fails at once, its worker stays
        assert first_errors(pool)  # the job failed in a pool process, which stays for more
        started = {pid: p.command() for pid, p in children_now().items() if pid not in before}
        assert any("forkserver" in c for c in started.values()), started
    finally:
        pool.close()
    assert not wait_gone(set(started), limit_s=0.0), started


OWNER = """
import os, sys, time
from arena.runtime.backends import EmbeddedBackend
from arena.processes import descendants
pool = EmbeddedBackend(sys.argv[1], 2)
pool.submit([1])
deadline = time.monotonic() + 60
while not pool.errors() and time.monotonic() < deadline:
    pool.pause(0.5)
print(" ".join(str(p.pid) for p in descendants(os.getpid())), flush=True)
time.sleep(120)
"""


def test_pool_processes_end_when_their_owner_is_killed() -> None:
    # The broken store fails the job at once, so the owner reports its pool at once; a job for a
    # match missing from a good store ends quietly, and the owner waited out its 60 s for an error.
    command = [sys.executable, "-c", OWNER, BROKEN_STORE]
    owner = spawn(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        pids = {int(pid) for pid in owner.stdout.readline().split()}
        assert len(pids) >= 3, pids  # the fork server, its resource tracker, a worker at least
    finally:
        owner.kill()  # no chance to stop its pool
        owner.wait()
    assert not wait_gone(pids), {pid: process_info(pid) for pid in pids}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def api(port: int, path: str, body: dict[str, object] | None = None) -> dict[str, object]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        data: dict[str, object] = json.load(response)
        return data


def test_stopping_tonk_dashboard_stops_the_pool_of_a_tournament_it_started(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    with session_scope(url) as session:
        house = get_or_create_operator(session, "house")
        spec = "bots.random_bot:RandomBot"
        bots = [host_bot(session, house, name, spec, check=False) for name in ("r1", "r2")]
        tournament = create_tournament(
            session, name="long", bot_ids=[b.id for b in bots], table_sizes=[2], deals_per_table=200,
            hands_per_match=20, seed=1,
        ).id
    dispose_engines()
    port = free_port()
    env = {**os.environ, "TONK_DATABASE_URL": url, "TONK_OPERATOR_TOKEN": TOKEN, "TONK_EMBEDDED_WORKERS": "2"}
    env.pop("TONK_REDIS_URL", None)
    tonk = str(Path(sys.executable).with_name("tonk"))
    dashboard = spawn(
        [tonk, "dashboard", "--port", str(port)], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                api(port, "/tournaments")
                break
            except OSError:
                assert dashboard.poll() is None and time.monotonic() < deadline, dashboard.stderr
                time.sleep(0.1)
        api(port, f"/tournaments/{tournament}/run", {})
        deadline = time.monotonic() + 60
        while len(pool := descendants(dashboard.pid)) < 3:  # fork server, tracker, workers
            assert time.monotonic() < deadline, pool
            time.sleep(0.05)
        pids = {p.pid for p in pool}
    finally:
        dashboard.send_signal(signal.SIGTERM)
        _, err = dashboard.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert not wait_gone(pids), {pid: process_info(pid) for pid in pids}


HOST = """
import sys, time
from arena.bots.hosting import HostedBots
bots = HostedBots({"r1": "bots.random_bot:RandomBot"})
bots.start()
print(bots.pid("r1"), flush=True)
time.sleep(120)
"""


def test_hosted_bots_end_when_their_host_is_killed() -> None:
    host = spawn([sys.executable, "-c", HOST], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        bot = int(host.stdout.readline())
        assert process_info(bot) is not None
    finally:
        host.kill()  # no chance to stop its bots (a SIGTERMed `tonk demo` had none either)
        host.wait()
    assert not wait_gone({bot}), process_info(bot)

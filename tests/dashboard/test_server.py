"""Serving the dashboard for real: the werkzeug server ``tonk demo`` uses (dashboard.server)
and gunicorn with ``dashboard.wsgi:app``, as the Docker image runs it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.net import listening, wait_for
from helpers.paths import ROOT

from arena.processes import spawn

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded




def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def fetch(url: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.load(response)
        # TimeoutError too: gunicorn's master accepts before its worker has imported the app,
        # which took over 5 s beside four busy loops (make test-under-load).
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def run_server(args: list[str], url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TONK_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    return spawn(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_serve_in_a_thread(seeded_sqlite: Seeded) -> None:
    from dashboard.server import serve_in_thread

    server, thread = serve_in_thread("127.0.0.1", 0, None, DATABASE_URL=seeded_sqlite.url)
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        assert fetch(base + "/healthz") == {"status": "ok"}
        assert len(fetch(base + "/api/v1/leaderboard")["leaderboard"]) == 4
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_serve_as_tonk_demo_does(seeded_sqlite: Seeded) -> None:
    port = free_port()
    code = f"from dashboard.server import serve; serve('127.0.0.1', {port})"
    process = run_server([sys.executable, "-c", code], seeded_sqlite.url)
    try:
        assert len(fetch(f"http://127.0.0.1:{port}/api/v1/bots")["bots"]) == 4
    finally:
        stop(process)


@pytest.mark.parametrize("access_log", [False, True])
def test_the_demo_server_logs_requests_only_when_asked(seeded_sqlite: Seeded, access_log: bool) -> None:
    # A line per page, poll and asset used to bury the token and submit lines `tonk demo` prints.
    port = free_port()
    code = f"from dashboard.server import serve; serve('127.0.0.1', {port}, access_log={access_log})"
    process = run_server([sys.executable, "-c", code], seeded_sqlite.url)
    try:
        assert len(fetch(f"http://127.0.0.1:{port}/api/v1/bots")["bots"]) == 4
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/bots/nobody", timeout=10)
    finally:
        stop(process)
    assert process.stderr is not None
    logged = process.stderr.read().decode()
    assert ('"GET /api/v1/bots HTTP/1.1" 200' in logged) is access_log, logged
    assert ("GET /api/v1/bots/nobody HTTP/1.1" in logged) is access_log, logged


def test_gunicorn_serves_the_wsgi_app(seeded_sqlite: Seeded) -> None:
    pytest.importorskip("gunicorn")
    port = free_port()
    process = run_server(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--graceful-timeout", "2", "dashboard.wsgi:app"],
        seeded_sqlite.url,
    )
    try:
        assert fetch(f"http://127.0.0.1:{port}/healthz") == {"status": "ok"}
        board = fetch(f"http://127.0.0.1:{port}/api/v1/leaderboard")["leaderboard"]
        assert board[0]["rank"] == 1
    finally:
        stop(process)
    assert process.returncode is not None


# -- stopping on SIGTERM and Ctrl-C (issue 35) ------------------------------------------------

#: A child serving the dashboard whose ``ready`` makes the main thread run a weakref callback
#: that the signal lands in, as it may land in any weakref callback or finaliser under load
#: (stderr: "Exception ignored in: <function WeakSet.__init__.<locals>._remove ...>").
SIGNAL_IN_A_WEAKREF_CALLBACK = """
import os, signal, sys, time, weakref
from dashboard.server import serve

class Doomed:
    pass

refs = []

def ready(url):
    doomed = Doomed()
    refs.append(weakref.ref(doomed, lambda _: (os.kill(os.getpid(), signal.{signal}), time.sleep(0.5))))
    del doomed  # the callback runs now, and the signal's handler inside it
    print("ready", flush=True)

serve("127.0.0.1", {port}, ready=ready)
print("stopped", flush=True)
"""


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_landing_in_a_weakref_callback_still_stops_the_dashboard(
    seeded_sqlite: Seeded, signum: str
) -> None:
    port = free_port()
    code = SIGNAL_IN_A_WEAKREF_CALLBACK.format(port=port, signal=signum)
    env = {**os.environ, "TONK_DATABASE_URL": seeded_sqlite.url, "PYTHONPATH": str(ROOT)}
    process = spawn([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"the dashboard ran on after {signum}: {err[-2000:]}") from None
    assert process.returncode == 0 and out.split() == ["ready", "stopped"], (process.returncode, out, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err


def _flood(port: int, stop: threading.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /api/v1/bots HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            while sock.recv(65536):
                pass


def test_tonk_dashboard_stops_on_sigterm_in_the_middle_of_a_request_flood(tmp_path: Path) -> None:
    """Real `tonk dashboard` processes, one after the other, each sent SIGTERM while six
    clients hammer it: each exits 0 with no traceback."""
    for attempt in range(5):
        code, err = _sigterm_under_flood(tmp_path / f"{attempt}.sqlite")
        assert code == 0, (attempt, code, err[-2000:])
        assert "Traceback" not in err and "Exception ignored" not in err, (attempt, err[-3000:])


def _sigterm_under_flood(store: Path) -> tuple[int, str]:
    port = free_port()
    env = {**os.environ, "TONK_DATABASE_URL": f"sqlite:///{store}", "TONK_GATEWAY_PORT": "0"}
    env.pop("TONK_REDIS_URL", None)
    tonk = str(Path(sys.executable).with_name("tonk"))
    dashboard = spawn([tonk, "dashboard", "--port", str(port)], cwd=store.parent, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    stop_flood = threading.Event()
    clients = [threading.Thread(target=_flood, args=(port, stop_flood)) for _ in range(6)]
    try:
        wait_for("the dashboard", lambda: dashboard.poll() is None and listening(port), timeout=60)
        for client in clients:
            client.start()
        wait_for("requests", lambda: _served_some(port), timeout=30)
        dashboard.send_signal(signal.SIGTERM)
        _, err = dashboard.communicate(timeout=60)
    finally:
        stop_flood.set()
        for client in clients:
            if client.is_alive():
                client.join(30)
        if dashboard.poll() is None:
            dashboard.kill()
            dashboard.communicate()
    return dashboard.returncode, err


def _served_some(port: int) -> bool:
    with contextlib.suppress(OSError):
        return bool(fetch(f"http://127.0.0.1:{port}/healthz", timeout=5))
    return False


# -- threads after a flood of connecting bots (issue 35) --------------------------------------


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_tonk_dashboard_threads_come_back_after_a_link_flood(tmp_path: Path) -> None:
    """40 bots connect out to the gateway `tonk dashboard` embeds, then leave: the threads the
    burst started end (the gateway's pools grew 18 -> 56 and stayed at 55)."""
    from arena.bots.owners import create_owner
    from arena.store.db import dispose_engines, session_scope
    from arena.store.migrate import migrate
    from bots.random_bot import RandomBot
    from sdk.link import LinkClient

    url = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    migrate(url)
    with session_scope(url) as session:
        tokens = [create_owner(session, f"owner{i}")[1] for i in range(4)]
    dispose_engines()
    port, gateway, relay = free_port(), free_port(), free_port()
    env = {**os.environ, "TONK_DATABASE_URL": url, "TONK_GATEWAY_PORT": str(gateway),
           "TONK_GATEWAY_RELAY_PORT": str(relay)}  # fmt: skip
    env.pop("TONK_REDIS_URL", None)
    tonk = str(Path(sys.executable).with_name("tonk"))
    dashboard = spawn([tonk, "dashboard", "--port", str(port)], cwd=tmp_path, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    clients: list[tuple[LinkClient, threading.Thread]] = []
    try:
        wait_for("the dashboard", lambda: listening(port) and listening(gateway), timeout=60)
        time.sleep(1)  # let it settle: the threads it keeps once up
        baseline = _threads(dashboard.pid)
        for i in range(40):
            link = LinkClient(RandomBot, f"127.0.0.1:{gateway}", tokens[i % 4], f"flood{i}", capacity=1)
            clients.append((link, threading.Thread(target=link.run, daemon=True)))
            clients[-1][1].start()
        links = [link for link, _ in clients]
        wait_for("40 bots connected", lambda: all(link.connected.is_set() for link in links), timeout=120)
        peak = _threads(dashboard.pid)
        for link, _ in clients:
            link.stop()
        for _, thread in clients:
            thread.join(30)
        # A gateway keeps its heartbeat's thread, and the process a clock sampler, once used.
        margin = 3
        settled: list[int] = []

        def settles() -> bool:
            settled.append(_threads(dashboard.pid))
            return settled[-1] <= baseline + margin

        try:
            wait_for("the threads to end", settles, timeout=120, poll=1.0)
        except TimeoutError:
            flood = f"{baseline} before, {peak} in the flood, then {settled[-5:]}"
            raise AssertionError(f"threads: {flood}") from None
        assert peak > baseline  # the flood did start threads (a parallel run's load saw 14 -> 17)
    finally:
        for link, thread in clients:
            link.stop()
            thread.join(10)
        dashboard.send_signal(signal.SIGTERM)
        _, err = dashboard.communicate(timeout=60)
    assert dashboard.returncode == 0 and "Traceback" not in err, err[-2000:]

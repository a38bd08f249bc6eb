"""Serving the dashboard for real: the werkzeug server ``tonk demo`` uses (dashboard.server)
and gunicorn with ``dashboard.wsgi:app``, as the Docker image runs it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from helpers.paths import ROOT

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded




def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def fetch(url: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.load(response)
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def run_server(args: list[str], url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TONK_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


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

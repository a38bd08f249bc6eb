"""Small hardening bugs, each fixed at its cause: odd paging numbers are a 400, not a 500;
`tonk record` fails properly on missing, unreadable, malformed and huge files and never echoes
a huge field back; a huge header under /api gets a JSON error. Real app, real CLI, real server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from helpers.net import free_port, listening, wait_for
from helpers.paths import ROOT

from arena.processes import run_process, spawn

# -- ?page=--1 ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flask]:
    from arena.store.db import dispose_engines
    from dashboard import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('params') / 'arena.sqlite'}"
    yield create_app({"DATABASE_URL": url, "TESTING": True})
    dispose_engines()


BAD_NUMBERS = ["--1", "1-", "-+1", "+1", "1.0", "1e3", "0x10", "\u0663", "1 2", "--", "-", "9" * 13]
# Every list page and API route with the number parameters it takes.
ROUTES = [
    (route, param)
    for route in ("/api/v1/tournaments", "/api/v1/matches", "/tournaments/", "/matches/")
    for param in ("page", "per_page", "tournament")
    if not (param == "tournament" and "tournaments" in route)
]


@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize(("route", "param"), ROUTES)
def test_a_malformed_number_is_a_400_naming_it(app: Flask, route: str, param: str, value: str) -> None:
    response = app.test_client().get(route, query_string={param: value})
    assert response.status_code == 400, (route, param, value, response.status_code)
    said = f"'{param}' must be a whole number"
    if route.startswith("/api/"):
        error = response.get_json()["error"]
        assert error["code"] == "invalid_parameter" and said in error["message"]
    else:
        html = response.get_data(as_text=True)
        assert response.mimetype == "text/html" and said.replace("'", "&#39;") in html


def test_good_and_out_of_range_numbers_still_work(app: Flask) -> None:
    client = app.test_client()
    assert client.get("/api/v1/matches?page=1&per_page=5").status_code == 200
    assert client.get("/api/v1/matches?page=-1").status_code == 400
    assert client.get("/api/v1/matches?per_page=101").status_code == 400


# -- tonk record simulate / verify -------------------------------------------------------------


def tonk_record(action: str, *files: str, cwd: Path) -> tuple[int, list[dict[str, object]], str]:
    proc = run_process(
        [sys.executable, "-m", "sdk.cli", "record", action, *files],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


@pytest.mark.parametrize("action", ["simulate", "verify"])
def test_tonk_record_fails_on_bad_files_with_bounded_error_lines(tmp_path: Path, action: str) -> None:
    (tmp_path / "malformed.json").write_text('{"format": "tonk-hand/1",')
    (tmp_path / "digits.json").write_text('{"format": "tonk-hand/1", "dealer": ' + "7" * 5000 + "}")
    (tmp_path / "huge-field.json").write_text(json.dumps({"format": "x" * 3_000_000}))
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "huge-file.json").write_bytes(b" " * (5 * 1024 * 1024))
    cases = {
        "missing.json": "cannot read the file: No such file or directory",
        "a-directory": "cannot read the file: Is a directory",
        "malformed.json": "not valid JSON: ",
        "digits.json": "not valid JSON: a number has too many digits",
        "huge-field.json": "'format' must be 'tonk-hand/1', got 'xxxxxxxx",
        "huge-file.json": "the file is larger than 4194304 bytes",
        "/dev/zero": "the file is larger than 4194304 bytes",
    }
    for name, reason in cases.items():
        code, lines, stderr = tonk_record(action, name, cwd=tmp_path)
        assert code == 1, (name, code, lines, stderr)
        assert stderr == "" and len(lines) == 1, (name, stderr[-500:])
        error = lines[0]["error"]
        assert isinstance(error, dict) and str(error["reason"]).startswith(reason), (name, error)
        assert len(str(error["reason"])) <= 600 and "x" * 81 not in str(error["reason"]), name


def test_simulate_still_exits_0_when_every_file_replays(tmp_path: Path) -> None:
    from bots.random_bot import RandomBot
    from sdk.referee import LocalPlayer, play_match

    result = play_match([LocalPlayer(RandomBot), LocalPlayer(RandomBot)], 3, 1)
    (tmp_path / "hand.json").write_text(json.dumps(result.hands[0].record.to_json()))
    code, lines, _ = tonk_record("simulate", "hand.json", cwd=tmp_path)
    assert code == 0 and "outcome" in lines[0]


# -- what the HTTP server refuses itself: a 100 KB header or query string, 5.7 MB of headers -----


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    from arena.config import Settings
    from arena.store.db import dispose_engines
    from dashboard.server import make

    url = f"sqlite:///{tmp_path_factory.mktemp('served') / 'arena.sqlite'}"
    server = make("127.0.0.1", 0, Settings(database_url=url))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port
    server.shutdown()
    thread.join(10)
    server.server_close()
    dispose_engines()


@pytest.fixture
def gunicorn_served(tmp_path: Path) -> Iterator[int]:
    """gunicorn as the Docker image runs it (Dockerfile), with the dashboard's worker."""
    port = free_port()
    store = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    env = {**os.environ, "TONK_DATABASE_URL": store, "PYTHONPATH": str(ROOT)}
    env.pop("TONK_REDIS_URL", None)
    server = spawn(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--worker-class", "dashboard.gunicorn_worker.DashboardWorker", "--graceful-timeout", "2",
         "dashboard.wsgi:app"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for("gunicorn", lambda: server.poll() is None and listening(port), timeout=60)
        yield port
    finally:
        server.terminate()
        server.wait(30)


@pytest.fixture(params=["werkzeug", "gunicorn"])
def server_port(request: pytest.FixtureRequest) -> int:
    # gunicorn is started for each test (a process must not outlive its test, tests/leakcheck.py).
    return int(request.getfixturevalue("served" if request.param == "werkzeug" else "gunicorn_served"))


def raw_request(port: int, path: str, headers: str) -> tuple[str, dict[str, str], bytes]:
    """Sends the request while reading the answer: a server that refuses a request before it
    is all read answers, then closes while the rest is still being sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        request = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n".encode()
        sender = threading.Thread(target=_send, args=(sock, request), daemon=True)
        sender.start()
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                data += chunk
        sender.join(30)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return lines[0], fields, body


def _send(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the server closed on a refused request
        sock.sendall(data)


LONG_QUERY = "?ids=" + "7," * 50_000  # 100 KB
MANY_BIG_HEADERS = "".join(f"X-Pad-{i}: {'b' * 60_000}\r\n" for i in range(95))  # 5.7 MB


#: (what, query string, headers, status, error code): each refused by the server itself.
REFUSED = [
    ("100 KB Authorization", "", "Authorization: Bearer " + "a" * 100_000 + "\r\n", 431,
     "request_header_fields_too_large"),
    ("150 headers", "", "".join(f"X-{i}: y\r\n" for i in range(150)), 431, "request_header_fields_too_large"),
    # Issue 35: werkzeug took these with a 200 (gunicorn refuses a line over 8 KB).
    ("95 headers of 60 KB", "", MANY_BIG_HEADERS, 431, "request_header_fields_too_large"),
    # Issue 35: gunicorn took these with a 200 (under its line and count limits, 96 KB in all).
    ("12 headers of 8 KB", "", "".join(f"X-Pad-{i}: {'b' * 8000}\r\n" for i in range(12)), 431,
     "request_header_fields_too_large"),
    # Issue 35: an HTML 414 from werkzeug's server and from gunicorn.
    ("100 KB query", LONG_QUERY, "", 414, "request_uri_too_long"),
]  # fmt: skip


def test_what_the_server_refuses_under_api_is_a_json_error(server_port: int) -> None:
    for what, query, headers, status, code in REFUSED:
        line, fields, body = raw_request(server_port, "/api/v1/bots" + query, headers)
        assert line.startswith("HTTP/1.") and f" {status} " in line, (what, line)
        assert fields["Content-Type"] == "application/json", (what, fields)
        error = json.loads(body)["error"]
        assert error["code"] == code, (what, error)
        assert ("header" if status == 431 else "request line") in error["message"], (what, error)
        # The pages keep their HTML error page.
        line, fields, _ = raw_request(server_port, "/bots/" + query, headers)
        assert f" {status} " in line and fields["Content-Type"].startswith("text/html"), (what, line, fields)


def test_headers_under_the_limits_are_served(server_port: int) -> None:
    # 7 headers of 8 KB, 56 KB in all: under every limit of both servers.
    headers = "".join(f"X-Pad-{i}: {'b' * 8000}\r\n" for i in range(7))
    line, _, body = raw_request(server_port, "/api/v1/bots", headers)
    assert " 200 " in line and json.loads(body) == {"bots": []}, (line, body[:200])


@pytest.mark.parametrize("production", [False, True], ids=["werkzeug", "gunicorn"])
def test_tonk_dashboard_answers_a_huge_api_request_with_json(tmp_path: Path, production: bool) -> None:
    """Issue 29, point 8, and issue 35: the real `tonk dashboard` process, not only the test
    servers; ``--production`` runs gunicorn with the dashboard's worker."""
    port = free_port()
    store = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    env = {**os.environ, "TONK_DATABASE_URL": store, "TONK_GATEWAY_PORT": "0"}
    env.pop("TONK_REDIS_URL", None)
    tonk = str(Path(sys.executable).with_name("tonk"))
    extra = ["--production", "--workers", "1"] if production else []
    dashboard = spawn(
        [tonk, "dashboard", "--port", str(port), *extra], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for("the dashboard", lambda: dashboard.poll() is None and listening(port), timeout=60)
        for what, query, headers, status, code in REFUSED:
            line, fields, body = raw_request(port, "/api/v1/bots" + query, headers)
            assert f" {status} " in line, (what, line)
            assert fields["Content-Type"] == "application/json", (what, fields)
            assert json.loads(body)["error"]["code"] == code, what
    finally:
        dashboard.send_signal(signal.SIGTERM)
        _, err = dashboard.communicate(timeout=60)
    assert "Traceback" not in err, err

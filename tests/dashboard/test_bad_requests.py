"""Small hardening bugs, each fixed at its cause: odd paging numbers are a 400, not a 500;
`tonk record` fails properly on missing, unreadable, malformed and huge files and never echoes
a huge field back; a huge header under /api gets a JSON error. Real app, real CLI, real server."""

from __future__ import annotations

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
    proc = subprocess.run(
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


# -- a 100 KB header ----------------------------------------------------------------------------


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


def raw_request(port: int, path: str, headers: str) -> tuple[str, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return lines[0], fields, body


@pytest.mark.parametrize(
    "headers",
    ["Authorization: Bearer " + "a" * 100_000 + "\r\n", "".join(f"X-{i}: y\r\n" for i in range(150))],
    ids=["100 KB Authorization", "150 headers"],
)
def test_a_huge_header_under_api_is_a_json_431(served: int, headers: str) -> None:
    status, fields, body = raw_request(served, "/api/v1/bots", headers)
    assert status.startswith("HTTP/1.") and " 431 " in status
    assert fields["Content-Type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == "request_header_fields_too_large" and "header" in error["message"]
    # The pages keep their HTML error page.
    status, fields, _ = raw_request(served, "/bots/", headers)
    assert " 431 " in status and fields["Content-Type"].startswith("text/html")


def test_tonk_dashboard_answers_a_huge_api_header_with_json(tmp_path: Path) -> None:
    """Issue 29, point 8: the real `tonk dashboard` process, not only the test server."""
    port = free_port()
    store = f"sqlite:///{tmp_path / 'arena.sqlite'}"
    env = {**os.environ, "TONK_DATABASE_URL": store, "TONK_GATEWAY_PORT": "0"}
    env.pop("TONK_REDIS_URL", None)
    tonk = str(Path(sys.executable).with_name("tonk"))
    dashboard = subprocess.Popen(
        [tonk, "dashboard", "--port", str(port)], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for("the dashboard", lambda: dashboard.poll() is None and listening(port), timeout=60)
        huge = "Authorization: Bearer " + "a" * 100_000 + "\r\n"
        status, fields, body = raw_request(port, "/api/v1/bots", huge)
        assert " 431 " in status and fields["Content-Type"] == "application/json", (status, fields)
        assert json.loads(body)["error"]["code"] == "request_header_fields_too_large"
    finally:
        dashboard.send_signal(signal.SIGTERM)
        _, err = dashboard.communicate(timeout=60)
    assert "Traceback" not in err, err

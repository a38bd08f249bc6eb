"""An owner's own sequential test (``POST /api/v1/sprt``, ``tonk sprt V2 V1 --arena URL``)
against the real dashboard served on loopback, with real gRPC bots registered by ``tonk
submit``: a stronger V2 (heuristic) against V1 (random) to a verdict with its estimate, from a
process that cannot import the arena; the refusals (another owner's bot, beyond the operator's
limits, a second test at once, bad fields), each changing nothing; stopping one's own test and
nobody else's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from helpers.arena import InlineBackend
from helpers.dashboard_fixtures import OPERATOR_TOKEN
from helpers.paths import ROOT
from sqlalchemy import func, select

from arena.bots.owners import create_owner
from arena.config import Settings
from arena.processes import run_process, spawn
from arena.store.db import session_scope
from arena.store.models import Owner, Tournament
from bots.heuristic import HeuristicBot
from bots.random_bot import RandomBot
from sdk.cli import main
from sdk.server import start_server

#: The operator's bounds on owners' tests in these arenas (arena/config.py).
LIMITS = {"sprt_max_pairs": 60, "sprt_max_hands": 10, "sprt_max_running": 1, "sprt_max_per_day": 3}


@pytest.fixture(scope="module")
def bots() -> Iterator[dict[str, str]]:
    """Real gRPC bots: alice's two versions (heuristic, clearly stronger, and random), bob's."""
    running = {
        "v2": start_server(HeuristicBot), "v1": start_server(RandomBot), "bob": start_server(RandomBot)
    }  # fmt: skip
    yield {name: server.address for name, server in running.items()}
    for server in running.values():
        server.stop(0)


@pytest.fixture
def serve(
    app_factory: Callable[..., Flask], bots: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., dict[str, str]]]:
    """``serve(url, sweep_s)``: the dashboard on a loopback port over the store at ``url``,
    with owners alice and bob and their bots submitted with ``tonk submit``. ``sweep_s`` 0:
    nobody queues a test's next batch, so a test stays running after its first."""
    from werkzeug.serving import make_server

    for name in ("TONK_TOKEN", "TONK_ARENA"):
        monkeypatch.delenv(name, raising=False)
    servers: list[tuple[Any, threading.Thread, Flask]] = []

    def start(url: str, sweep_s: float) -> dict[str, str]:
        settings = Settings(database_url=url, allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=2000,
                            **LIMITS)  # fmt: skip
        app = app_factory(
            url, SETTINGS=settings, TOURNAMENT_BACKEND=InlineBackend(url), TOURNAMENT_SWEEP_S=sweep_s
        )
        with session_scope(url) as session:
            tokens = {name: create_owner(session, name)[1] for name in ("alice", "bob")}
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread, app))
        arena = f"http://127.0.0.1:{server.server_port}"
        for who, name, address in (("alice", "alice-v2", bots["v2"]), ("alice", "alice-v1", bots["v1"]),
                                   ("bob", "bob-bot", bots["bob"])):  # fmt: skip
            assert main(["submit", "--name", name, "--address", address, "--arena", arena,
                         "--token", tokens[who]]) == 0  # fmt: skip
        return {"url": arena, "db": url, **tokens}

    yield start
    from dashboard.operations import close_backend

    for server, thread, app in servers:
        server.shutdown()
        thread.join()
        close_backend(app)  # its sweeper


def api(
    arena: dict[str, str], method: str, path: str, token: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{arena['url']}/api/v1{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def tournaments(db: str) -> int:
    with session_scope(db) as session:
        return session.execute(select(func.count(Tournament.id))).scalar_one()


#: Run in a separate interpreter that refuses to import the arena's packages and stacks: the
#: SDK alone must be enough for `tonk sprt --arena`.
SDK_ONLY = textwrap.dedent("""
    import sys
    SERVER = ("arena", "dashboard", "sqlalchemy", "flask", "werkzeug", "redis", "rq", "alembic")

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in SERVER:
                raise ImportError(f"not installed here: {name}")
            return None

    sys.meta_path.insert(0, Refuse())
    from sdk.cli import main
    code = main(sys.argv[1:])
    assert not [m for m in sys.modules if m.split(".")[0] in SERVER], "imported the arena"
    sys.exit(code)
""")


def sdk_only(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    environ = {k: v for k, v in os.environ.items() if k not in ("TONK_ARENA", "TONK_TOKEN")}
    return run_process([sys.executable, "-c", SDK_ONLY, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**environ, **(env or {})})  # fmt: skip


VERDICT = re.compile(
    r"^alice-v2 - alice-v1 = \+(\d+) \+/- (\d+) Elo \[([+-]\d+), \+(\d+)\]: "
    r"accepted H1 \(better by >= 150 Elo\) after (\d+) pairs$",
    re.MULTILINE,
)


def test_an_owner_tests_v2_against_v1_to_a_verdict_with_the_sdk_alone(
    serve: Callable[..., dict[str, str]], sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    arena = serve(sqlite_url, sweep_s=0.2)
    # Wide bounds (elo1 150), so that a clearly stronger V2 is accepted in a few batches (more
    # than one: the first is played as the test is created, the progress line shows the next).
    done = sdk_only("sprt", "alice-v2", "alice-v1", "--elo0", "0", "--elo1", "150", "--hands", "4",
                    "--batch", "4", "--max-pairs", "60", "--poll", "0.2", "--arena", arena["url"],
                    env={"TONK_TOKEN": arena["alice"]})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = VERDICT.search(done.stdout)
    assert found, done.stdout
    elo, margin, low, high, pairs = (int(g) for g in found.groups())
    assert low <= elo <= high and margin > 0 and 8 <= pairs <= 60, done.stdout
    assert re.search(r"^test (\d+): alice-v2 against alice-v1, H0 elo <= 0, H1 elo >= 150", done.stdout, re.M)
    assert f"its page: {arena['url']}/tournaments/1" in done.stdout
    assert "pairs, LLR" in done.stderr  # the progress line
    # The API carries what the line says: the estimate and its interval, the LLR and bounds.
    status, answer = api(arena, "GET", "/tournaments/1", arena["bob"])
    test = answer["tournament"]
    assert status == 200 and test["status"] == "finished" and test["started_by"] == "alice", test
    state = test["sprt"]
    assert state["verdict"] == "H1" and state["pairs"] == pairs and state["llr"] >= state["upper"], state
    assert round(state["estimate"]["elo"]) == elo and state["estimate"]["low"] < state["estimate"]["high"]
    # Watching a decided test again prints the same verdict at once; stopping it is refused.
    code = main(["sprt", "--watch", "1", "--arena", arena["url"], "--token", arena["alice"]])
    out, err = capsys.readouterr()
    assert code == 0 and VERDICT.search(out), out + err
    code = main(["sprt", "--stop", "1", "--arena", arena["url"], "--token", arena["alice"]])
    out, err = capsys.readouterr()
    assert code == 1 and "test 1 has finished: there is nothing to stop" in err, err
    # Without an arena, the SDK alone says what is missing.
    done = sdk_only("sprt", "alice-v2", "alice-v1")
    missing = "no arena: pass --arena URL, set TONK_ARENA, or remember one with tonk login"
    assert done.returncode == 2 and missing in done.stderr, done.stderr


def test_refusals_change_nothing_and_only_the_owner_stops_a_test(
    serve: Callable[..., dict[str, str]], writable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    arena = serve(writable_url, sweep_s=0)
    alice, bob = arena["alice"], arena["bob"]
    spec = {"new": "alice-v2", "old": "alice-v1", "elo0": 0, "elo1": 5, "batch": 2, "hands_per_match": 2,
            "max_pairs": 20}  # fmt: skip
    refused: list[tuple[dict[str, Any], int, str, str]] = [
        ({**spec, "old": "bob-bot"}, 404, "bot_not_found", "you have no active bot named 'bob-bot'"),
        ({**spec, "old": "nobody"}, 404, "bot_not_found", "you have no active bot named 'nobody'"),
        ({**spec, "max_pairs": 61}, 400, "sprt_limit", "limit of 60 pairs per test (TONK_SPRT_MAX_PAIRS)"),
        ({**spec, "hands_per_match": 11}, 400, "sprt_limit",
         "limit of 10 hands per match (TONK_SPRT_MAX_HANDS)"),
        ({**spec, "elo1": "20"}, 400, "invalid_tournament", "'elo1' must be a number, got '20'"),
        ({**spec, "elo1": -5}, 400, "invalid_sprt", "elo1 (-5) must be greater than elo0 (0)"),
        ({**spec, "hands_per_match": 2.5}, 400, "invalid_tournament",
         "'hands_per_match' must be a whole number"),
        ({**spec, "seed": 1}, 400, "invalid_tournament", "unknown field 'seed'"),
        ({**spec, "old": "alice-v2"}, 400, "invalid_tournament", "are the same bot"),
    ]
    for body, status, code, message in refused:
        got, answer = api(arena, "POST", "/sprt", alice, body)
        error = answer["error"]
        assert (got, error["code"]) == (status, code) and message in error["message"], answer
        assert "bob" not in answer["error"]["message"] or body["old"] == "bob-bot", answer
    assert tournaments(arena["db"]) == 0
    # The CLI says the same, exit 1.
    code = main(["sprt", "alice-v2", "bob-bot", "--arena", arena["url"], "--token", alice])
    assert code == 1 and "you have no active bot named 'bob-bot'" in capsys.readouterr().err

    status, answer = api(arena, "POST", "/sprt", alice, spec)
    assert status == 201, answer
    test = answer["tournament"]
    first = test["id"]
    assert test["status"] == "running" and test["url"].endswith(f"/tournaments/{first}"), test
    assert test["sprt"]["max_pairs"] == 20 and test["sprt"]["verdict"] is None, test
    # One test at once (TONK_SPRT_MAX_RUNNING): the second is refused, nothing made.
    status, answer = api(arena, "POST", "/sprt", alice, spec)
    assert status == 429 and "allows 1 at once (TONK_SPRT_MAX_RUNNING)" in answer["error"]["message"], answer
    assert tournaments(arena["db"]) == 1
    # Nobody else may stop it; its owner may, with the CLI.
    status, answer = api(arena, "POST", f"/sprt/{first}/stop", bob)
    assert status == 403 and answer["error"]["code"] == "forbidden", answer
    code = main(["sprt", "--stop", str(first), "--arena", arena["url"], "--token", alice])
    out, err = capsys.readouterr()
    assert code == 0 and f"test {first} stopped" in out, out + err
    assert re.search(r"alice-v2 - alice-v1 = [+-]\d+ \+/- \d+ Elo \[[+-]\d+, [+-]\d+\]: stopped undecided "
                     r"after 2 pairs", out), out  # fmt: skip
    detail = api(arena, "GET", f"/tournaments/{first}", bob)[1]["tournament"]
    assert detail["status"] == "paused" and detail["sprt"]["stopped"] is True, detail
    with urllib.request.urlopen(f"{arena['url']}/tournaments/{first}", timeout=60) as response:
        page = response.read().decode()
    assert "Started by its owner, alice," in page and "Stopped before a verdict, after 2 pairs." in page
    # Watching a stopped test ends at once: undecided, exit 3.
    assert main(["sprt", "--watch", str(first), "--arena", arena["url"], "--token", alice]) == 3
    assert "stopped undecided after 2 pairs" in capsys.readouterr().out
    # Stopped, it no longer counts as running; the daily bound (3) counts it.
    for _ in range(2):
        status, answer = api(arena, "POST", "/sprt", alice, spec)
        assert status == 201, answer
        assert api(arena, "POST", f"/sprt/{answer['tournament']['id']}/stop", alice)[0] == 200
    status, answer = api(arena, "POST", "/sprt", alice, spec)
    assert status == 429, answer
    assert "started 3 tests in the last 24 hours; this arena allows 3" in answer["error"]["message"]
    assert tournaments(arena["db"]) == 3
    # An operator is not bound, tests any owner's bots and may stop any test.
    status, answer = api(arena, "POST", "/sprt", OPERATOR_TOKEN,
                         {**spec, "new": "bob-bot", "max_pairs": 1000, "hands_per_match": 12})  # fmt: skip
    assert status == 201 and answer["tournament"]["sprt"]["max_pairs"] == 1000, answer
    assert api(arena, "POST", f"/sprt/{answer['tournament']['id']}/stop", OPERATOR_TOKEN)[0] == 200
    with session_scope(arena["db"]) as session:
        owners = dict(session.execute(select(Owner.id, Owner.name)).all())
        started = session.scalars(select(Tournament.owner_id).order_by(Tournament.id)).all()
    assert [owners.get(t) for t in started] == ["alice", "alice", "alice", "operator"]


def test_ctrl_c_stops_watching_not_the_test(serve: Callable[..., dict[str, str]], sqlite_url: str) -> None:
    """Interrupted, the CLI says how to watch again or stop; the test is still running."""
    import os
    import signal

    arena = serve(sqlite_url, sweep_s=0)  # nobody plays the second batch: the test stays running
    environ = {k: v for k, v in os.environ.items() if k not in ("TONK_ARENA", "TONK_TOKEN")}
    argv = ["sprt", "alice-v2", "alice-v1", "--elo1", "5", "--hands", "2", "--batch", "2",
            "--max-pairs", "20", "--poll", "0.1", "--arena", arena["url"], "--token", arena["alice"]]
    # Ctrl-C as at a terminal: a pytest-xdist worker (or a shell's background job) may run with
    # SIGINT ignored, which a child inherits and Python then leaves ignored; the CLI hung on for
    # the full minute so in two parallel runs.
    as_at_a_terminal = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    with spawn([sys.executable, "-c", SDK_ONLY, *argv], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=environ,
                          preexec_fn=as_at_a_terminal) as child:  # fmt: skip
        assert child.stderr is not None
        line = child.stderr.readline()  # the first progress line: it is watching
        assert "2 pairs, LLR" in line, line
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    assert child.returncode == 130, out + err
    assert "stopped watching; test 1 plays on" in err, err
    for action in ("--watch", "--stop"):
        assert f"tonk sprt {action} 1 --arena {arena['url']}" in err, err
    assert api(arena, "GET", "/tournaments/1", arena["bob"])[1]["tournament"]["status"] == "running"


def test_an_owners_challenges_and_tables_count_against_no_bound_of_their_tests(
    serve: Callable[..., dict[str, str]], writable_url: str
) -> None:
    """TONK_SPRT_MAX_RUNNING and _PER_DAY bound an owner's tests: their live challenge, their
    person's table and today's of each used to count against them too (every tournament the
    owner started), so a person at a table could start no test."""
    arena = serve(writable_url, sweep_s=0)
    with session_scope(arena["db"]) as session:
        alice = session.scalars(select(Owner).where(Owner.name == "alice")).one()
        for kind in ("challenge", "people") * 2:
            session.add(Tournament(name=kind, seed=1, status="running", table_sizes=[2], deals_per_table=1,
                                   hands_per_match=1, kind=kind, owner_id=alice.id))  # fmt: skip
    spec = {"new": "alice-v2", "old": "alice-v1", "elo0": 0, "elo1": 5, "batch": 2, "hands_per_match": 2,
            "max_pairs": 20}  # fmt: skip
    status, answer = api(arena, "POST", "/sprt", arena["alice"], spec)
    assert status == 201, answer
    status, answer = api(arena, "POST", "/sprt", arena["alice"], spec)  # the test itself still counts
    assert status == 429 and "allows 1 at once (TONK_SPRT_MAX_RUNNING)" in answer["error"]["message"], answer

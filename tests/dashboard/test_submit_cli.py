"""``tonk submit`` / ``tonk retire`` against the real dashboard app served on loopback (and a
tiny stdlib server for the arena's odd answers), with real bots to check."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from helpers.paths import ROOT
from sqlalchemy import select

from arena.bots.owners import create_owner
from arena.config import Settings
from arena.processes import run_process
from arena.store.db import session_scope
from arena.store.models import Bot
from bots.random_bot import RandomBot
from sdk.actions import Action
from sdk.bot import Bot as SdkBot
from sdk.cli import main
from sdk.observation import Observation
from sdk.server import start_server


class IllegalBot(SdkBot):
    name = "illegal"

    def act(self, obs: Observation) -> Action | int:
        return -1


class HeadsUpBot(SdkBot):
    """Fine at two seats (the match against random), broken at more (the protocol check)."""

    name = "heads-up"

    def act(self, obs: Observation) -> Action | int:
        return 0 if len(obs.players) == 2 else 99


@pytest.fixture(scope="module")
def bots() -> Iterator[dict[str, str]]:
    running = {
        "good": start_server(RandomBot),
        "other": start_server(RandomBot),
        "bad": start_server(IllegalBot),
        "heads_up": start_server(HeadsUpBot),
    }
    yield {name: server.address for name, server in running.items()}
    for server in running.values():
        server.stop(0)


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The dashboard app on a loopback port, with owners alice and bob; their tokens."""
    from werkzeug.serving import make_server

    from dashboard import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('arena') / 'arena.sqlite'}"
    settings = Settings(database_url=url, allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=1000)
    app = create_app({"DATABASE_URL": url, "SETTINGS": settings, "TESTING": True})
    with session_scope(url) as session:
        tokens = {name: create_owner(session, name)[1] for name in ("alice", "bob")}
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{server.server_port}", "db": url, **tokens}
    server.shutdown()
    thread.join()


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TONK_TOKEN", raising=False)
    monkeypatch.delenv("TONK_ARENA", raising=False)


def tonk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def bot_row(db: str, name: str) -> tuple[str | None, str, int] | None:
    with session_scope(db) as session:
        bot = session.scalars(select(Bot).where(Bot.name == name)).first()
        return None if bot is None else (bot.address, bot.status, len(bot.versions))


def test_submit_update_and_retire(
    arena: dict[str, str],
    bots: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = ("--arena", arena["url"])
    code, out, err = tonk(
        capsys, "submit", "--name", "cli-bot", "--address", bots["good"], *base, "--token", arena["alice"]
    )
    assert code == 0, err
    assert f"registered bot 'cli-bot' (version 1) at {bots['good']}" in out
    assert "random 1.0.0" in out and "tonk.v1" in out
    assert f"its page: {arena['url']}/bots/cli-bot" in out
    assert bot_row(arena["db"], "cli-bot") == (bots["good"], "active", 1)

    # The same name again, by anyone: a clear refusal, exit 1, nothing changed; its owner is
    # told how to update it instead.
    for who in ("alice", "bob"):
        code, out, err = tonk(
            capsys, "submit", "--name", "cli-bot", "--address", bots["other"], *base, "--token", arena[who]
        )
        assert code == 1 and "refused (409 name_taken)" in err and "'cli-bot'" in err
        hint = f"it is your bot: tonk submit --name cli-bot --address {bots['other']} --update"
        assert (hint in err) == (who == "alice"), err
    code, _, err = tonk(
        capsys,
        "submit",
        "--update",
        "--name",
        "cli-bot",
        "--address",
        bots["other"],
        *base,
        "--token",
        arena["bob"],
    )
    assert code == 1 and "refused (403 not_owner)" in err
    assert bot_row(arena["db"], "cli-bot") == (bots["good"], "active", 1)

    # The owner updates it (token from the environment this time), then retires it.
    monkeypatch.setenv("TONK_TOKEN", arena["alice"])
    monkeypatch.setenv("TONK_ARENA", arena["url"] + "/")
    code, out, err = tonk(capsys, "submit", "--update", "--name", "cli-bot", "--address", bots["other"])
    assert code == 0, err
    assert f"updated bot 'cli-bot' (version 2) at {bots['other']}" in out
    assert "nothing that plays changed" not in out
    # The same again: nothing that plays changed, so the version (and its rating) is kept, and
    # the author is told so rather than left to think a new version is being rated.
    code, out, err = tonk(capsys, "submit", "--update", "--name", "cli-bot", "--address", bots["other"])
    assert code == 0, err
    assert f"kept bot 'cli-bot' (version 2) at {bots['other']}" in out
    assert "nothing that plays changed" in out and "raise your bot's version" in out
    code, out, err = tonk(capsys, "retire", "cli-bot")
    assert code == 0 and "retired bot 'cli-bot'" in out
    assert bot_row(arena["db"], "cli-bot") == (bots["other"], "retired", 2)
    code, _, err = tonk(capsys, "retire", "no-such-bot")
    assert code == 1 and "refused (404 bot_not_found)" in err
    # Brought back: checked again where it is served; unchanged, so the same version (its
    # rating goes on: each version is rated apart).
    code, out, err = tonk(capsys, "restore", "cli-bot")
    assert code == 0 and "bot 'cli-bot' is active (version 2)" in out, err
    assert bot_row(arena["db"], "cli-bot") == (bots["other"], "active", 2)
    code, out, err = tonk(capsys, "restore", "cli-bot")  # already active: nothing changes
    assert code == 0 and bot_row(arena["db"], "cli-bot") == (bots["other"], "active", 2)
    code, _, err = tonk(capsys, "restore", "cli-bot", "--token", arena["bob"])
    assert code == 1 and "refused (403 not_owner)" in err

    code, out, _ = tonk(capsys, "submit", "--name", "json-bot", "--address", bots["good"], "--json")
    assert code == 0 and json.loads(out)["bot"]["version"]["number"] == 1


def test_refusals_are_explained(
    arena: dict[str, str], bots: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    def submit(name: str, address: str, token: str) -> tuple[int, str]:
        code, out, err = tonk(
            capsys, "submit", "--name", name, "--address", address, "--arena", arena["url"], "--token", token
        )
        assert out == ""
        return code, err

    code, err = submit("cheater", bots["bad"], arena["alice"])
    assert code == 1 and "refused (422 conformance_failed)" in err
    assert re.search(r"fault: hand \d+, decision \d+: illegal: action index -1", err) and "--seed" in err
    code, err = submit("heads-up", bots["heads_up"], arena["alice"])
    assert code == 1 and "protocol check" in err and "illegal" in err
    assert f"the full report: tonk check {bots['heads_up']}" in err
    code, err = submit("forged", bots["good"], "tonk_" + "x" * 43)
    assert code == 1 and "refused (401 unauthenticated)" in err
    code, err = submit("Bad Name", bots["good"], arena["alice"])
    assert code == 1 and "refused (400 invalid_bot_name)" in err
    code, err = submit("private", "10.1.2.3:50051", arena["alice"])
    assert code == 1 and "refused (422 address_not_allowed)" in err and "10.1.2.3:50051" in err
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    code, err = submit("ghost", f"127.0.0.1:{closed}", arena["alice"])
    assert code == 1 and "refused (422 bot_unreachable)" in err
    for name in ("cheater", "heads-up", "forged", "private", "ghost"):
        assert bot_row(arena["db"], name) is None


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = tonk(capsys, "submit", "--name", "x1", "--address", "h:1", "--arena", "http://127.0.0.1:9")
    assert code == 2 and "TONK_TOKEN" in err
    code, _, err = tonk(capsys, "submit", "--name", "x1", "--address", "h:1", "--token", "t")
    assert code == 2 and "TONK_ARENA" in err
    code, _, err = tonk(
        capsys, "submit", "--name", "x1", "--address", "h:1", "--token", "t", "--arena", "ftp://x"
    )
    assert code == 2 and "not an http" in err
    code, _, err = tonk(
        capsys, "submit", "--name", "x1", "--address", "nohost", "--token", "t", "--arena", "http://h"
    )
    assert code == 2 and "HOST:PORT" in err
    with pytest.raises(SystemExit) as exited:
        main(["submit", "--name", "x1"])
    assert exited.value.code == 2


class _FakeArena(BaseHTTPRequestHandler):
    """Answers whatever the test queued, and records what it was sent."""

    answers: list[tuple[int, dict[str, str], bytes]] = []
    seen: list[dict[str, Any]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        type(self).seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        status, headers, payload = type(self).answers.pop(0)
        self.send_response(status)
        for key, value in {"Content-Length": str(len(payload)), **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_PUT = do_DELETE = do_GET = _answer  # noqa: N815 - the names http.server calls

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake_arena() -> Iterator[str]:
    _FakeArena.answers, _FakeArena.seen = [], []
    server = HTTPServer(("127.0.0.1", 0), _FakeArena)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/prefix"
    server.shutdown()
    server.server_close()
    thread.join()


def test_what_is_sent_and_odd_answers(fake_arena: str, capsys: pytest.CaptureFixture[str]) -> None:
    bot = {"name": "b1", "address": "bots.example.org:50051", "version": {"number": 3, "info": {}}}
    _FakeArena.answers = [
        (200, {"Content-Type": "application/json"}, json.dumps({"bot": bot}).encode()),
        (502, {"Content-Type": "text/html"}, b"<h1>Bad Gateway</h1>"),
        (302, {"Location": "https://elsewhere.example/api/v1/bots"}, b""),
        (200, {}, b"not json"),
    ]
    args = ("--arena", fake_arena, "--token", "tonk_secret")
    code, out, _ = tonk(
        capsys, "submit", "--update", "--name", "b1", "--address", "bots.example.org:50051", *args
    )
    assert code == 0 and "updated bot 'b1' (version 3)" in out
    sent = _FakeArena.seen[0]
    assert (sent["method"], sent["path"]) == ("PUT", "/prefix/api/v1/bots/b1")
    assert sent["headers"]["Authorization"] == "Bearer tonk_secret"
    assert sent["headers"]["Content-Type"] == "application/json"
    assert json.loads(sent["body"]) == {"address": "bots.example.org:50051"}

    code, _, err = tonk(capsys, "retire", "b1", *args)
    assert code == 1 and "HTTP 502" in err and "Bad Gateway" in err
    assert _FakeArena.seen[1]["method"] == "DELETE"
    code, _, err = tonk(capsys, "retire", "b1", *args)  # a redirect is reported, not followed
    assert code == 1 and "redirected to https://elsewhere.example" in err and len(_FakeArena.seen) == 3
    code, _, err = tonk(capsys, "retire", "b1", *args)
    assert code == 1 and "not JSON" in err


def test_unreachable_arena(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, err = tonk(capsys, "retire", "b1", "--arena", f"http://127.0.0.1:{port}", "--token", "t")
    assert code == 1 and "cannot reach the arena" in err


def test_the_command_needs_only_the_sdk() -> None:
    """A bot author's machine has no arena, dashboard or database packages: the command must
    neither import them nor need them to run."""
    code = textwrap.dedent(
        """
        import argparse, sys
        import sdk.commands.submit as submit
        parser = argparse.ArgumentParser()
        submit.register(parser.add_subparsers())
        args = parser.parse_args(["submit", "--name", "x1", "--address", "h:1", "--arena", "http://h"])
        status = args.func(args)
        bad = [m for m in sys.modules if m.split(".")[0] in ("arena", "dashboard", "sqlalchemy", "flask")]
        assert not bad, bad
        sys.exit(status)
        """
    )
    done = run_process(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": os.environ["TMPDIR"]},
    )
    assert done.returncode == 2, done.stderr
    assert "TONK_TOKEN" in done.stderr and "Traceback" not in done.stderr


def test_the_guide_lists_every_refusal_code_of_submit_with_its_fix() -> None:
    import inspect

    from arena import errors
    from arena.bots import addresses, registry
    from dashboard import checks

    codes = {errors.AuthenticationError.code}
    for module in (registry, addresses, checks):
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, errors.ArenaError) and cls.__module__ == module.__name__:
                codes.add(cls.code)
    guide = (ROOT / "docs" / "bot-author-guide.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| \d{3} \| (.+) \|$", guide, re.M))
    assert codes <= set(rows), sorted(codes - set(rows))
    assert all(len(fix) > 20 for fix in rows.values())


class SneakyBot(SdkBot):
    """Its GetInfo carries a right-to-left override, as a hostile author's might."""

    name = "sneaky\u202etxt.exe"
    author = "mallory\u2066\u200b"

    def act(self, obs: Observation) -> Action | int:
        return 0


class SneakyFaultBot(SdkBot):
    name = "sneaky-fault"

    def act(self, obs: Observation) -> Action | int:
        raise RuntimeError("boom\u202e!kcatta")


def test_a_bots_text_reaches_the_terminal_escaped(
    arena: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29, point 8: `tonk submit` writes a bot's bidi and invisible characters as
    <U+XXXX>, whether they come back in its registered info or in a refusal's faults."""
    servers = [start_server(SneakyBot), start_server(SneakyFaultBot)]
    try:
        base = ("--arena", arena["url"], "--token", arena["alice"])
        code, out, err = tonk(capsys, "submit", "--name", "sneaky", "--address", servers[0].address, *base)
        assert code == 0, err
        assert "sneaky<U+202E>txt.exe" in out and "mallory<U+2066><U+200B>" in out, out
        code, out, err = tonk(capsys, "submit", "--name", "sneaky2", "--address", servers[1].address, *base)
        assert code == 1 and "boom<U+202E>!kcatta" in err, err
        for text in (out, err):
            assert not any(ch in text for ch in "\u202e\u2066\u200b"), text
    finally:
        for server in servers:
            server.stop(0)

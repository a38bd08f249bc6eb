"""``tonk login`` against the real dashboard app served on loopback: the arena and token are
remembered once and every command that talks to the arena uses them (issue #40: the README's
own `tonk logs my-bot` failed for want of TONK_ARENA); ``tonk logs`` of a bot the arena does not
run says why it has no logs rather than "yet"."""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.bots.connected import register_connected_bot
from arena.bots.owners import create_owner
from arena.config import Settings
from arena.store.db import session_scope
from arena.store.models import Owner
from bots.random_bot import RandomBot
from sdk.cli import main
from sdk.server import start_server


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The dashboard app on a loopback port with the owner alice; her token."""
    from werkzeug.serving import make_server

    from dashboard import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('arena') / 'arena.sqlite'}"
    settings = Settings(database_url=url, allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=1000)
    app = create_app({"DATABASE_URL": url, "SETTINGS": settings, "TESTING": True})
    with session_scope(url) as session:
        token = create_owner(session, "alice")[1]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{server.server_port}", "db": url, "alice": token}
    server.shutdown()
    thread.join()


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TONK_ARENA", "TONK_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TONK_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config" / "arena.json"


def tonk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_login_once_then_no_arena_or_token_on_any_command(
    arena: dict[str, str], config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(RandomBot)
    try:
        code, out, err = tonk(capsys, "logs", "lg-bot")
        assert code == 2, err
        assert "no arena: pass --arena URL, set TONK_ARENA, or remember one with tonk login" in err

        code, out, err = tonk(capsys, "login", "--arena", arena["url"] + "/", "--token", arena["alice"])
        assert code == 0, err
        assert f"remembered {arena['url']} and your token in {config}" in out
        assert arena["alice"] not in out + err
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert json.loads(config.read_text()) == {"arena": arena["url"], "token": arena["alice"]}

        code, out, err = tonk(capsys, "submit", "--name", "lg-bot", "--address", server.address)
        assert code == 0, err
        assert "registered bot 'lg-bot' (version 1)" in out and f"{arena['url']}/bots/lg-bot" in out
        # Which number is which (issue #40: a v2 saying 0.2.0 registered as "version 1").
        which = "version 1 is the arena's count of lg-bot's versions (an --update adds one); 1.0.0 is"
        assert f"{which} the bot's own, from its GetInfo" in out, out
        # A bot served elsewhere never has arena logs: said so, not "yet".
        code, out, err = tonk(capsys, "logs", "lg-bot")
        assert code == 0, err
        assert "no match logs of 'lg-bot': the arena keeps what a bot it runs from an upload prints" in out
        assert f"it is served at {server.address}, so it prints where you serve it" in out
        assert "yet" not in out
        # ... nor one that connects out (registered as the gateway registers it).
        with session_scope(arena["db"]) as session:
            alice = session.query(Owner).filter_by(name="alice").one()
            register_connected_bot(session, alice, "lg-linked", {"name": "random", "version": "1.0.0"})
        code, out, err = tonk(capsys, "logs", "lg-linked")
        assert code == 0, err
        assert "it connects out (tonk serve --connect), so it prints in the terminal where it runs" in out
        code, out, err = tonk(capsys, "retire", "lg-bot")
        assert code == 0 and "retired bot 'lg-bot'" in out, err

        # The remembered token goes to the remembered arena only, however it is spelled.
        code, _, err = tonk(capsys, "retire", "lg-bot", "--arena", "http://127.0.0.1:9")
        assert code == 2 and "no API token for http://127.0.0.1:9" in err
        monkeypatch.setenv("TONK_ARENA", arena["url"].replace("http://", "HTTP://") + "/")
        code, out, err = tonk(capsys, "restore", "lg-bot")
        assert code == 0 and "bot 'lg-bot' is active" in out, err
        monkeypatch.delenv("TONK_ARENA")

        # A rotated token replaces the remembered one: the next command still works.
        code, out, err = tonk(capsys, "owner", "rotate-token")
        assert code == 0, err
        new = out.strip()
        assert new != arena["alice"] and f"the new token replaces the old in {config}" in err
        assert json.loads(config.read_text())["token"] == new
        code, out, err = tonk(capsys, "retire", "lg-bot")
        assert code == 0, err

        code, out, _ = tonk(capsys, "logout")
        assert code == 0 and f"forgot the arena remembered in {config}" in out and not config.exists()
        code, _, err = tonk(capsys, "retire", "lg-bot")
        assert code == 2 and "no arena" in err
    finally:
        server.stop(0)


def test_login_asks_the_arena_first(
    arena: dict[str, str], config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = tonk(capsys, "login", "--arena", arena["url"] + "/no/such/place", "--token", "tonk_x")
    assert code == 1 and "is not a Tonk arena: GET /api/v1/ answered HTTP 404; nothing remembered" in err
    assert not config.exists()
    # Only the arena (no token anywhere): remembered, and said.
    code, out, err = tonk(capsys, "login", "--arena", arena["url"])
    assert code == 0, err
    assert "(no token: pass --token or set TONK_TOKEN for that)" in out
    code, _, err = tonk(capsys, "retire", "lg-bot")
    assert code == 2 and f"no API token for {arena['url']}" in err


def test_sprt_and_the_bots_page_use_the_remembered_arena(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.commands.bot import page_url

    assert page_url("bots/x") == "the dashboard's /bots/x (tonk login --arena URL gives its address)"
    assert tonk(capsys, "login", "--arena", "http://127.0.0.1:9", "--token", "tonk_x", "--no-check")[0] == 0
    assert page_url("bots/x") == "http://127.0.0.1:9/bots/x"
    # `tonk sprt` takes the owner's form over the API, not the operator's on the store.
    code, _, err = tonk(capsys, "sprt", "a-v2", "a")
    assert code == 1 and "tonk sprt: cannot reach the arena at http://127.0.0.1:9/api/v1/sprt" in err, err

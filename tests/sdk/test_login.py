"""The remembered arena (sdk/login.py): where its file is, what it accepts, and that a broken
file is named and never stands in the way of a command given its arena and token outright."""

from __future__ import annotations

import json
import stat
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from sdk.cli import main
from sdk.login import (
    ArenaURLError,
    Login,
    LoginFileError,
    Target,
    TokenError,
    check_arena_url,
    check_token,
    config_dir,
    read_login,
    resolve,
    write_login,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user with a home of their own and no arena named anywhere."""
    for name in ("TONK_CONFIG_DIR", "XDG_CONFIG_HOME", "TONK_ARENA", "TONK_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_file_is_in_the_users_config_folder(home: Path, tmp_path: Path) -> None:
    assert config_dir() == home / ".config" / "tonk"
    xdg = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert config_dir(xdg) == tmp_path / "xdg" / "tonk"
    # A relative XDG_CONFIG_HOME is ignored, as the XDG spec says; TONK_CONFIG_DIR wins over both.
    assert config_dir({"HOME": str(home), "XDG_CONFIG_HOME": "rel"}) == home / ".config" / "tonk"
    assert config_dir({**xdg, "TONK_CONFIG_DIR": str(tmp_path / "c")}) == tmp_path / "c"


def test_written_for_its_owner_only_and_read_back(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_login(Login("HTTPS://Arena.Example.org/tonk/", "tonk_abc"))
    assert path == home / ".config" / "tonk" / "arena.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"arena": "https://arena.example.org/tonk", "token": "tonk_abc"}
    assert read_login() == Login("https://arena.example.org/tonk", "tonk_abc")
    assert [p.name for p in path.parent.iterdir()] == ["arena.json"]  # no temporary file left

    # Flag, then environment, then the file; the file's token only for the file's arena.
    assert resolve(None, None) == Target("https://arena.example.org/tonk", "tonk_abc", True, True)
    assert resolve("https://arena.example.org/tonk/", None).token == "tonk_abc"  # the same arena
    assert resolve("https://elsewhere.example.org", None).token == ""  # never sent elsewhere
    assert resolve(None, "tonk_flag").token == "tonk_flag"
    monkeypatch.setenv("TONK_ARENA", "https://evil.example.org")
    assert resolve(None, None) == Target("https://evil.example.org", "")
    monkeypatch.setenv("TONK_TOKEN", "tonk_env")
    assert resolve(None, None) == Target("https://evil.example.org", "tonk_env")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("", "empty"),
        ("ftp://arena.example.org", "not an http"),
        ("arena.example.org", "not an http"),
        ("http://", "not an http"),
        ("https://alice:secret@arena.example.org", "no user or password"),
        ("https://arena.example.org/?x=1", "no query"),
        ("https://arena.example.org/#top", "no query or fragment"),
        ("https://arena.example.org:99999", "port"),
        ("https://arena.example.org:http", "port"),
        ("https://arena.exa\tmple.org", "control"),  # urllib.parse would drop the tab silently
        ("https://arena.example.org/a b", "blanks"),
        ("https://arène.example.org", "non-ASCII"),
        ("https://a.example.org/" + "x" * 2000, "longer than"),
    ],
)
def test_a_url_that_is_not_an_arenas_is_refused(url: str, why: str) -> None:
    with pytest.raises(ArenaURLError, match=why) as refused:
        check_arena_url(url)
    assert "secret" not in str(refused.value)


def test_a_token_must_fit_a_header() -> None:
    assert check_token(" tonk_abc ") == "tonk_abc"
    for bad in ("", "tonk_a\r\nX-Evil: 1", "tonk a", "tönk", "t" * 513):
        with pytest.raises(TokenError) as refused:
            check_token(bad)
        assert bad.strip() == "" or bad not in str(refused.value)  # the token is never shown


def test_a_broken_file_is_named_and_bypassed_by_flags(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = home / ".config" / "tonk"
    folder.mkdir(parents=True)
    for text in ("{not json", '["https://a.example.org"]', '{"arena": "ftp://x"}',
                 '{"arena": "https://a.example.org", "token": 5}', "x" * 20000):  # fmt: skip
        (folder / "arena.json").write_text(text)
        with pytest.raises(LoginFileError, match="tonk logout removes it"):
            read_login()
        assert main(["logs", "my-bot"]) == 2
        err = capsys.readouterr().err
        assert f"tonk logs: {folder / 'arena.json'}: not a login tonk login wrote" in err, err
    # Given its arena and token outright, a command does not read the file at all.
    assert main(["logs", "my-bot", "--arena", "http://127.0.0.1:9", "--token", "t"]) == 1
    assert "cannot reach the arena" in capsys.readouterr().err
    assert main(["logout"]) == 0 and not (folder / "arena.json").exists()


def test_login_refuses_bad_input_and_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = home / ".config" / "tonk" / "arena.json"
    assert main(["login"]) == 2 and "nothing remembered" in capsys.readouterr().err
    assert main(["login", "--token", "tonk_x"]) == 2 and "no arena" in capsys.readouterr().err
    assert main(["login", "--arena", "https://bob:pw@arena.example.org", "--no-check"]) == 2
    assert "no user or password" in capsys.readouterr().err
    assert main(["login", "--arena", "https://arena.example.org", "--token", "a b", "--no-check"]) == 2
    assert "blanks" in capsys.readouterr().err
    assert main(["login", "--arena", "http://127.0.0.1:9"]) == 1  # nothing answers: not remembered
    assert "nothing remembered" in capsys.readouterr().err
    assert not file.exists()
    assert main(["login", "--arena", "https://arena.example.org", "--token", "tonk_sec", "--no-check"]) == 0
    out, err = capsys.readouterr()
    assert "https://arena.example.org" in out and str(file) in out and "tonk_sec" not in out + err
    assert main(["login"]) == 0
    out, err = capsys.readouterr()
    assert "https://arena.example.org (with a token)" in out and "tonk_sec" not in out + err


class _Elsewhere(BaseHTTPRequestHandler):
    """A server that is no arena: a redirect, then a page that is not the API's index."""

    def do_GET(self) -> None:
        if self.path.startswith("/moved"):
            self.send_response(301)
            self.send_header("Location", "https://arena.example.org/api/v1/")
            body = b""
        else:
            self.send_response(200)
            body = b"<html>a blog</html>"
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_login_follows_no_redirect_and_wants_the_api(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Elsewhere)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        assert main(["login", "--arena", base + "/moved", "--token", "tonk_x"]) == 1
        err = capsys.readouterr().err
        assert "answered HTTP 301 to https://arena.example.org/api/v1/: log in at that URL" in err, err
        assert main(["login", "--arena", base, "--token", "tonk_x"]) == 1
        assert "is not a Tonk arena (GET /api/v1/ is not its API index)" in capsys.readouterr().err
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert not (home / ".config" / "tonk" / "arena.json").exists()

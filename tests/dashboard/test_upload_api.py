"""Uploaded bots over the real dashboard app on loopback: ``tonk submit --upload``, ``tonk
logs``, and the API routes behind them, with the real build and the real sandbox check.
Builds and logs are their owner's: anyone else gets the 404 a bot without any gets."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.archives import bomb, project, tar_gz
from helpers.arena import UNHURRIED_CHECK
from sqlalchemy import func, select

from arena.bots.owners import create_owner
from arena.config import Settings
from arena.store.db import session_scope
from arena.store.models import Bot, FaultRecord, Match, MatchLog, Tournament, Upload
from sdk.cli import main

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@pytest.fixture(scope="module")
def arena() -> Iterator[dict[str, str]]:
    """The dashboard app on a loopback port, owners alice, bob and an operator; their tokens."""
    from werkzeug.serving import make_server

    from dashboard import create_app

    folder = Path(tempfile.mkdtemp(prefix="tonk-upload-api-"))
    folder.chmod(0o755)  # the sandbox's own uid reads the bundles under it
    url = f"sqlite:///{folder / 'arena.sqlite'}"
    settings = Settings(
        **UNHURRIED_CHECK, data_dir=str(folder), database_url=url, upload_max_bytes=256 * 1024
    )
    app = create_app({"DATABASE_URL": url, "SETTINGS": settings, "TESTING": True})
    with session_scope(url) as session:
        tokens = {name: create_owner(session, name)[1] for name in ("alice", "bob")}
        tokens["root"] = create_owner(session, "root", operator=True)[1]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{server.server_port}", "db": url, **tokens}
    server.shutdown()
    thread.join()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TONK_TOKEN", raising=False)
    monkeypatch.delenv("TONK_ARENA", raising=False)


def tonk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def call(arena: dict[str, str], method: str, path: str, who: str | None = None,
         data: bytes | None = None) -> tuple[int, dict[str, Any]]:  # fmt: skip
    request = urllib.request.Request(arena["url"] + "/api/v1" + path, data=data, method=method)
    if who is not None:
        request.add_header("Authorization", f"Bearer {arena[who]}")
    if data is not None:
        request.add_header("Content-Type", "application/gzip")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def page(arena: dict[str, str], path: str, who: str | None) -> str:
    request = urllib.request.Request(arena["url"] + path)
    if who is not None:
        request.add_header("Authorization", f"Bearer {arena[who]}")
    with urllib.request.urlopen(request, timeout=60) as response:
        return str(response.read().decode())


def uploads(arena: dict[str, str]) -> int:
    with session_scope(arena["db"]) as session:
        return int(session.scalar(select(func.count()).select_from(Upload)) or 0)


def write(folder: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_submit_upload_update_build_log_and_match_logs(
    arena: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = write(tmp_path / "tiny", project())
    base = ("--arena", arena["url"], "--token", arena["alice"])
    code, out, err = tonk(capsys, "submit", "--name", "tiny", "--upload", str(folder), *base)
    assert code == 0, err
    assert "registered bot 'tiny' (version 1), built and run by the arena" in out
    assert "tiny 0.1.0, protocol tonk.v1" in out and "tonk logs tiny" in out

    code, _, err = tonk(capsys, "submit", "--name", "tiny", "--upload", str(folder), *base)
    assert code == 1 and "refused (409 name_taken)" in err
    assert f"tonk submit --name tiny --upload {folder} --update" in err
    code, out, err = tonk(capsys, "submit", "--name", "tiny", "--upload", str(folder), "--update", *base)
    # The same folder packs to the same bytes: stored once, and the same version still (its
    # rating goes on: each version is rated apart, issue #27).
    assert code == 0 and "kept bot 'tiny' (version 1)" in out and "nothing that plays changed" in out, err
    assert uploads(arena) == 1

    code, out, err = tonk(capsys, "logs", "tiny", "--build", *base)
    assert code == 0 and "ok" in out.splitlines()[0] and "no dependencies to install" in out, err
    for who in ("bob", None):
        status, body = call(arena, "GET", "/bots/tiny/build", who)
        assert (status, body["error"]["code"]) == (404, "not_found")
        build_id = call(arena, "GET", "/bots/tiny/build", "alice")[1]["build"]["id"]
        assert call(arena, "GET", f"/builds/{build_id}", who)[0] == 404
    assert call(arena, "GET", f"/builds/{build_id}", "root")[0] == 200
    public = call(arena, "GET", "/bots/tiny")[1]["bot"]
    assert "log" not in json.dumps(public) and "sha256" not in json.dumps(public)

    # A match log as the hosted seat writes it (the lead's half): shown to alice only.
    with session_scope(arena["db"]) as session:
        bot = session.scalars(select(Bot).where(Bot.name == "tiny")).one()
        tournament = Tournament(name="t", seed=1, table_sizes=[2], deals_per_table=1, hands_per_match=1)
        match = Match(
            tournament=tournament, key="k", table_index=0, deal_index=0, rotation=0, seed=1, hands=1
        )
        session.add_all([tournament, match])
        session.flush()
        session.add(MatchLog(match_id=match.id, seat=1, bot_id=bot.id, text="thinking...\nplayed", bytes=19))
        # Its fault names the sandbox limit it ran into (#37): the log list says so to its owner.
        reason = "sandbox limit: out of memory (its processes used all 512 MB ...); cannot reach the bot"
        session.add(FaultRecord(match_id=match.id, seat=1, bot_id=bot.id, hand_index=0, decision=2,
                                kind="unreachable", reason=reason))  # fmt: skip
        match_id = match.id
    code, out, err = tonk(capsys, "logs", "tiny", *base)
    assert code == 0 and f"match {match_id}  seat 1  19 bytes" in out, err
    code, out, err = tonk(capsys, "logs", "tiny", "--match", str(match_id), *base)
    assert code == 0 and "thinking...\nplayed" in out
    code, _, err = tonk(capsys, "logs", "tiny", "--arena", arena["url"], "--token", arena["bob"])
    assert code == 1 and "refused (404 not_found)" in err
    assert call(arena, "GET", f"/bots/tiny/logs?match={match_id}")[0] == 404
    assert call(arena, "GET", "/bots/tiny/logs?match=x", "alice")[0] == 400

    # The bot page: what kind of bot it is for everyone; the build and logs for its owner only.
    assert call(arena, "GET", "/bots/tiny")[1]["bot"]["plays"] == "uploaded"
    for who, private in (("bob", False), (None, False), ("alice", True), ("root", True)):
        text = page(arena, "/bots/tiny", who)
        assert "starting it fresh every match" in text
        assert ("Build log" in text and "no dependencies to install" in text) == private, who
        assert (f'match <a href="/matches/{match_id}">{match_id}</a> seat 1, 19 bytes' in text) == private
        assert ("ended by out of memory</span>" in text) == private
        assert "ended by process limit" not in text
        assert ("are its owner" in text) != private, text[text.find("lede") : text.find("lede") + 1500]


@pytest.mark.parametrize(
    ("archive", "status", "code", "quoted"),
    [
        (tar_gz(project({"../evil.py": "x"})), 422, "unsafe_member", "'../evil.py'"),
        (b"PK\x03\x04" + bytes(64), 422, "not_an_archive", "this is a zip"),
        (tar_gz(project(manifest=None)), 400, "manifest_missing", "tonk.toml"),
        (tar_gz(project(manifest='[bot]\nentry = "tiny_bot:TinyBot"\ndependencies = ["six==1.17.0"]\n')),
         422, "dependency_not_allowed", "this arena installs no dependencies"),
        (bytes(300 * 1024), 413, "too_large", ""),
        # Over the app's 64 KiB for JSON bodies, under the upload limit: read, and judged.
        (tar_gz(project({"noise.bin": random.Random(2).randbytes(100_000)}, manifest=None)), 400,
         "manifest_missing", "tonk.toml"),
        (bomb(100 * 1024 * 1024), 422, "unpacked_too_large", "reached at 'zeros.bin'"),
    ],
)  # fmt: skip
def test_a_refused_upload_answers_clearly_and_stores_nothing(
    arena: dict[str, str], archive: bytes, status: int, code: str, quoted: str
) -> None:
    before = uploads(arena)
    answer_status, body = call(arena, "POST", "/bots/refused/upload", "bob", archive)
    assert (answer_status, body["error"]["code"]) == (status, code)
    assert quoted in body["error"]["message"]
    assert uploads(arena) == before and call(arena, "GET", "/bots/refused")[0] == 404


def test_an_upload_needs_a_token(arena: dict[str, str]) -> None:
    assert call(arena, "POST", "/bots/anon/upload", None, tar_gz(project()))[0] == 401


def test_submit_upload_of_a_folder_without_a_manifest_is_a_usage_error(
    arena: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = write(tmp_path / "bare", project(manifest=None))
    code, _, err = tonk(capsys, "submit", "--name", "bare", "--upload", str(folder), "--arena", arena["url"],
                        "--token", arena["bob"])  # fmt: skip
    assert code == 2 and "has no tonk.toml" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--address", "127.0.0.1:50051"), "not allowed with argument"),
        (("--show-claim",), "--show-claim is for a bot at an --address"),
    ],
)
def test_upload_with_address_options_is_a_usage_error(
    arena: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    extra: tuple[str, ...],
    message: str,
) -> None:
    folder = write(tmp_path / "tiny", project())
    argv = [
        "submit",
        "--name",
        "both",
        "--upload",
        str(folder),
        *extra,
        "--arena",
        arena["url"],
        "--token",
        "t",
    ]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = int(exc.code or 0)
    assert code == 2 and message in capsys.readouterr().err


def test_a_failed_build_is_refused_with_its_log_and_the_log_stays_readable(
    arena: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = write(tmp_path / "broken", project(manifest='[bot]\nentry = "missing:Bot"\n'))
    base = ("--arena", arena["url"], "--token", arena["bob"])
    code, _, err = tonk(capsys, "submit", "--name", "broken", "--upload", str(folder), *base)
    assert code == 1 and "refused (422 build_failed): the build failed; the end of its log:" in err
    assert "the upload has no missing.py" in err
    build_id = int(err.split("GET /api/v1/builds/")[1].split()[0])
    status, body = call(arena, "GET", f"/builds/{build_id}", "bob")
    assert status == 200 and body["build"]["status"] == "failed" and "missing.py" in body["build"]["log"]
    assert call(arena, "GET", f"/builds/{build_id}", "alice")[0] == 404
    assert call(arena, "GET", "/bots/broken")[0] == 404  # no bot was entered

"""One store wherever you stand: the arena's commands use the per-user store, not a file
under the current folder, and say which store they use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT

from arena.processes import run_process, spawn


def tonk(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_process([sys.executable, "-m", "sdk.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_owner_create_from_any_folder_uses_and_names_the_one_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("TONK_DATA_DIR", "TONK_DATABASE_URL")}
    env |= {"HOME": str(home), "XDG_DATA_HOME": "", "PYTHONPATH": str(ROOT)}
    checkout, bot = tmp_path / "checkout", tmp_path / "my-bot"
    checkout.mkdir()
    bot.mkdir()
    store = home / ".local" / "share" / "tonk-arena" / "tonk-arena.sqlite"

    made = tonk(checkout, env, "owner", "create", "alice")
    assert made.returncode == 0, made.stderr
    assert f"in the store {store} (SQLite)" in made.stderr
    again = tonk(bot, env, "owner", "create", "alice")  # another folder: the same arena
    assert again.returncode == 1 and "already" in again.stderr, again.stderr
    # `export TONK_TOKEN=$(tonk owner create alice)` a second time empties the variable: the
    # refusal says so and names the command that replaces a lost token (which works).
    assert again.stdout == "" and "TONK_TOKEN" in again.stderr, again.stderr
    assert "tonk owner rotate alice" in again.stderr, again.stderr
    rotated = tonk(bot, env, "owner", "rotate", "alice")
    assert rotated.returncode == 0 and rotated.stdout.startswith("tonk_"), rotated.stderr
    assert store.exists()
    assert not (checkout / "var").exists() and not (bot / "var").exists()

    listed = tonk(bot, env, "tournament", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"store: {store} (SQLite)" in listed.stderr


def test_a_wrong_bot_name_in_a_tournament_suggests_the_closest(sqlite_url: str) -> None:
    import pytest

    from arena.bots.hosting import ensure_house_bots
    from arena.config import load_settings
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import UnknownBotError, resolve_bots

    with session_scope(sqlite_url) as session:
        with pytest.raises(UnknownBotError, match="no bot is registered yet"):
            resolve_bots(session, ["random"])
        ensure_house_bots(session, load_settings(), check=False)
        with pytest.raises(UnknownBotError, match=r"no bot named 'greedyy'; did you mean 'greedy'\?"):
            resolve_bots(session, ["random", "greedyy"])


def test_tonk_dashboard_names_its_store(tmp_path: Path) -> None:
    env = {**os.environ, "TONK_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    env.pop("TONK_DATABASE_URL", None)
    server = spawn([sys.executable, "-m", "sdk.cli", "dashboard", "--port", "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        assert server.stdout is not None
        line = ""
        while "dashboard at" not in line:  # after the in-process gateway's line
            line = server.stdout.readline()
            if not line:
                break
    finally:
        server.terminate()
        server.wait(30)
    assert f"(store: {tmp_path / 'data' / 'tonk-arena.sqlite'} (SQLite))" in line, line

"""``tonk demo``, the README's main job, end to end (without serving the dashboard): house
bots on local gRPC ports, a round-robin on the embedded pool, the leaderboard. Its store is
the one an earlier demo may have left behind, so it is brought up to the current schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import select, text

from arena.db import dispose_engines, session_scope
from arena.migrate import VERSION_TABLE, migrate
from arena.migrations import HEAD
from arena.models import Match, Tournament
from arena.rating_terms import legend

ROOT = Path(__file__).resolve().parent.parent


def run_demo(cwd: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``tonk demo ARGS --tables 2 --no-serve`` on the store ``url``, the embedded pool and
    the search bot's demo budget; asserts it exits 0."""
    env = {**os.environ, "TONK_DATABASE_URL": url, "TONK_REDIS_URL": "", "TONK_EMBEDDED_WORKERS": "2"}
    env.pop("TONK_SEARCH_BUDGET_MS", None)
    done = subprocess.run(
        [sys.executable, "-m", "sdk.cli", "demo", *args, "--tables", "2", "--no-serve"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_tonk_demo_plays_a_round_robin_on_a_store_an_older_version_left(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tonk-arena.sqlite'}"
    assert migrate(url, "0001") == "0001"  # as an earlier demo, before revision 0002, left it
    done = run_demo(tmp_path, url, "--bots", "random,greedy", "--deals", "2", "--hands", "3")
    assert "4 matches played, 0 failed" in done.stdout, done.stdout
    board = done.stdout.split("Elo [95% interval]", 1)[1].splitlines()
    for line in legend():  # the same words as the leaderboard page and `tonk leaderboard`
        assert line in done.stdout
    ranks = [line.split()[:2] for line in board if line.strip()[:1].isdigit()]
    assert sorted(name for _rank, name in ranks) == ["greedy", "random"], done.stdout
    with session_scope(url) as session:
        assert session.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar() == HEAD
        assert session.scalars(select(Tournament.status)).all() == ["finished"]
        assert set(session.scalars(select(Match.status))) == {"done"}
    dispose_engines()


def test_tonk_demo_says_how_long_the_search_bot_thinks(tmp_path: Path) -> None:
    # The demo cuts the search bot's budget to keep the run short; without saying so, its
    # place on the leaderboard would read as the bot's strength.
    url = f"sqlite:///{tmp_path / 'tonk-arena.sqlite'}"
    done = run_demo(tmp_path, url, "--bots", "random,search", "--deals", "1", "--hands", "2")
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line.startswith("bot ")}
    assert lines["search"].endswith("(searching 20 ms a decision)"), done.stdout
    assert "searching" not in lines["random"], done.stdout
    assert "2 matches played, 0 failed" in done.stdout, done.stdout
    dispose_engines()

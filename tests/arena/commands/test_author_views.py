"""What the operator's and the bot author's commands show of results: the end of `tonk
tournament run` (the top of its standings and its page) and `tonk bot NAME` (one bot's
rating, record and faults), both from the store the arena uses."""

from __future__ import annotations

import json
import re

import pytest
from helpers.arena import hosted_bots

from sdk import cli


@pytest.fixture
def arena_env(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TONK_DATABASE_URL", sqlite_url)
    monkeypatch.delenv("TONK_REDIS_URL", raising=False)
    monkeypatch.delenv("TONK_ARENA", raising=False)
    monkeypatch.setenv("TONK_EMBEDDED_WORKERS", "1")
    hosted_bots(sqlite_url, ["random", "greedy", "heuristic"])
    return sqlite_url


def test_a_run_ends_with_the_standings_and_the_page(
    arena_env: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # It used to end with "finished; 12/12 done" and nothing of who did well or where to look.
    assert cli.main(["tournament", "create", "--name", "t", "--bots", "random,greedy,heuristic",
                     "--tables", "2", "--deals", "1", "--hands", "6", "--seed", "4"]) == 0  # fmt: skip
    capsys.readouterr()
    monkeypatch.setenv("TONK_ARENA", "https://arena.example.org/")
    assert cli.main(["tournament", "run", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "tournament 1: finished; 6/6 done" in out
    standings = [line.split()[0] for line in out.splitlines() if re.match(r"  \w+ +\d+ +-?\d+ ", line)]
    assert sorted(standings) == ["greedy", "heuristic", "random"], out
    assert "https://arena.example.org/tournaments/1" in out


def test_tonk_bot_shows_one_bots_rating_record_and_faults(
    arena_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["tournament", "create", "--name", "t", "--bots", "random,greedy",
                     "--tables", "2", "--deals", "2", "--hands", "8", "--seed", "5"]) == 0  # fmt: skip
    assert cli.main(["tournament", "run", "1", "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["bot", "greedy", "--json"]) == 0
    detail = json.loads(capsys.readouterr().out)
    assert cli.main(["bot", "greedy"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("greedy (hosted), owner house, active")
    assert f"rank {detail['rank']}, Elo {detail['rating']['text']}" in out
    assert f"record: {detail['record']['matches']} matches, {detail['record']['hands']} hands" in out
    assert "faults (charged): 0" in out and "random" in out  # its one opponent, head to head
    assert "page: the dashboard's /bots/greedy" in out
    assert cli.main(["bot", "nobody"]) == 1
    assert "there is no bot named 'nobody'" in capsys.readouterr().err


def test_create_with_run_plays_the_tournament_it_made(
    arena_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A README walk cannot know the id create will print: --run plays the one it made.
    assert cli.main(["tournament", "create", "--name", "first", "--bots", "random,greedy",
                     "--tables", "2", "--deals", "1", "--hands", "4", "--seed", "3"]) == 0  # fmt: skip
    assert cli.main(["tournament", "create", "--name", "second", "--bots", "random,greedy", "--tables", "2",
                     "--deals", "1", "--hands", "4", "--seed", "8", "--run"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "tournament 2 created: 2 matches; running it" in out
    assert "tournament 2: finished; 2/2 done" in out and "tournament 1: finished" not in out
    assert cli.main(["tournament", "status", "1"]) == 0
    assert "pending" in capsys.readouterr().out  # the first, not asked to run, has not

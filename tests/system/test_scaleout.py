"""Scale-out without containers (docs/scale-out.md): the compose topology as local processes,
with the same commands and environment as docker-compose.yml (tests/helpers/compose.py's
ComposeStack), on the real local Redis (a queue named after the test's prefix) and a
PostgreSQL database of its own, with two workers.

Then what an operator and a bot author do: ``tonk owner create``, a new bot written with the
SDK served by ``tonk serve`` and entered by ``tonk submit``, a tournament made and played by
``tonk tournament create/run`` on the two workers, and the results read through the JSON
API: every match played exactly once, by our workers, the new bot on the leaderboard.

Also the ``tonk owner`` commands themselves.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
from helpers.compose import BIN, compose_stack
from helpers.net import free_port, get_json, wait_for
from sqlalchemy import create_engine, pool, select
from sqlalchemy.orm import Session

from arena.processes import run_process, spawn
from arena.store.models import Match, Owner
from sdk.cli import main as tonk

HOUSE = ("random", "greedy", "heuristic")

NEW_BOT = '''
"""A bot written with the SDK: draws from the stock, lays down what it can, discards high."""

from sdk import Action, Bot, Observation
from sdk.actions import DRAW_STOCK


class MyBot(Bot):
    name = "mybot"
    version = "0.1.0"
    author = "scale-out test"

    def act(self, obs: Observation) -> Action | int:
        legal = obs.legal_actions
        if obs.phase == "start":
            return DRAW_STOCK if DRAW_STOCK in legal else legal[-1]
        plays = [*obs.melds_available(), *obs.layoffs_available()]
        if plays:
            return plays[0]
        return max(obs.discards_available(), key=lambda d: d.card.value)
'''


def client_env(home: Path) -> dict[str, str]:
    """A bot author's shell: the SDK's `tonk` on PATH and nothing of the arena's settings."""
    return {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
            "TMPDIR": os.environ["TMPDIR"]}  # the run's folder (tests/scratch.py)


def run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    result = run_process(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    assert result.returncode == 0, (
        f"{' '.join(argv)} -> {result.returncode}\n{result.stdout}\n{result.stderr}"
    )
    return result


def expected_matches(bots: int, sizes: list[int], deals: int) -> tuple[int, int]:
    """(matches in the tournament, matches each bot plays): every table of each size, each
    deal played once per balanced seat order (duplicate: k (k - 1) matches at k seats)."""
    total = sum(math.comb(bots, k) * k * (k - 1) * deals for k in sizes)
    each = sum(math.comb(bots - 1, k - 1) * k * (k - 1) * deals for k in sizes)
    return total, each


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_two_workers_play_a_tournament_with_a_newly_submitted_bot(
    tmp_path: Path, pg_empty_url: str, redis_url: str, redis_prefix: str
) -> None:
    with compose_stack(tmp_path, pg_empty_url, redis_url, redis_prefix, scale={"worker": 2}) as stack:
        # The setup service entered the house bots; run again, it finds them.
        assert stack.completed["setup"].stdout.count("registered bot") == 3, stack.completed["setup"]
        again = stack.run("setup")
        assert again.returncode == 0 and again.stdout.count("already registered") == 3, again
        stack.wait_healthy("worker")
        workers = stack.instances("worker")
        assert len(workers) == 2
        # An operator on any machine: the workers' environment is all the arena's settings.
        operator_env = stack.env("worker")
        token = run(["tonk", "owner", "create", "alice"], operator_env, stack.workdir).stdout.strip()
        assert token.startswith("tonk_") and "\n" not in token

        # A bot author: a new bot with the SDK, served, then submitted to the arena.
        author = tmp_path / "author"
        author.mkdir()
        (author / "mybot.py").write_text(textwrap.dedent(NEW_BOT))
        port = free_port()
        bot = spawn(
            ["tonk", "serve", "mybot:MyBot", "--port", str(port)], cwd=author, env=client_env(author),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            from sdk.health import check_health

            wait_for(
                "mybot to serve", lambda: bot.poll() is None and check_health(f"127.0.0.1:{port}", 1.0), 60
            )
            submitted = run(
                ["tonk", "submit", "--name", "mybot", "--address", f"127.0.0.1:{port}",
                 "--arena", stack.url(), "--token", token],
                client_env(author), author,
            )  # fmt: skip
            assert "registered bot 'mybot' (version 1)" in submitted.stdout
            listed = {b["name"]: b for b in get_json(stack.url("/api/v1/bots"))["bots"]}
            assert set(listed) == {*HOUSE, "mybot"}

            # The operator makes a tournament and plays it on the workers.
            sizes, deals = [2, 3], 1
            total, each = expected_matches(4, sizes, deals)
            created = run(
                ["tonk", "tournament", "create", "--name", "scale-out", "--bots", ",".join([*HOUSE, "mybot"]),
                 "--tables", ",".join(map(str, sizes)), "--deals", str(deals), "--hands", "4", "--seed", "7"],
                operator_env, stack.workdir,
            )  # fmt: skip
            found = re.search(r"tournament (\d+) created: (\d+) matches", created.stdout)
            assert found, created.stdout
            tid = int(found.group(1))
            assert int(found.group(2)) == total
            played = run(["tonk", "tournament", "run", str(tid), "--quiet"], operator_env, stack.workdir)
            assert f"{total}/{total} done, 0 failed" in played.stdout, played.stdout
        finally:
            bot.terminate()
            bot.wait(timeout=20)

        # The results, through the JSON API.
        tournament = get_json(stack.url(f"/api/v1/tournaments/{tid}"))["tournament"]
        assert tournament["status"] == "finished"
        assert tournament["progress"]["matches"]["done"] == total
        matches = get_json(stack.url(f"/api/v1/matches?tournament={tid}&per_page=100"))
        assert matches["total"] == total
        assert {m["status"] for m in matches["matches"]} == {"done"}
        assert len({m["id"] for m in matches["matches"]}) == total

        def board_ready() -> bool:  # the dashboard refits ratings in the background
            rows = {r["bot"]: r for r in get_json(stack.url("/api/v1/leaderboard"))["leaderboard"]}
            return set(rows) == {*HOUSE, "mybot"} and all(
                r["matches"] == each and r["rating"] is not None for r in rows.values()
            )

        wait_for("the leaderboard to rate every bot on every match", board_ready, 30, poll=0.5)
        board = {r["bot"]: r for r in get_json(stack.url("/api/v1/leaderboard"))["leaderboard"]}
        assert board["mybot"]["owner"] == "alice" and board["mybot"]["faults"] == 0

        # Exactly once: one attempt each, every one by one of our two workers, both busy.
        pids = {str(w.process.pid) for w in workers}
        engine = create_engine(pg_empty_url, poolclass=pool.NullPool)
        with Session(engine) as session:
            rows = session.execute(
                select(Match.attempts, Match.worker).where(Match.tournament_id == tid)
            ).all()
        engine.dispose()
        assert len(rows) == total and {attempts for attempts, _ in rows} == {1}
        by = {str(worker).rsplit(":", 1)[-1] for _, worker in rows}
        assert by == pids, f"matches played by {by}, workers {pids}"
    for worker in workers:
        assert worker.process.returncode is not None


# --- tonk owner --------------------------------------------------------------------------------


@pytest.fixture
def arena_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'owners.sqlite'}"
    monkeypatch.setenv("TONK_DATABASE_URL", url)
    return url


def test_owner_create_prints_the_token_once_and_stores_its_hash(
    arena_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.bots.owners import authenticate, hash_token

    assert tonk(["owner", "create", "alice"]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert token.startswith("tonk_") and "shown only this once" in err and token not in err
    assert tonk(["owner", "create", "ops", "--operator"]) == 0
    capsys.readouterr()
    engine = create_engine(arena_db, poolclass=pool.NullPool)
    with Session(engine) as session:
        owners = {o.name: o for o in session.scalars(select(Owner))}
        assert owners["alice"].token_hash == hash_token(token)
        assert (owners["alice"].is_operator, owners["ops"].is_operator) == (False, True)
        assert authenticate(session, token).name == "alice"
    engine.dispose()


def test_owner_rotate_replaces_the_token(arena_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    from arena.bots.owners import authenticate
    from arena.errors import AuthenticationError

    tonk(["owner", "create", "alice"])
    old = capsys.readouterr().out.strip()
    assert tonk(["owner", "rotate", "alice"]) == 0
    new = capsys.readouterr().out.strip()
    assert new.startswith("tonk_") and new != old
    engine = create_engine(arena_db, poolclass=pool.NullPool)
    with Session(engine) as session:
        assert authenticate(session, new).name == "alice"
        with pytest.raises(AuthenticationError):
            authenticate(session, old)
    engine.dispose()


def test_owner_errors_and_list(arena_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    tonk(["owner", "create", "alice"])
    tonk(["owner", "create", "house", "--operator"])
    capsys.readouterr()
    assert tonk(["owner", "create", "alice"]) == 1
    assert "already taken" in capsys.readouterr().err
    assert tonk(["owner", "create", "no spaces"]) == 2
    assert "not valid" in capsys.readouterr().err
    assert tonk(["owner", "rotate", "nobody"]) == 1
    assert "no owner named 'nobody'" in capsys.readouterr().err
    assert tonk(["owner", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["owner", "role", "bots", "created"]
    assert [line.split()[:3] for line in lines[1:]] == [["alice", "owner", "0"], ["house", "operator", "0"]]

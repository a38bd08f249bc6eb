"""Challenges over the JSON API (arena/tournaments/challenges.py), on SQLite and PostgreSQL:
one plays at once, unrated, and shows on both bots' pages; a refused one says why and writes
nothing; the bounds hold under a burst of requests over real HTTP with the matches queued
on a real RQ queue; an owner turns their bot's challenges off."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from helpers.arena import InlineBackend
from helpers.net import app_on_loopback
from sqlalchemy import func, select

from arena.bots.owners import create_owner
from arena.bots.registry import host_bot
from arena.config import Settings
from arena.ratings.leaderboard import current_leaderboard, match_results
from arena.store.db import session_scope
from arena.store.models import Bot, Match, Tournament
from arena.store.statuses import TournamentKind

BOT = "bots.random_bot:RandomBot"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def store(url: str, owners: tuple[str, ...] = ("alice", "bob")) -> dict[str, str]:
    """Owners, each with a bot ``<owner>-bot`` the arena hosts (a house class, made by an
    operator and handed over: matches play in this process); their tokens."""
    tokens = {}
    with session_scope(url) as session:
        house, _ = create_owner(session, "house-maker", operator=True)
        for name in owners:
            owner, tokens[name] = create_owner(session, name)
            host_bot(session, house, f"{name}-bot", BOT, check=False).owner_id = owner.id
    return tokens


def tournaments(url: str) -> int:
    with session_scope(url) as session:
        return int(session.scalar(select(func.count()).select_from(Tournament)) or 0)


@pytest.fixture
def inline(app_factory: Callable[..., Flask], writable_url: str) -> tuple[Flask, dict[str, str]]:
    app = app_factory(writable_url, TOURNAMENT_BACKEND=InlineBackend(writable_url))
    return app, store(writable_url)


def test_a_challenge_plays_now_unrated_and_shows_on_both_pages(
    inline: tuple[Flask, dict[str, str]], writable_url: str
) -> None:
    app, tokens = inline
    client = app.test_client()
    body = {"bot": "alice-bot", "opponent": "bob-bot", "deals": 2, "hands_per_match": 4}
    answer = client.post("/api/v1/challenges", json=body, headers=bearer(tokens["alice"]))
    assert answer.status_code == 201, answer.get_json()
    challenge = answer.get_json()["challenge"]
    sides = (challenge["challenger"], challenge["opponent"], challenge["started_by"])
    assert sides == ("alice-bot", "bob-bot", "alice")
    assert challenge["rated"] is False and challenge["deals"] == 2
    tid = challenge["id"]
    with session_scope(writable_url) as session:
        played = session.scalars(select(Match).where(Match.tournament_id == tid)).all()
        assert len(played) == 4 and all(m.status == "done" for m in played)  # both seat orders of 2 deals
        assert session.get(Tournament, tid).status == "finished"  # type: ignore[union-attr]
        # No rating counts it: not the rating inputs, not the board (both bots played nothing else).
        assert not {m.id for m in played} & {r.match_id for r in match_results(session)}
        board = current_leaderboard(session)  # on PostgreSQL read as columns (arena/ratings/columns.py)
        assert not board.rows and not board.versions, board.rows

    listed = client.get("/api/v1/challenges?bot=bob-bot").get_json()["challenges"]
    assert [c["id"] for c in listed] == [tid] and listed[0]["status"] == "finished"
    chips = listed[0]["chips"]
    assert chips["challenger"] + chips["opponent"] == 0  # heads-up chips are zero-sum
    for name in ("alice-bot", "bob-bot"):
        page = client.get(f"/bots/{name}").get_data(as_text=True)
        assert f'data-challenge="{tid}"' in page, name
    assert client.get("/api/v1/challenges?bot=nobody").get_json() == {"challenges": []}


@pytest.mark.parametrize(
    ("body", "status", "code", "said"),
    [
        ({"bot": "bob-bot", "opponent": "alice-bot"}, 404, "bot_not_found", "you have no active bot"),
        ({"bot": "alice-bot", "opponent": "nobody"}, 404, "bot_not_found", "no active bot named 'nobody'"),
        ({"bot": "alice-bot", "opponent": "alice-bot"}, 400, "invalid_tournament", "cannot challenge itself"),
        ({"bot": "alice-bot", "opponent": "bob-bot", "deals": 0}, 400, "invalid_tournament", "from 1 to 10"),
        ({"bot": "alice-bot", "opponent": "bob-bot", "deals": 11}, 400, "invalid_tournament", "got 11"),
        ({"bot": "alice-bot", "opponent": "bob-bot", "hands_per_match": 51}, 400, "invalid_tournament", "50"),
        ({"bot": "alice-bot", "opponent": "bob-bot", "deals": "2"}, 400, "invalid_tournament", "'2'"),
        ({"bot": "alice-bot", "opponent": "bob-bot", "seed": 1}, 400, "invalid_tournament", "field 'seed'"),
        ({"bot": "alice-bot"}, 400, "invalid_tournament", "'opponent' must be a bot name"),
    ],
)
def test_refused_challenges_say_why_and_write_nothing(
    inline: tuple[Flask, dict[str, str]], writable_url: str, body: dict[str, Any], status: int, code: str,
    said: str,
) -> None:  # fmt: skip
    app, tokens = inline
    answer = app.test_client().post("/api/v1/challenges", json=body, headers=bearer(tokens["alice"]))
    error = answer.get_json()["error"]
    assert (answer.status_code, error["code"]) == (status, code), error
    assert said in error["message"]
    assert tournaments(writable_url) == 0


def test_an_owner_turns_challenges_off_and_on(
    inline: tuple[Flask, dict[str, str]], writable_url: str
) -> None:
    app, tokens = inline
    client = app.test_client()
    path = "/api/v1/bots/bob-bot/challenges"
    # Only the bot's owner (or an operator); another owner's bot is answered as a missing one.
    assert client.put(path, json={"accept": False}, headers=bearer(tokens["alice"])).status_code == 404
    assert client.put(path, json={"accept": "no"}, headers=bearer(tokens["bob"])).status_code == 400
    assert client.put(path, json={"accept": False}).status_code == 401
    off = client.put(path, json={"accept": False}, headers=bearer(tokens["bob"]))
    assert off.get_json() == {"bot": "bob-bot", "accepts_challenges": False}
    refused = client.post("/api/v1/challenges", json={"bot": "alice-bot", "opponent": "bob-bot"},
                          headers=bearer(tokens["alice"]))  # fmt: skip
    assert (refused.status_code, refused.get_json()["error"]["code"]) == (403, "challenges_off")
    assert tournaments(writable_url) == 0
    client.put(path, json={"accept": True}, headers=bearer(tokens["bob"]))
    body = {"bot": "alice-bot", "opponent": "bob-bot", "deals": 1, "hands_per_match": 2}
    accepted = client.post("/api/v1/challenges", json=body, headers=bearer(tokens["alice"]))
    assert accepted.status_code == 201


@pytest.fixture
def queued(
    app_factory: Callable[..., Flask], writable_url: str, redis_url: str, redis_prefix: str
) -> Iterator[tuple[str, dict[str, str]]]:
    """The app on loopback, its matches queued on a real RQ queue no worker takes (so every
    challenge stays running), owners alice, bob, carol and dave; the base URL and tokens."""
    from arena.runtime.rq_backend import RqBackend

    settings = Settings(database_url=writable_url, challenge_max_running=2, challenge_max_per_target=3)
    backend = RqBackend(writable_url, redis_url, f"{redis_prefix}-challenges")
    app = app_factory(writable_url, SETTINGS=settings, TOURNAMENT_BACKEND=backend, TOURNAMENT_SWEEP_S=3600)
    tokens = store(writable_url, ("alice", "bob", "carol", "dave"))
    try:
        with app_on_loopback(app) as base:
            yield base, tokens
    finally:
        backend.connection.close()


def burst(base: str, requests: list[tuple[str, dict[str, Any]]]) -> list[int]:
    """Send every request at once (a barrier), over real HTTP; their statuses."""
    gate = threading.Barrier(len(requests))
    statuses = [0] * len(requests)

    def send(i: int, token: str, body: dict[str, Any]) -> None:
        headers = {**bearer(token), "Content-Type": "application/json"}
        data = json.dumps(body).encode()
        call = urllib.request.Request(base + "/api/v1/challenges", data=data, method="POST", headers=headers)
        gate.wait(timeout=30)
        try:
            with urllib.request.urlopen(call, timeout=60) as answer:
                statuses[i] = answer.status
        except urllib.error.HTTPError as exc:
            statuses[i] = exc.code

    threads = [threading.Thread(target=send, args=(i, t, b)) for i, (t, b) in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    return statuses


def test_the_bounds_hold_under_a_burst(queued: tuple[str, dict[str, str]], writable_url: str) -> None:
    base, tokens = queued
    # One owner, six at once against three bots: two may run (TONK_CHALLENGE_MAX_RUNNING=2).
    body = {"bot": "alice-bot", "deals": 1, "hands_per_match": 2}
    opponents = ("bob", "carol", "dave") * 2
    mine = burst(base, [(tokens["alice"], {**body, "opponent": f"{o}-bot"}) for o in opponents])
    assert sorted(mine) == [201, 201, 429, 429, 429, 429], mine
    # Three owners, two each at once against one bot (dave's, which alice's two do not face):
    # three may face it (TONK_CHALLENGE_MAX_PER_TARGET=3), whoever sends them.
    with session_scope(writable_url) as session:
        facing_dave = session.scalar(select(func.count()).select_from(Tournament).where(
            Tournament.kind == TournamentKind.CHALLENGE, Tournament.name.like("%vs dave-bot")))  # fmt: skip
    senders = ("bob", "carol") * 2
    target = [(tokens[o], {"bot": f"{o}-bot", "opponent": "dave-bot", "deals": 1}) for o in senders]
    statuses = burst(base, target)
    assert statuses.count(201) == 3 - int(facing_dave or 0), statuses
    assert set(statuses) <= {201, 429}
    with session_scope(writable_url) as session:
        running = session.scalars(select(Tournament).where(Tournament.kind == TournamentKind.CHALLENGE)).all()
        assert len(running) == 2 + statuses.count(201)
        assert all(t.status == "running" for t in running)
        assert session.scalar(select(func.count()).select_from(Bot)) == 4


@pytest.fixture
def served_inline(
    app_factory: Callable[..., Flask], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, dict[str, str]]]:
    """The app on loopback, playing each match as it is queued; no arena or token remembered."""
    for name in ("TONK_ARENA", "TONK_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TONK_CONFIG_DIR", str(Path(sqlite_url.split("///", 1)[1]).parent / "config"))
    app = app_factory(sqlite_url, TOURNAMENT_BACKEND=InlineBackend(sqlite_url))
    tokens = store(sqlite_url)
    with app_on_loopback(app) as base:
        yield base, tokens


def test_tonk_challenge_plays_and_reports_and_turns_off(
    served_inline: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    from sdk.cli import main

    arena, tokens = served_inline
    alice = ["--arena", arena, "--token", tokens["alice"]]
    assert main(["challenge", "alice-bot", "bob-bot", "--deals", "1", "--hands", "3", *alice]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("challenge ") and "alice-bot vs bob-bot, 1 deal (2 matches" in out[0], out
    finished = re.fullmatch(r"finished: alice-bot ([+-]\d+), bob-bot ([+-]\d+) chips over 2 matches", out[1])
    assert finished and int(finished.group(1)) + int(finished.group(2)) == 0, out
    assert out[2].startswith(f"its page: {arena}/tournaments/")

    # Bob turns his bot's challenges off: alice is refused, with the reason, and nothing starts.
    assert main(["challenge", "bob-bot", "--off", "--arena", arena, "--token", tokens["bob"]]) == 0
    assert capsys.readouterr().out.strip() == "bob-bot refuses challenges from now on"
    assert main(["challenge", "alice-bot", "bob-bot", *alice]) == 1
    assert "refused (403 challenges_off)" in capsys.readouterr().err
    # Alice cannot turn bob's back on; usage mistakes say what to give.
    assert main(["challenge", "bob-bot", "--on", *alice]) == 1
    assert "bot_not_found" in capsys.readouterr().err
    assert main(["challenge", "alice-bot", *alice]) == 2
    assert main(["challenge", "alice-bot", "bob-bot", "--off", *alice]) == 2
    assert "give MY-BOT OPPONENT" in capsys.readouterr().err


def test_a_signed_in_owner_challenges_from_the_bots_page(
    inline: tuple[Flask, dict[str, str]], writable_url: str
) -> None:
    app, tokens = inline
    client = app.test_client()
    signin = re.search(r'name="csrf" value="([^"]+)"', client.get("/signin").get_data(as_text=True))
    assert signin is not None
    client.post("/signin", data={"csrf": signin.group(1), "token": tokens["alice"]})
    page = client.get("/bots/bob-bot").get_data(as_text=True)
    form = re.search(r'<form class="challenge[^>]*>.*?</form>', page, re.S)
    assert form is not None and "<option>alice-bot</option>" in form.group(0)
    assert '<form class="challenge' not in client.get("/bots/alice-bot").get_data(as_text=True)  # her own
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.group(0))
    assert csrf is not None
    fields = {"csrf": csrf.group(1), "bot": "alice-bot", "opponent": "bob-bot", "deals": "1"}

    for bad, status in (({"csrf": "stale"}, 400), ({"deals": "1e3"}, 400), ({"bot": "bob-bot"}, 404)):
        assert client.post("/me/challenge", data={**fields, **bad}).status_code == status, bad
    assert tournaments(writable_url) == 0
    answer = client.post("/me/challenge", data=fields)
    assert answer.status_code == 303 and "/tournaments/" in answer.headers["Location"]
    assert tournaments(writable_url) == 1

    # Turned off, the page offers no form, and a form sent anyway is refused with the reason.
    off = {"accept": False}
    app.test_client().put("/api/v1/bots/bob-bot/challenges", json=off, headers=bearer(tokens["bob"]))
    assert '<form class="challenge' not in client.get("/bots/bob-bot").get_data(as_text=True)
    refused = client.post("/me/challenge", data=fields)
    assert refused.status_code == 403 and "turned them off" in refused.get_data(as_text=True)
    assert tournaments(writable_url) == 1

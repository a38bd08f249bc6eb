"""A person at the table (issue #39: dashboard/views/tables.py, arena/play/person.py,
arena/tournaments/people.py), over HTTP against the real referee, with the match played by
the embedded pool's own process (the arena without Redis: the seat's channel is the store),
on SQLite and PostgreSQL.

A person plays whole matches through the JSON API (heads-up and at 3 seats), and everything
their page received is checked against the match's full record once it is over: no card
the seat had not seen. A page that reconnects with Last-Event-ID keeps the seat; a person who
walks away times out into faults and forfeits while a bots' match beside it plays on; bad
input changes nothing; another person's table is 404.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from arena.bots.owners import create_owner, get_or_create_operator
from arena.bots.registry import host_bot
from arena.runtime.backends import EmbeddedBackend
from arena.store.db import session_scope
from arena.store.models import Bot, Match, MatchSeat, Replay, SeatChannel, Tournament
from arena.store.replays import decode
from arena.store.statuses import TournamentKind
from sdk.cards import DECK
from sdk.observation import observe
from sdk.record import HandRecord
from sdk.referee import plain_record, shown_hands

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
CARDS = frozenset(c.text for c in DECK)


@pytest.fixture
def arena(app_factory: Callable[..., Flask], writable_url: str) -> Iterator[dict[str, Any]]:
    with session_scope(writable_url) as session:
        house = get_or_create_operator(session, "house")
        for name, path in (("random", "bots.random_bot:RandomBot"), ("greedy", "bots.greedy:GreedyBot")):
            host_bot(session, house, name, path, check=False)
        alice, alice_token = create_owner(session, "alice")
        _bob, bob_token = create_owner(session, "bob")
        shy = host_bot(session, house, "shy", "bots.random_bot:RandomBot", check=False)
        shy.owner_id, shy.accepts_challenges = alice.id, False
    backend = EmbeddedBackend(writable_url, 2)
    app = app_factory(writable_url, TOURNAMENT_BACKEND=backend, TOURNAMENT_SWEEP_S=0, TABLE_POLL_S=3.0,
                      TABLE_ACT_LIMIT=(10_000, 1.0), TABLE_STREAM_S=2.0, TABLE_PING_S=0.5)
    app.config["SETTINGS"] = app.config["SETTINGS"].__class__(
        **{**app.config["SETTINGS"].__dict__, "person_clock_s": 30}
    )
    try:
        yield {"app": app, "url": writable_url, "alice": alice_token, "bob": bob_token, "backend": backend}
    finally:
        backend.close(cancel=True)


def signed_in(app: Flask, token: str) -> tuple[FlaskClient, str]:
    client = app.test_client()
    page = client.get("/signin").get_data(as_text=True)
    answer = client.post("/signin", data={"csrf": CSRF.search(page).group(1), "token": token})  # type: ignore[union-attr]
    assert answer.status_code == 303
    csrf = CSRF.search(client.get("/me").get_data(as_text=True))
    assert csrf is not None
    return client, csrf.group(1)


def sit(client: FlaskClient, csrf: str, bot: str, **fields: Any) -> Any:
    return client.post(f"/bots/{bot}/sit", data={"csrf": csrf, **{k: str(v) for k, v in fields.items()}})


def table_path(answer: Any) -> str:
    assert answer.status_code == 303, answer.get_data(as_text=True)[:500]
    path = answer.headers["Location"]
    assert re.fullmatch(r"(http://localhost)?/tables/[\w-]+", path), path
    return path.removeprefix("http://localhost")


def play_through(client: FlaskClient, csrf: str, path: str, seen: list[dict[str, Any]]) -> dict[str, Any]:
    """Play the seat to the end by always taking the first legal action, collecting every view
    received; returns the last."""
    view = client.get(f"{path}/view.json").get_json()
    seen.append(view)
    for _ in range(2000):
        if view["status"] == "match_over":
            return view
        if view["status"] == "your_turn":
            move = {"version": view["version"], "action": view["legal"][0]["id"]}
            answer = client.post(f"{path}/act", json=move, headers={"X-CSRF-Token": csrf})
            assert answer.status_code == 200, answer.get_json()
            seen.append(answer.get_json())
            assert answer.get_json()["status"] == "waiting"
        view = client.get(f"{path}/view.json?after={seen[-1]['version']}").get_json()
        seen.append(view)
    raise AssertionError(f"the match did not end: {view['status']}")


def wait_done(url: str, path: str, limit_s: float = 120.0) -> None:
    """Until the worker has recorded the match and finished its table (it publishes the last
    view first)."""
    public_id = path.rsplit("/", 1)[1]
    ends = time.monotonic() + limit_s
    query = select(Tournament.status).join(Match, Match.tournament_id == Tournament.id)
    while time.monotonic() < ends:
        with session_scope(url) as session:
            if session.scalar(query.where(Match.public_id == public_id)) == "finished":
                return
        time.sleep(0.05)
    raise AssertionError(f"match {public_id} was not recorded within {limit_s} s")


def record_of(url: str, path: str) -> tuple[Match, list[dict[str, Any]], int]:
    wait_done(url, path)
    public_id = path.rsplit("/", 1)[1]
    with session_scope(url) as session:
        match = session.scalars(select(Match).where(Match.public_id == public_id)).one()
        seat = session.scalars(select(SeatChannel.seat).where(SeatChannel.match_id == match.id)).one()
        replay = session.get(Replay, match.id)
        assert replay is not None
        logs = decode(replay.format, replay.data)
        session.expunge(match)
        return match, logs, seat


def cards_in(value: Any) -> set[str]:
    """Every card-like word anywhere in ``value`` (a view, an event, a page)."""
    if isinstance(value, str):
        return {w for w in re.split(r"[^0-9A-Za-z]+", value) if w in CARDS}
    if isinstance(value, dict):
        return set().union(*(cards_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(cards_in(v) for v in value)) if value else set()
    return set()


def seen_by_seat(logs: list[dict[str, Any]], seat: int) -> set[str]:
    """What ``seat`` saw over the match, replayed from the full record through the engine: its
    observation after every action (its hand, the piles, the table, the public history) and
    the hands the rules showed at each hand's end."""
    seen: set[str] = set()
    for log in logs:
        record = HandRecord.from_json(plain_record(log))
        state = record.initial_state()
        seen |= {c.text for c in observe(state, seat).cards_seen()}
        for who, action in record.actions:
            state.apply(action, who)
            seen |= {c.text for c in observe(state, seat).cards_seen()}
        if state.outcome is None:  # the hand ended by a fault: the record has the rest
            faulted = (record.outcome or {}).get("faulted")
            state.forfeit(int(faulted) if faulted is not None else state.to_act)
        seen |= {c.text for hand in shown_hands(state) for c in hand}
    return seen


def events(client: FlaskClient, path: str, last: int | None = None) -> list[tuple[int, dict[str, Any]]]:
    """The server-sent events of one stream (to its bounded end), as (id, view)."""
    headers = {} if last is None else {"Last-Event-ID": str(last)}
    answer = client.get(f"{path}/events", headers=headers)
    assert answer.status_code == 200 and answer.mimetype == "text/event-stream"
    out = []
    for block in answer.get_data(as_text=True).split("\n\n"):
        fields = [line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"]
        lines = dict(fields)
        if lines.get("event") == "view":
            out.append((int(lines["id"]), json.loads(lines["data"])))
    return out


def test_a_person_plays_a_whole_heads_up_match_and_sees_no_unseen_card(arena: dict[str, Any]) -> None:
    client, csrf = signed_in(arena["app"], arena["alice"])
    path = table_path(sit(client, csrf, "greedy", hands=3))
    received: list[Any] = [client.get(path).get_data(as_text=True)]
    views: list[dict[str, Any]] = []
    last = play_through(client, csrf, path, views)
    received.extend(views)
    received.extend(view for _id, view in events(client, path))  # the stream, replayed from its start
    assert last["result"]["match"]["scores"] and last["replay_url"]
    match, logs, seat = record_of(arena["url"], path)
    assert match.status == "done" and len(logs) == 3 and match.hands_played == 3
    hands_seen = {v["hand_no"] for v in views if v["status"] == "your_turn"}
    assert hands_seen == {1, 2, 3}
    # Every card the person's page received, the seat had seen by the match's end.
    received_cards = cards_in(received)
    assert received_cards, "the views carried no card at all"
    assert received_cards <= seen_by_seat(logs, seat), received_cards - seen_by_seat(logs, seat)
    with session_scope(arena["url"]) as session:
        tournament = session.get(Tournament, match.tournament_id)
        assert tournament is not None and tournament.kind == TournamentKind.PEOPLE
        assert tournament.status == "finished"
        seated = select(Bot.name).join(MatchSeat, MatchSeat.bot_id == Bot.id)
        seated = seated.where(MatchSeat.match_id == match.id)
        names = session.scalars(seated.order_by(MatchSeat.seat)).all()
        assert sorted(names) == ["@alice", "greedy"] and names[seat] == "@alice"

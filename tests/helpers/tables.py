"""A person at a table in tests (issue #39): signing in through the dashboard's own form,
an arena whose tables play, a table's event stream read,
waiting for a table's match to be recorded, and what a seat saw, replayed from the full record
through the engine, to compare with every card the person's page received. For
tests/dashboard/test_tables.py and test_table_hostile.py."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from arena.bots.owners import create_owner, get_or_create_operator
from arena.bots.registry import host_bot
from arena.runtime.backends import EmbeddedBackend
from arena.store.db import session_scope
from arena.store.models import Match, Replay, SeatChannel, Tournament
from arena.store.replays import decode
from sdk.cards import DECK
from sdk.observation import observe
from sdk.record import HandRecord
from sdk.referee import plain_record, shown_hands

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
CARDS = frozenset(c.text for c in DECK)
#: Hands of a table a test needs the person asked at: heads-up against random, a hand can end
#: before the person's first turn (random goes down, a TONK at the deal), and with 2 a test
#: once failed so; with five, every hand would have to.
HANDS = 5


@contextmanager
def table_arena(
    app_factory: Callable[..., Flask], url: str, poll_s: float, stream_s: float
) -> Iterator[dict[str, Any]]:
    """An arena whose tables play: the house's random and greedy hosted, owners alice and bob
    (their tokens), alice's own bot ``shy`` closed to challenges, the embedded pool playing
    (``backend``), a person's clock of 30 s, and the table's waits shortened for tests."""
    with session_scope(url) as session:
        house = get_or_create_operator(session, "house")
        for name, path in (("random", "bots.random_bot:RandomBot"), ("greedy", "bots.greedy:GreedyBot")):
            host_bot(session, house, name, path, check=False)
        alice, alice_token = create_owner(session, "alice")
        _bob, bob_token = create_owner(session, "bob")
        shy = host_bot(session, house, "shy", "bots.random_bot:RandomBot", check=False)
        shy.owner_id, shy.accepts_challenges = alice.id, False  # alice's own bot, closed to others
    backend = EmbeddedBackend(url, 2)
    app = app_factory(url, TOURNAMENT_BACKEND=backend, TOURNAMENT_SWEEP_S=0, TABLE_POLL_S=poll_s,
                      TABLE_ACT_LIMIT=(10_000, 1.0), TABLE_STREAM_S=stream_s, TABLE_PING_S=0.5)  # fmt: skip
    app.config["SETTINGS"] = dataclasses.replace(app.config["SETTINGS"], person_clock_s=30)
    try:
        yield {"app": app, "url": url, "alice": alice_token, "bob": bob_token, "backend": backend}
    finally:
        backend.close(cancel=True)


def sse_views(stream: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The views of a table's event stream (its raw lines), in order, as they arrive."""
    fields: dict[str, str] = {}
    for raw in stream:
        line = raw.decode().rstrip("\n")
        if not line:
            if fields.get("event") == "view":
                yield dict(json.loads(fields["data"]))
            fields = {}
        elif not line.startswith(":") and ": " in line:
            key, value = line.split(": ", 1)
            fields[key] = value


def signed_in(app: Flask, token: str) -> tuple[FlaskClient, str]:
    """A client signed in with ``token`` by the sign-in form, and its session's CSRF token."""
    client = app.test_client()
    page = client.get("/signin").get_data(as_text=True)
    answer = client.post("/signin", data={"csrf": CSRF.search(page).group(1), "token": token})  # type: ignore[union-attr]
    assert answer.status_code == 303
    csrf = CSRF.search(client.get("/me").get_data(as_text=True))
    assert csrf is not None
    return client, csrf.group(1)


def wait_done(url: str, path: str, limit_s: float = 120.0) -> None:
    """Until the worker has recorded the table's match and finished its table (it publishes the
    last view first)."""
    public_id = path.rsplit("/", 1)[1]
    ends = time.monotonic() + limit_s
    query = select(Tournament.status).join(Match, Match.tournament_id == Tournament.id)
    while time.monotonic() < ends:
        with session_scope(url) as session:
            if session.scalar(query.where(Match.public_id == public_id)) == "finished":
                return
        time.sleep(0.05)
    raise AssertionError(f"match {public_id} was not recorded within {limit_s} s")


def cards_in(value: Any) -> set[str]:
    """Every card-like word anywhere in ``value`` (a view, an event, a page)."""
    if isinstance(value, str):
        return {w for w in re.split(r"[^0-9A-Za-z]+", value) if w in CARDS}
    if isinstance(value, dict):
        return set().union(*(cards_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(cards_in(v) for v in value)) if value else set()
    return set()


def seen_by_seat(logs: list[dict[str, Any]], seat: int) -> list[set[str]]:
    """By hand, what ``seat`` saw, replayed from the full record through the engine: its
    observation after every action (its hand, the piles, the table, the public history) and
    the hands the rules showed at the hand's end."""
    out = []
    for log in logs:
        record = HandRecord.from_json(plain_record(log))
        state = record.initial_state()
        seen = {c.text for c in observe(state, seat).cards_seen()}
        for who, action in record.actions:
            state.apply(action, who)
            seen |= {c.text for c in observe(state, seat).cards_seen()}
        if state.outcome is None:  # the hand ended by a fault: the record has the rest
            faulted = (record.outcome or {}).get("faulted")
            state.forfeit(int(faulted) if faulted is not None else state.to_act)
        seen |= {c.text for hand in shown_hands(state) for c in hand}
        out.append(seen)
    return out


def channel_row(url: str, path: str) -> tuple[int, str | None]:
    """The table's seat channel as stored: its version and the action waiting, if any (what
    a refused move must leave as it was)."""
    public_id = path.rsplit("/", 1)[1]
    with session_scope(url) as session:
        row = session.scalars(
            select(SeatChannel)
            .join(Match, Match.id == SeatChannel.match_id)
            .where(Match.public_id == public_id)
        ).one()
        return row.version, row.action


def person_rows(url: str, *owners: str) -> list[str]:
    """Each owner's own seat (``@name``), made now as a first table makes it: a refusal of a
    person's seat as an opponent is then the person filter's, not an unknown name's."""
    from arena.store.models import Owner
    from arena.tournaments.people import person_bot

    with session_scope(url) as session:
        return [
            person_bot(session, session.scalars(select(Owner).where(Owner.name == name)).one()).name
            for name in owners
        ]


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


def check_nothing_unseen(received: list[dict[str, Any]], logs: list[dict[str, Any]], seat: int) -> None:
    """Every card in what the person received about hand k, the seat had seen in hand k; and
    the check can fail: some card of the match stayed unseen by the seat."""
    seen = seen_by_seat(logs, seat)
    carried = 0
    for k, hand_seen in enumerate(seen, start=1):
        # A hand the bots ended before the person looked may have no view of its own.
        got = cards_in([view for view in received if view.get("hand_no") == k])
        assert got <= hand_seen, f"hand {k}: the page received unseen cards {sorted(got - hand_seen)}"
        carried += len(got)
    assert carried, "no view carried a card"
    assert sum(len(CARDS - hand_seen) for hand_seen in seen) > 0
    stray = [v for v in received if v.get("hand_no", 0) > len(seen) or (cards_in(v) and not v.get("hand_no"))]
    assert not stray

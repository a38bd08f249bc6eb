"""A person at a table in tests (issue #39): signing in through the dashboard's own form,
waiting for a table's match to be recorded, and what a seat saw, replayed from the full record
through the engine, to compare with every card the person's page received. For
tests/dashboard/test_tables.py and test_table_hostile.py."""

from __future__ import annotations

import re
import time
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from arena.store.db import session_scope
from arena.store.models import Match, Tournament
from sdk.cards import DECK
from sdk.observation import observe
from sdk.record import HandRecord
from sdk.referee import plain_record, shown_hands

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
CARDS = frozenset(c.text for c in DECK)


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

"""A dialled bot found offline (arena/bots/reachability.py) says so on its page and in the API:
since when, why (bounded, cleaned, without where it listens), and that it gets no new ladder
table until it answers; once it answers, the note is gone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from flask import Flask
from helpers.arena import grpc_bots

from arena.bots import reachability
from arena.store.db import session_scope

ADDRESS = "127.0.0.1:50777"


def test_the_bot_page_and_api_say_why_a_dialled_bot_gets_no_new_table(
    writable_url: str, app_factory: Callable[..., Flask]
) -> None:
    [bot] = grpc_bots(writable_url, {"napper": ADDRESS})
    client = app_factory(writable_url).test_client()
    assert client.get("/api/v1/bots/napper").get_json()["bot"]["offline"] is None
    assert "offline" not in client.get("/bots/napper").get_data(as_text=True)

    since = dt.datetime(2026, 12, 6, 21, 7, tzinfo=dt.UTC)
    with session_scope(writable_url) as session:
        reachability.note_offline(
            session,
            bot,
            reachability.CAUSE_HEALTH,
            f"could not reach the bot at {ADDRESS!r}: connection refused\x1b[2J <b>" + "z" * 900,
            address=ADDRESS,
            now=since,
        )
    offline = client.get("/api/v1/bots/napper").get_json()["bot"]["offline"]
    assert offline["since"] == since.isoformat() and offline["cause"] == "health"
    assert offline["consequence"] == "no new ladder tables until it answers"
    assert ADDRESS not in offline["reason"] and "\x1b" not in offline["reason"]
    assert offline["reason"].startswith("could not reach the bot at '<address>': connection refused")
    assert len(offline["reason"]) <= reachability.REASON_CHARS

    html = client.get("/bots/napper").get_data(as_text=True)
    assert "offline</span> since 2026-12-06 21:07: health check failed (could not reach" in html
    assert "no new ladder tables until it answers" in html
    assert ADDRESS not in html and "refused[2J &lt;b&gt;zzz" in html  # its text escaped, its address hidden

    with session_scope(writable_url) as session:
        assert reachability.answered(session, bot)
    assert client.get("/api/v1/bots/napper").get_json()["bot"]["offline"] is None
    assert "no new ladder tables" not in client.get("/bots/napper").get_data(as_text=True)

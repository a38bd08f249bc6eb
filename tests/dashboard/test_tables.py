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

import dataclasses
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from helpers.tables import (
    CARDS,
    CSRF,
    HANDS,
    cards_in,
    channel_row,
    check_nothing_unseen,
    person_rows,
    record_of,
    seen_by_seat,
    signed_in,
    sse_views,
    table_arena,
    wait_done,
)
from sqlalchemy import func, select

from arena.bots.owners import create_owner, get_or_create_operator
from arena.bots.registry import host_bot
from arena.ratings.leaderboard import match_results
from arena.store.db import session_scope
from arena.store.models import (
    NOTICE_KINDS,
    Bot,
    FaultRecord,
    Match,
    MatchSeat,
    RatingSnapshot,
    Tournament,
)
from arena.store.statuses import TournamentKind


@pytest.fixture
def arena(app_factory: Callable[..., Flask], writable_url: str) -> Iterator[dict[str, Any]]:
    with table_arena(app_factory, writable_url, poll_s=3.0, stream_s=2.0) as made:
        yield made


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
    # Asked in some hands (a bot may end a hand before the person's first turn), told of each.
    asked = {v["hand_no"] for v in views if v["status"] == "your_turn"}
    assert asked and asked <= {1, 2, 3}  # heads-up over 3 hands, the person is asked at least once
    assert [h["hand_no"] for h in last["hands_done"]] == [1, 2, 3]
    # Every card the person's page received about a hand, the seat had seen in that hand.
    check_nothing_unseen(received[1:], logs, seat)
    never = CARDS - set().union(*seen_by_seat(logs, seat))
    assert not cards_in(received[0]) & never  # the page itself
    with session_scope(arena["url"]) as session:
        tournament = session.get(Tournament, match.tournament_id)
        assert tournament is not None and tournament.kind == TournamentKind.PEOPLE
        assert tournament.status == "finished"
        # Unrated on the bots' boards: not a rating input, and no snapshot of the ratings.
        assert match.id not in {r.match_id for r in match_results(session)}
        snapshots = select(RatingSnapshot).where(RatingSnapshot.tournament_id == tournament.id)
        assert not session.scalars(snapshots).all()
        seated = select(Bot.name).join(MatchSeat, MatchSeat.bot_id == Bot.id)
        seated = seated.where(MatchSeat.match_id == match.id)
        names = session.scalars(seated.order_by(MatchSeat.seat)).all()
        assert sorted(names) == ["@alice", "greedy"] and names[seat] == "@alice"


def your_turn(client: FlaskClient, path: str) -> dict[str, Any]:
    """The view once the seat is asked (the bots may move first; heads-up, the person moves
    first in every other hand, so a match of two hands or more asks them)."""
    view = client.get(f"{path}/view.json").get_json()
    for _ in range(200):
        if view["status"] == "your_turn":
            return view
        assert view["status"] != "match_over", "the match ended without asking the person"
        view = client.get(f"{path}/view.json?after={view['version']}").get_json()
    raise AssertionError(f"never asked: {view['status']}")


def test_a_person_plays_a_whole_three_seat_match_and_sees_no_unseen_card(arena: dict[str, Any]) -> None:
    client, csrf = signed_in(arena["app"], arena["alice"])
    path = table_path(sit(client, csrf, "greedy", seats=3, **{"with": "random"}, hands=2))
    views: list[dict[str, Any]] = []
    last = play_through(client, csrf, path, views)
    assert len(last["players"]) == 3 and [p["you"] for p in last["players"]].count(True) == 1
    streamed = [view for _id, view in events(client, path)]
    assert streamed[-1]["status"] == "match_over"
    _match, logs, seat = record_of(arena["url"], path)
    assert len(logs) == 2 and len(logs[0]["players"]) == 3
    check_nothing_unseen([*views, *streamed], logs, seat)


def test_a_reconnect_with_last_event_id_resumes_the_seat(arena: dict[str, Any]) -> None:
    client, csrf = signed_in(arena["app"], arena["alice"])
    path = table_path(sit(client, csrf, "random", hands=HANDS))
    asked = your_turn(client, path)
    # The tab closes; a new one (a new client of the same session) resumes after what it saw.
    resumed = events(client, path, last=asked["version"] - 1)
    assert resumed and resumed[0][0] == asked["version"]
    assert resumed[0][1]["status"] == "your_turn" and resumed[0][1]["legal"] == asked["legal"]
    assert events(client, path, last=asked["version"]) == []  # nothing new: pings only
    move = {"version": asked["version"], "action": asked["legal"][-1]["id"]}
    assert client.post(f"{path}/act", json=move, headers={"X-CSRF-Token": csrf}).status_code == 200
    play_through(client, csrf, path, [])
    match, _logs, _seat = record_of(arena["url"], path)
    with session_scope(arena["url"]) as session:
        assert session.scalar(select(func.count()).select_from(FaultRecord).where(
            FaultRecord.match_id == match.id, FaultRecord.kind == "timeout")) == 0  # fmt: skip
    assert match.forfeited_seat is None


@pytest.fixture
def hurried(arena: dict[str, Any]) -> dict[str, Any]:
    """The arena with a one-second clock."""
    app = arena["app"]
    app.config["SETTINGS"] = dataclasses.replace(app.config["SETTINGS"], person_clock_s=1)
    return arena


def test_a_person_who_walks_away_faults_then_forfeits_and_a_bots_match_plays_on(
    hurried: dict[str, Any],
) -> None:
    from arena.tournaments.lifecycle import create_tournament, resolve_bots, start_tournament

    url = hurried["url"]
    client, csrf = signed_in(hurried["app"], hurried["alice"])
    path = table_path(sit(client, csrf, "greedy", hands=6))
    with session_scope(url) as session:
        bots = create_tournament(session, name="beside", bot_ids=resolve_bots(session, ["random", "greedy"]),
                                 table_sizes=[2], deals_per_table=2, hands_per_match=6)  # fmt: skip
        start_tournament(session, bots.id)
        beside = bots.id
        ids = list(session.scalars(select(Match.id).where(Match.tournament_id == beside)))
    hurried["backend"].submit(ids)
    wait_done(url, path)  # nobody moves: the clock runs out at each decision
    match, logs, seat = record_of(url, path)
    with session_scope(url) as session:
        charged = FaultRecord.kind.not_in(NOTICE_KINDS)  # a slow notice is on the record, not charged
        faults = session.scalars(select(FaultRecord).where(FaultRecord.match_id == match.id, charged)).all()
        assert [(f.seat, f.kind) for f in faults] == [(seat, "timeout")] * 3  # max_faults, then forfeit
        assert "clock of 1 s" in faults[0].reason
        # Three hands faulted (a hand the bot ends before the seat is asked costs none), the
        # rest forfeited.
        assert match.forfeited_seat == seat and 3 <= len(logs) < 6
        beside_matches = session.scalars(select(Match).where(Match.tournament_id == beside)).all()
    last = client.get(f"{path}/view.json").get_json()
    assert last["status"] == "match_over" and last["faults"] == {"count": 3, "max": 3}
    assert "forfeited" in last["result"]["match"]["words"]
    for _ in range(600):  # the bots' matches, played by the same pool, finish untouched
        with session_scope(url) as session:
            rows = session.scalars(select(Match).where(Match.tournament_id == beside)).all()
            if all(m.status == "done" for m in rows):
                beside_matches = rows
                break
        time.sleep(0.1)
    assert beside_matches and all(m.status == "done" and m.faults == 0 for m in beside_matches)


def test_bad_moves_are_refused_and_change_nothing(arena: dict[str, Any]) -> None:
    client, csrf = signed_in(arena["app"], arena["alice"])
    path = table_path(sit(client, csrf, "random", hands=HANDS))
    asked = your_turn(client, path)
    before = channel_row(arena["url"], path)
    good = {"version": asked["version"], "action": asked["legal"][0]["id"]}
    refusals = [
        ({**good, "action": "meld Ah 2h 3h 4h"}, {"X-CSRF-Token": csrf}, 409, "not one of your legal"),
        ({**good, "version": asked["version"] - 1}, {"X-CSRF-Token": csrf}, 409, "out of date"),
        (good, {}, 403, "reload the page"),  # no CSRF header
        (good, {"X-CSRF-Token": "forged"}, 403, "reload the page"),
        ({"version": "1", "action": good["action"]}, {"X-CSRF-Token": csrf}, 400, "version"),
        ({**good, "action": "x" * 65}, {"X-CSRF-Token": csrf}, 400, "version"),
    ]
    for body, headers, status, words in refusals:
        answer = client.post(f"{path}/act", json=body, headers=headers)
        said = answer.get_json()["error"]["message"]
        assert (answer.status_code, words in said) == (status, True), (body, said)
        assert channel_row(arena["url"], path) == before  # nothing changed
    assert client.post(f"{path}/act", json=good, headers={"X-CSRF-Token": csrf}).status_code == 200
    replayed = client.post(f"{path}/act", json=good, headers={"X-CSRF-Token": csrf})
    assert replayed.status_code == 409  # the same move again: the view it was chosen from is gone


def test_another_person_and_a_forged_session_get_404(arena: dict[str, Any]) -> None:
    app = arena["app"]
    client, csrf = signed_in(app, arena["alice"])
    path = table_path(sit(client, csrf, "random", hands=HANDS))
    asked = your_turn(client, path)
    bob, bob_csrf = signed_in(app, arena["bob"])
    forged = app.test_client()
    forged.set_cookie("tonk_session", client.get_cookie("tonk_session").value[:-4] + "AAAA")  # type: ignore[union-attr]
    move = {"version": asked["version"], "action": asked["legal"][0]["id"]}
    for other, token in ((bob, bob_csrf), (forged, csrf), (app.test_client(), csrf)):
        assert other.get(path).status_code in (302, 404)
        for sub in ("/view.json", "/events"):
            assert other.get(path + sub).status_code == 404
        assert other.post(f"{path}/act", json=move, headers={"X-CSRF-Token": token}).status_code == 404
    assert bob.get(path).status_code == 404
    assert client.get(f"{path}/view.json").get_json()["version"] == asked["version"]  # untouched


def test_sitting_down_is_refused_with_a_reason_and_nothing_made(arena: dict[str, Any]) -> None:
    app, url = arena["app"], arena["url"]
    bob, csrf = signed_in(app, arena["bob"])

    def tables() -> int:
        with session_scope(url) as session:
            return int(session.scalar(select(func.count()).select_from(Tournament)) or 0)

    assert person_rows(url, "alice") == ["@alice"]  # it exists: refused as a person's seat
    made = tables()
    refusals = [
        ("nobody", {"csrf": csrf}, 404, "no active bot"),
        ("shy", {"csrf": csrf}, 403, "turned challenges off"),
        ("random", {"csrf": csrf, "seats": "4"}, 400, "from 2 to 3"),
        ("random", {"csrf": csrf, "hands": "1000"}, 400, "hands"),
        ("random", {"csrf": csrf, "seats": "3", "with": "random"}, 400, "twice"),
        ("random", {"csrf": "stale"}, 400, "reload the page"),
        ("@alice", {"csrf": csrf}, 404, "no active bot"),  # a person's seat is no opponent
    ]
    for bot, form, status, words in refusals:
        answer = bob.post(f"/bots/{bot}/sit", data=form)
        assert answer.status_code == status and words in answer.get_data(as_text=True), (bot, form)
        assert tables() == made
    assert app.test_client().post("/bots/random/sit", data={"csrf": csrf}).status_code == 302  # not signed in
    path = table_path(sit(bob, csrf, "random", hands=2))
    again = sit(bob, csrf, "greedy")  # one table at a time
    assert again.status_code == 429 and path.rsplit("/", 1)[1] in again.get_data(as_text=True)
    assert tables() == made + 1
    # The owner of a bot that takes no challenges may still play it.
    alice, alice_csrf = signed_in(app, arena["alice"])
    table_path(sit(alice, alice_csrf, "shy", hands=1))


def test_a_flood_of_moves_is_refused(app_factory: Callable[..., Flask], arena: dict[str, Any]) -> None:
    app = arena["app"]
    app.config["TABLE_ACT_LIMIT"] = (3, 60.0)
    client, csrf = signed_in(app, arena["alice"])
    path = table_path(sit(client, csrf, "random", hands=HANDS))
    asked = your_turn(client, path)
    stale = {"version": asked["version"] - 1, "action": asked["legal"][0]["id"]}
    headers = {"X-CSRF-Token": csrf}
    codes = [client.post(f"{path}/act", json=stale, headers=headers).status_code for _ in range(5)]
    assert codes == [409, 409, 409, 429, 429]
    flooded = client.post(f"{path}/act", json={**stale, "version": asked["version"]}, headers=headers)
    assert flooded.status_code == 429 and flooded.headers["Retry-After"]
    assert channel_row(arena["url"], path) == (asked["version"], None)  # the good move was refused too


def test_events_arrive_as_they_happen_over_real_http(arena: dict[str, Any]) -> None:
    """Over a real socket (Werkzeug's threaded server, as Flask's dev server and `tonk
    dashboard` serve): each view is sent as it happens, not when the stream ends."""
    import urllib.request

    from helpers.net import app_on_loopback

    app = arena["app"]
    app.config["TABLE_STREAM_S"] = 60.0
    client, csrf = signed_in(app, arena["alice"])
    path = table_path(sit(client, csrf, "greedy", hands=5))
    cookie = client.get_cookie("tonk_session")
    assert cookie is not None
    headers = {"Cookie": f"tonk_session={cookie.value}"}
    with app_on_loopback(app) as base:
        opened = urllib.request.Request(base + path + "/events", headers=headers)
        stream = urllib.request.urlopen(opened, timeout=30)

        views = sse_views(stream)

        def next_view() -> dict[str, Any]:
            view = next(views, None)
            assert view is not None, "the stream ended"
            return view

        with stream:
            view = next_view()
            while view["status"] != "your_turn":
                view = next_view()
            move = json.dumps({"version": view["version"], "action": view["legal"][0]["id"]}).encode()
            act = urllib.request.Request(
                base + path + "/act", data=move, method="POST",
                headers={**headers, "X-CSRF-Token": csrf, "Content-Type": "application/json"},
            )  # fmt: skip
            with urllib.request.urlopen(act, timeout=30) as answer:
                assert answer.status == 200
            # On the stream opened before the move: a view after it (the "waiting" one, or the
            # table's next if the bot answered before the stream looked: it sends the newest).
            following = next_view()
            assert following["version"] > view["version"]


def test_an_expired_session_is_not_seated(arena: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import itsdangerous

    app = arena["app"]
    client, csrf = signed_in(app, arena["alice"])
    path = table_path(sit(client, csrf, "random", hands=HANDS))
    asked = your_turn(client, path)
    serializer = app.session_interface.get_signing_serializer(app)  # type: ignore[attr-defined]
    cookie = client.get_cookie("tonk_session")
    assert serializer is not None and cookie is not None
    payload = serializer.loads(cookie.value)
    long_ago = int(time.time()) - 200 * 24 * 3600  # past TONK_SESSION_HOURS
    monkeypatch.setattr(itsdangerous.TimestampSigner, "get_timestamp", lambda self: long_ago)
    old = serializer.dumps(payload)
    monkeypatch.undo()
    stale = app.test_client()
    stale.set_cookie("tonk_session", old)
    move = {"version": asked["version"], "action": asked["legal"][0]["id"]}
    assert stale.get(f"{path}/view.json").status_code == 404
    assert stale.post(f"{path}/act", json=move, headers={"X-CSRF-Token": csrf}).status_code == 404
    assert client.get(f"{path}/view.json").get_json()["version"] == asked["version"]  # untouched
    fresh = app.test_client()  # the same content signed now: what ended it was its age
    fresh.set_cookie("tonk_session", serializer.dumps(payload))
    assert fresh.get(f"{path}/view.json").status_code == 200


def test_a_seat_streams_under_gunicorns_threads(pg_url: str) -> None:
    """Under gunicorn's threaded worker, as production serves the dashboard (its own process,
    its own embedded pool playing the match), on PostgreSQL as production runs: sign in, sit,
    and the stream opened before a move carries the view after it."""
    import http.cookiejar
    import os
    import sys
    import urllib.parse
    import urllib.request

    from helpers.net import free_port, listening
    from helpers.net import wait_for as wait_until
    from helpers.paths import ROOT

    from arena.processes import spawn

    with session_scope(pg_url) as session:
        house = get_or_create_operator(session, "house")
        host_bot(session, house, "greedy", "bots.greedy:GreedyBot", check=False)
        _alice, token = create_owner(session, "alice")
    port = free_port()
    env = {**os.environ, "TONK_DATABASE_URL": pg_url, "TONK_SECRET_KEY": "s" * 64,
           "TONK_EMBEDDED_WORKERS": "1", "TONK_REDIS_URL": ""}  # fmt: skip
    command = [sys.executable, "-m", "gunicorn", "-k", "dashboard.gunicorn_worker.DashboardWorker",
               "--threads", "4", "--graceful-timeout", "5", "-b", f"127.0.0.1:{port}",
               "dashboard.wsgi:app"]  # fmt: skip
    server = spawn(command, cwd=ROOT, env=env)
    try:
        wait_until("gunicorn", lambda: listening(port), 60)
        base = f"http://127.0.0.1:{port}"
        jar = http.cookiejar.CookieJar()
        web = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

        def form(path: str, fields: dict[str, str]) -> Any:
            return web.open(base + path, data=urllib.parse.urlencode(fields).encode(), timeout=30)

        page = web.open(base + "/signin", timeout=30).read().decode()
        form("/signin", {"csrf": CSRF.search(page).group(1), "token": token})  # type: ignore[union-attr]
        match = CSRF.search(web.open(base + "/me", timeout=30).read().decode())
        assert match is not None
        csrf = match.group(1)
        # Several hands: greedy may end one before the person is asked (it may go down first).
        with form("/bots/greedy/sit", {"csrf": csrf, "hands": "5"}) as sat:  # 303 followed to the page
            path = urllib.parse.urlsplit(sat.geturl()).path
            assert path.startswith("/tables/") and sat.status == 200
        stream = web.open(base + path + "/events", timeout=60)

        views = sse_views(stream)

        def next_view() -> dict[str, Any]:
            view = next(views, None)
            assert view is not None, "the stream ended"
            return view

        with stream:
            view = next_view()
            while view["status"] not in ("your_turn", "match_over"):
                view = next_view()
            assert view["status"] == "your_turn", view["status"]
            move = json.dumps({"version": view["version"], "action": view["legal"][0]["id"]}).encode()
            act = urllib.request.Request(
                base + path + "/act", data=move, method="POST",
                headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"},
            )  # fmt: skip
            with web.open(act, timeout=30) as answer:
                assert answer.status == 200
            following = next_view()
            assert following["version"] > view["version"]
    finally:
        server.terminate()  # an open stream's thread ends at its next write; gunicorn waits 5 s
        server.wait(60)

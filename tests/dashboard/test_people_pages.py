"""The people's board on the dashboard (issue #39, PostgreSQL): ``/people`` and
``/api/v1/people`` a page at a time and searched, a bot's record against people on its page
and in its API, a person's games on /me; and a person's own seat (a bot row flagged
``person``) on none of the bots' boards, lists, ladders, matchmaking pools or challenge
targets."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from helpers.dashboard_fixtures import OPERATOR_TOKEN
from helpers.people import PER_PAIR, Store, build_bots, people_match, sit_people
from sqlalchemy import func, select, update

from arena.ladder.scheduler import active_pool
from arena.ladder.settings import LadderSettings
from arena.ladder.setup import create_ladder
from arena.ladder.status import ladder_detail
from arena.ratings import leaderboard as ratings
from arena.store.db import session_scope
from arena.store.models import Bot, FaultRecord, MatchSeat, Tournament

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SEATS = {"@ann", "@bob", "@cy", "@dee"}


@pytest.fixture
def arena(pg_url: str, app_factory: Callable[..., Flask]) -> tuple[Store, FlaskClient, str]:
    store = build_bots(pg_url)
    sit_people(pg_url, store)
    ratings.reset()
    return store, app_factory(pg_url).test_client(), pg_url


def people_rows(html: str) -> list[tuple[str, str]]:
    """(rank cell, person) of each row of the rendered board."""
    return re.findall(r'<tr class="[^"]*" data-person="(\w+)">\s*<td class="num">([^<]*)</td>', html)


def test_the_people_board_page_and_api(arena: tuple[Store, FlaskClient, str]) -> None:
    _store, client, _url = arena
    api = client.get("/api/v1/people").get_json()
    assert [r["person"] for r in api["people"]][2:] == ["cy", "dee"]
    assert [r["rank"] for r in api["people"]] == [1, 2, 3, None]
    assert (api["total"], api["on_board"], api["page"], api["pages"]) == (4, 4, 1, 1)
    first = api["people"][0]
    assert first["rating"]["text"].count("[") == 1 and first["rating"]["basis"] == "fitted"
    assert {"matches", "wins", "draws", "losses", "hands", "chips_per_100", "score", "seat"} <= set(first)

    paged = client.get("/api/v1/people?page=2&per_page=2").get_json()
    assert [r["person"] for r in paged["people"]] == ["cy", "dee"] and paged["pages"] == 2
    found = client.get("/api/v1/people?q=BO").get_json()
    assert [(r["person"], r["rank"]) for r in found["people"]] == [
        (r["person"], r["rank"]) for r in api["people"] if r["person"] == "bob"
    ]
    assert client.get("/api/v1/people?q=%3Cscript%3E").status_code == 400
    assert client.get("/api/v1/people?per_page=0").status_code == 400
    assert "GET /api/v1/people?q=&page=&per_page=" in client.get("/api/v1/").get_json()["endpoints"]

    page = client.get("/people").get_data(as_text=True)
    assert [p for p, _ in people_rows(page)] == [r["person"] for r in api["people"]]
    assert [rank for _, rank in people_rows(page)] == ["1", "2", "3", "\u2013"]
    assert "beat everyone so far" in page  # cy's bound, said in words
    searched = client.get("/people?q=an&per_page=1").get_data(as_text=True)
    assert [p for p, _ in people_rows(searched)] == ["ann"]
    assert 'href="/people"' in client.get("/").get_data(as_text=True)  # in the site's nav


def test_a_bots_page_and_api_give_its_record_against_people(arena: tuple[Store, FlaskClient, str]) -> None:
    store, client, url = arena
    with session_scope(url) as session:  # greedy timed out once against ann: apart, as the match
        match = people_match(url, store, [("@ann", 1), ("greedy", -1)])
        greedy_seat = (MatchSeat.match_id == match) & (MatchSeat.seat == 1)
        session.execute(update(MatchSeat).where(greedy_seat).values(faults=1))
        session.add(FaultRecord(match_id=match, seat=1, bot_id=store.bots["greedy"], hand_index=0, decision=0,
                                kind="timeout", reason="a person waited"))  # fmt: skip
    bot = client.get("/api/v1/bots/greedy").get_json()["bot"]
    assert bot["faults"]["total"] == bot["record"]["faults"] == 0
    assert bot["against_people"] == {
        "matches": 16, "wins": 3, "draws": 0, "losses": 13, "hands": 160, "chips": -75,
        "chips_per_100": -46.88,
    }  # fmt: skip
    assert bot["record"]["matches"] == 90  # its record against bots: the people's matches apart
    assert not SEATS & {h["opponent"] for h in bot["head_to_head"]}
    # bob's two three-seat tables sat greedy beside random: people's matches, not greedy's
    # head-to-head against random (nor random's against greedy), which stay the cup's.
    vs = {h["opponent"]: h["matches"] for h in bot["head_to_head"]}
    assert vs == {"random": PER_PAIR, "search": PER_PAIR, "mine": PER_PAIR}
    random_bot = client.get("/api/v1/bots/random").get_json()["bot"]
    assert {h["opponent"]: h["matches"] for h in random_bot["head_to_head"]}["greedy"] == PER_PAIR
    page = client.get("/bots/greedy").get_data(as_text=True)
    section = page[page.index('id="against-people"') : page.index("Rating history")]
    assert ">16<" in section and "3\u20130\u201313" in section and "46.9" in section
    assert "No person has played it yet" in client.get("/bots/mine").get_data(as_text=True)
    # A person's seat has no bot page.
    assert client.get("/bots/@ann").status_code == 404
    assert client.get("/api/v1/bots/%40ann").status_code in (400, 404)


def test_a_person_sees_their_games_as_a_player_on_their_page(arena: tuple[Store, FlaskClient, str]) -> None:
    store, client, _url = arena
    token = CSRF.search(client.get("/signin").get_data(as_text=True))
    assert token
    signed = client.post("/signin", data={"csrf": token.group(1), "token": store.tokens["ann"]})
    assert signed.status_code == 303
    page = client.get("/me").get_data(as_text=True)
    games = page[page.index('id="games"') :]
    assert len(re.findall(r'<tr data-match="\d+">', games)) == 11
    assert games.count(">won<") == 7 and games.count(">lost<") == 3 and "running" in games
    assert "search" in games and "greedy" in games
    other = app_client(client)
    bob = CSRF.search(other.get("/signin").get_data(as_text=True))
    assert bob
    other.post("/signin", data={"csrf": bob.group(1), "token": store.tokens["dee"]})
    mine = other.get("/me").get_data(as_text=True)
    assert len(re.findall(r'<tr data-match="\d+">', mine[mine.index('id="games"') :])) == 2  # dee's own only


def app_client(client: FlaskClient) -> FlaskClient:
    return client.application.test_client()


def test_a_persons_seat_is_on_no_bot_board_list_ladder_pool_or_challenge(
    arena: tuple[Store, FlaskClient, str],
) -> None:
    _store, client, url = arena
    with session_scope(url) as session:  # so only the person filter can refuse a challenge
        session.execute(update(Bot).where(Bot.person.is_(True)).values(accepts_challenges=True))
    board = client.get("/api/v1/leaderboard?per_page=100").get_json()["leaderboard"]
    assert {r["bot"] for r in board} >= {"random", "greedy", "search", "mine", "newbie"}
    assert not SEATS & {r["bot"] for r in board}
    assert not SEATS & {b["name"] for b in client.get("/api/v1/bots").get_json()["bots"]}
    for path in ("/", "/bots/"):
        html = client.get(path).get_data(as_text=True)
        assert "greedy" in html and "@ann" not in html, path
    # The matches page lists a person's matches (a match like any other), but its bot filter
    # offers no person's seat.
    html = client.get("/matches/").get_data(as_text=True)
    picker = html.split('<select name="bot">')[1].split("</select>")[0]
    assert ">greedy<" in picker and "@" not in picker

    with session_scope(url) as session:
        raw = {"table_size": 2, "hands_per_match": 1, "versions_per_owner": 5}
        ladder = create_ladder(session, name="open", raw=raw).id
        pool = active_pool(session, LadderSettings.parse(raw))
        names = dict(session.execute(select(Bot.id, Bot.name)).all())
        ladder_board = ladder_detail(session, ladder)["board"]
    assert {names[b.bot_id] for b in pool} == {"random", "greedy", "search", "mine", "newbie"}
    assert not SEATS & {r["bot"] for r in ladder_board} and "greedy" in {r["bot"] for r in ladder_board}
    api_ladder = client.get(f"/api/v1/ladders/{ladder}").get_json()["ladder"]["board"]
    assert not SEATS & {r["bot"] for r in api_ladder}

    with session_scope(url) as session:
        before = session.scalar(select(func.count(Tournament.id)))
    for body in ({"bot": "mine", "opponent": "@ann"}, {"bot": "@ann", "opponent": "greedy"}):
        answer = client.post("/api/v1/challenges", json=body, headers=OPERATOR)
        assert answer.status_code == 404, (body, answer.get_json())
        assert "no active bot named '@ann'" in answer.get_json()["error"]["message"]
    with session_scope(url) as session:
        assert session.scalar(select(func.count(Tournament.id))) == before  # nothing created


def test_a_match_played_at_the_table_reaches_the_people_board_and_not_the_bots(
    pg_url: str, app_factory: Callable[..., Flask]
) -> None:
    """End to end through the seat (arena/tournaments/people.py, the embedded pool): a person
    plays a whole heads-up match against greedy, rated by a bots' tournament before, and
    finds it on the people's board and in greedy's record against people; the bots' board
    is the same before and after."""
    import dataclasses
    import time

    from helpers.arena import new_tournament

    from arena.bots.owners import create_owner, get_or_create_operator
    from arena.bots.registry import host_bot
    from arena.runtime.backends import EmbeddedBackend
    from arena.runtime.jobs import play_match_job
    from arena.store.models import Match
    from arena.tournaments.lifecycle import start_tournament

    with session_scope(pg_url) as session:
        house = get_or_create_operator(session, "house")
        hosted = (("random", "bots.random_bot:RandomBot"), ("greedy", "bots.greedy:GreedyBot"))
        bots = [host_bot(session, house, name, path, check=False).id for name, path in hosted]
        _alice, token = create_owner(session, "alice")
    cup = new_tournament(pg_url, bots, name="cup", deals_per_table=8, hands_per_match=1, seed=5)
    with session_scope(pg_url) as session:
        start_tournament(session, cup)
        ids = session.scalars(select(Match.id).where(Match.tournament_id == cup).order_by(Match.id)).all()
    for match_id in ids:
        assert play_match_job(match_id, pg_url) == "done"
    backend = EmbeddedBackend(pg_url, 2)
    app = app_factory(pg_url, TOURNAMENT_BACKEND=backend, TOURNAMENT_SWEEP_S=0, TABLE_POLL_S=3.0,
                      TABLE_ACT_LIMIT=(10_000, 1.0))  # fmt: skip
    app.config["SETTINGS"] = dataclasses.replace(app.config["SETTINGS"], person_clock_s=30)
    try:
        client = app.test_client()
        before = client.get("/api/v1/leaderboard").get_json()["leaderboard"]
        basis = {r["bot"]: r["rating"]["basis"] for r in before if r["rating"]}
        assert basis == {"random": "pool", "greedy": "pool"}
        page = client.get("/signin").get_data(as_text=True)
        found = CSRF.search(page)
        assert found
        assert client.post("/signin", data={"csrf": found.group(1), "token": token}).status_code == 303
        csrf = CSRF.search(client.get("/me").get_data(as_text=True))
        assert csrf
        sat = client.post("/bots/greedy/sit", data={"csrf": csrf.group(1), "hands": "2"})
        assert sat.status_code == 303, sat.get_data(as_text=True)[:300]
        path = sat.headers["Location"].removeprefix("http://localhost")
        view = client.get(f"{path}/view.json").get_json()
        for _ in range(2000):  # the first legal action each turn, to the end
            if view["status"] == "match_over":
                break
            if view["status"] == "your_turn":
                move = {"version": view["version"], "action": view["legal"][0]["id"]}
                acted = client.post(f"{path}/act", json=move, headers={"X-CSRF-Token": csrf.group(1)})
                view = acted.get_json()
            view = client.get(f"{path}/view.json?after={view['version']}").get_json()
        assert view["status"] == "match_over"
        ends = time.monotonic() + 120
        while not client.get("/api/v1/people").get_json()["people"] and time.monotonic() < ends:
            time.sleep(0.1)  # the worker records the match just after the last view
        (row,) = client.get("/api/v1/people").get_json()["people"]
        assert (row["person"], row["seat"], row["matches"], row["hands"]) == ("alice", "@alice", 1, 2)
        assert row["rank"] == 1  # greedy has a rating to hold fixed (its basis checked above)
        assert row["rating"] is not None
        record = client.get("/api/v1/bots/greedy").get_json()["bot"]["against_people"]
        assert record["matches"] == 1 and record["hands"] == 2
        assert record["wins"] + record["draws"] + record["losses"] == 1
        games = client.get("/me").get_data(as_text=True)
        assert len(re.findall(r'<tr data-match="\d+">', games[games.index('id="games"') :])) == 1
        after = client.get("/api/v1/leaderboard").get_json()["leaderboard"]
        assert [(r["bot"], r["rating"], r["matches"]) for r in after] == [
            (r["bot"], r["rating"], r["matches"]) for r in before
        ]
    finally:
        backend.close(cancel=True)

"""The ladder on the dashboard: its API (public reading; an operator's token to create, pause
and resume, bad input refused with the value quoted and nothing created), its pages, and the
reason each match was scheduled on the match, match list and bot pages."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Flask
from helpers.dashboard_fixtures import OPERATOR_TOKEN
from helpers.ladder import ladder_arena, play_pending, run_tick
from sqlalchemy import func, select

from arena.store.db import session_scope
from arena.store.models import Match, Tournament

AUTH = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}


def ladders(url: str) -> int:
    with session_scope(url) as session:
        return int(session.scalar(select(func.count(Tournament.id))) or 0)


def test_the_ladder_api_and_pages(writable_url: str, app_factory: Callable[..., Flask]) -> None:
    url = writable_url
    ladder = ladder_arena(url, bots=3, rounds=3)
    client = app_factory(url).test_client()

    listed = client.get("/api/v1/ladders").get_json()["ladders"]
    assert [row["id"] for row in listed] == [ladder]
    detail: dict[str, Any] = client.get(f"/api/v1/ladders/{ladder}").get_json()["ladder"]
    assert {b["bot"] for b in detail["board"]} == {"b0", "b1", "b2"}
    assert all(b["ladder_matches"] > 0 and b["playing"] for b in detail["board"])
    assert detail["recent"] and all(m["reason"] for m in detail["recent"])
    assert "placement" in {r["reason"] for r in detail["reasons"]}
    assert detail["scheduler"] == "running"  # the test's ticks hold the lease for a while

    live = client.get(f"/api/v1/ladders/{ladder}/live?html=1").get_json()["live"]
    assert set(live["html"]) == {"counts", "board", "recent", "now_showing"} and "b0" in live["html"]["board"]
    # Now showing: only deals whose every match is done, each listed whole; a deal with one
    # seat order played and the other still to play is not shown.
    assert run_tick(url, ladder)[1] and play_pending(url, ladder, limit=1) == 1
    live = client.get(f"/api/v1/ladders/{ladder}/live?html=1").get_json()["live"]
    with session_scope(url) as session:
        query = select(Match.id, Match.seed, Match.status).where(Match.tournament_id == ladder)
        rows = session.execute(query).all()
    open_seeds = {r.seed for r in rows if r.status != "done"}
    done_deals = {r.seed for r in rows} - open_seeds
    assert open_seeds and done_deals  # the arena has both: the test means something
    seed_of = {r.id: r.seed for r in rows}
    shown = [[m["id"] for m in d["matches"]] for d in live["now_showing"]]
    assert shown and all(seed_of[m] in done_deals for deal in shown for m in deal)
    assert all(sorted(deal) == sorted(r.id for r in rows if r.seed == seed_of[deal[0]]) for deal in shown)
    assert {f"/matches/{m}#hand=0&amp;step=0&amp;play=1" for deal in shown for m in deal} <= set(
        re.findall(r'/matches/\d+#hand=0&amp;step=0&amp;play=1', live["html"]["now_showing"])
    )
    opened = {r.id for r in rows if r.seed in open_seeds}
    assert not opened & {int(m) for m in re.findall(r"/matches/(\d+)", live["html"]["now_showing"])}

    page = client.get(f"/ladders/{ladder}").get_data(as_text=True)
    assert "ladder-live" in page and "placement" in page and "js/ladder.js" in page
    assert 'id="now-showing-section"' in page and f"/matches/{shown[0][0]}#hand=0" in page
    assert "Ladders" in client.get("/ladders/").get_data(as_text=True)
    assert client.get(f"/tournaments/{ladder}").status_code == 302  # a ladder has its own page
    assert client.get(f"/api/v1/tournaments/{ladder}").get_json()["tournament"]["kind"] == "ladder"

    # The reason on the match page, the match list and the bot page.
    with session_scope(url) as session:
        first = session.execute(
            select(Match.id, Match.reason).where(Match.tournament_id == ladder).order_by(Match.id)
        ).first()
    assert first is not None and first.reason == "placement"
    assert "Scheduled by the ladder: <b>placement</b>" in client.get(f"/matches/{first.id}").get_data(
        as_text=True
    )
    assert client.get(f"/api/v1/matches/{first.id}").get_json()["match"]["reason"] == "placement"
    listed_matches = client.get(f"/api/v1/matches?tournament={ladder}").get_json()["matches"]
    assert all(m["reason"] for m in listed_matches)
    assert 'class="small reason"' in client.get(f"/matches/?tournament={ladder}").get_data(as_text=True)
    assert 'class="small reason"' in client.get("/bots/b0").get_data(as_text=True)

    # Pause and resume take an operator's token.
    assert client.post(f"/api/v1/ladders/{ladder}/pause").status_code == 401
    paused = client.post(f"/api/v1/ladders/{ladder}/pause", headers=AUTH).get_json()["ladder"]
    assert paused["status"] == "paused"
    assert run_tick(url, ladder)[1] == []
    resumed = client.post(f"/api/v1/ladders/{ladder}/resume", headers=AUTH).get_json()["ladder"]
    assert resumed["status"] == "running"
    play_pending(url, ladder)
    assert run_tick(url, ladder)[1]


def test_creating_a_ladder_over_the_api(writable_url: str, app_factory: Callable[..., Flask]) -> None:
    url = writable_url
    ladder_arena(url, bots=2, rounds=0)
    client = app_factory(url).test_client()
    body = {"name": "public", "table_size": 2, "hands_per_match": 3, "bots": ["b0", "b1"],
            "matchmaking": {"placement_sd": 80.0}}  # fmt: skip
    before = ladders(url)
    assert client.post("/api/v1/ladders", json=body).status_code == 401
    for bad, quoted in (
        ({**body, "table_size": 9}, "got 9"),
        ({**body, "bots": ["b0", "nobody"]}, "'nobody'"),
        ({**body, "matchmaking": {"placement_sd": "wide"}}, "'wide'"),
        ({**body, "colour": "red"}, "'colour'"),
        ({**body, "name": "bad\x00name"}, "bad"),
    ):
        answer = client.post("/api/v1/ladders", json=bad, headers=AUTH)
        assert 400 <= answer.status_code < 500, bad
        assert quoted in answer.get_json()["error"]["message"], (bad, answer.get_json())
    assert ladders(url) == before  # nothing created
    created = client.post("/api/v1/ladders", json=body, headers=AUTH)
    assert created.status_code == 201
    ladder = created.get_json()["ladder"]
    assert ladder["pool"] == ["b0", "b1"] and ladder["matchmaking"]["placement_sd"] == 80.0
    assert created.headers["Location"].endswith(f"/api/v1/ladders/{ladder['id']}")
    assert run_tick(url, ladder["id"])[1]


def _badge(page: str) -> str:
    found = re.search(r'<span id="l-status"><span class="status status-(\w+)">(\w+)</span>', page)
    assert found and found[1] == found[2], page[:2000]
    return found[1]


def test_the_ladder_says_what_it_does_and_who_really_plays(
    writable_url: str, app_factory: Callable[..., Flask], monkeypatch: Any, capsys: Any
) -> None:
    """Issue #40, point 14: after the scheduler stopped the badge still said "running"; "Plays
    yes" stayed for a disconnected bot (the scheduler gives it no table); and `tonk ladder
    status` said "scheduler stopped" while the ladder was paused."""
    import argparse

    from sqlalchemy import update

    from arena.commands.ladder import cmd_status
    from arena.ladder.lease import give_up, lease_name
    from arena.store.models import Bot, BotVersion

    url = writable_url
    ladder = ladder_arena(url, bots=3, rounds=1)
    client = app_factory(url).test_client()
    monkeypatch.setenv("TONK_DATABASE_URL", url)

    def cli() -> str:
        assert cmd_status(argparse.Namespace(id=ladder)) == 0
        return str(capsys.readouterr().out)

    # The test's tick holds the lease: a scheduler runs it.
    assert _badge(client.get(f"/ladders/{ladder}").get_data(as_text=True)) == "running"
    assert "running, scheduler running" in cli()
    # Its scheduler stops: the ladder's status stays running, but it is not scheduling.
    with session_scope(url) as session:
        give_up(session, lease_name(ladder), "me")
    page = client.get(f"/ladders/{ladder}").get_data(as_text=True)
    assert _badge(page) == "stopped" and "no scheduler" in page
    live = client.get(f"/api/v1/ladders/{ladder}/live?html=1").get_json()["live"]
    assert live["status"] == "running" and live["state"] == "stopped" and live["scheduler"] == "stopped"
    assert "no scheduler holds it" in cli()
    assert "stopped" in client.get("/ladders/").get_data(as_text=True)
    # Paused: said so, not "scheduler stopped".
    assert client.post(f"/api/v1/ladders/{ladder}/pause", headers=AUTH).status_code == 200
    assert _badge(client.get(f"/ladders/{ladder}").get_data(as_text=True)) == "paused"
    out = cli()
    assert "paused: no new tables" in out and "scheduler stopped" not in out
    assert client.post(f"/api/v1/ladders/{ladder}/resume", headers=AUTH).status_code == 200

    # b1 becomes a connected bot with no live connection: in the pool, but it gets no table.
    with session_scope(url) as session:
        b1 = session.scalar(select(Bot.id).where(Bot.name == "b1"))
        session.execute(update(Bot).where(Bot.id == b1).values(connected=True))
        session.execute(update(BotVersion).where(BotVersion.bot_id == b1).values(connected=True))
    board = {b["bot"]: b for b in client.get(f"/api/v1/ladders/{ladder}").get_json()["ladder"]["board"]}
    assert board["b1"]["playing"] is False and board["b1"]["offline"] is True
    assert board["b0"]["playing"] is True and board["b0"]["offline"] is False
    live = client.get(f"/api/v1/ladders/{ladder}/live?html=1").get_json()["live"]
    plays = dict(re.findall(r'href="/bots/(b\d)".*?<td class="plays">(.*?)</td>', live["html"]["board"]))
    assert plays["b0"] == "yes" and "offline" in plays["b1"], plays
    assert re.search(r"b1\s.*offline", cli())

"""A big board on the dashboard: the ladder's board and the leaderboard come a page at a time
(their real ranks kept), searched by bot or owner name, bad paging or search refused with a
400 that names it; the ladder page's poll answers 304 with no body until what it shows
changes. On PostgreSQL, with the board built in bulk by bench/dashboard.py's ``big_ladder``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from helpers.bench_modules import bench_module
from helpers.dashboard_fixtures import OPERATOR_TOKEN
from helpers.paths import ROOT
from sqlalchemy import insert, select, update

from arena.ladder.status import ladder_detail
from arena.queries.leaderboard import leaderboard
from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, Match, MatchSeat
from arena.store.statuses import BotStatus, MatchStatus

BOTS = 120
AUTH = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}


@pytest.fixture
def big(pg_url: str, app_factory: Callable[..., Flask]) -> Iterator[tuple[str, int, FlaskClient]]:
    with bench_module(ROOT / "bench" / "dashboard.py", "bench_dashboard_paging") as bench:
        ladder = bench.big_ladder(pg_url, BOTS, matches_per_bot=12)
    yield pg_url, ladder, app_factory(pg_url).test_client()


def names_and_ranks(rows: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    return [(r["bot"], r["rank"]) for r in rows]


def html_rows(html: str) -> list[tuple[str, str]]:
    """(rank cell, bot) of each row of a rendered board."""
    return re.findall(r'<tr><td class="num">([^<]*)</td><td><a class="bot" href="/bots/(\w+)"', html)


def error(client: FlaskClient, path: str) -> str:
    answer = client.get(path)
    assert answer.status_code == 400, (path, answer.status_code)
    body = answer.get_json()["error"]
    assert body["code"] == "invalid_parameter"
    message: str = body["message"]
    assert len(message) < 300  # a long value is quoted cut short
    return message


def test_the_ladder_board_and_the_leaderboard_come_a_page_at_a_time(
    big: tuple[str, int, FlaskClient],
) -> None:
    url, ladder, client = big
    with session_scope(url) as session:
        full = ladder_detail(session, ladder)["board"]
        everyone = leaderboard(session, url)
    assert len(full) == BOTS and sum(r["rank"] is not None for r in full) > 100  # rated: ranks to page by

    api = client.get(f"/api/v1/ladders/{ladder}?page=2&per_page=50").get_json()["ladder"]
    assert names_and_ranks(api["board"]) == names_and_ranks(full[50:100])
    assert api["board_page"] == {"page": 2, "per_page": 50, "total": BOTS, "pages": 3, "q": None,
                                 "bots": BOTS}  # fmt: skip
    default = client.get(f"/api/v1/ladders/{ladder}").get_json()["ladder"]
    assert len(default["board"]) == 100  # the API's default page

    page = client.get(f"/ladders/{ladder}?page=2").get_data(as_text=True)  # 50 rows a page
    assert html_rows(page) == [(str(r["rank"]), r["bot"]) for r in full[50:100]]
    assert "Rows 51\u2013100 of 120" in page
    assert f'rel="prev" href="/ladders/{ladder}?page=1"' in page
    assert f'rel="next" href="/ladders/{ladder}?page=3"' in page
    assert f"/api/v1/ladders/{ladder}/live?html=1&amp;page=2" in page  # the poll asks for this page

    beyond = client.get(f"/api/v1/ladders/{ladder}?page=9&per_page=50").get_json()["ladder"]
    assert beyond["board"] == [] and beyond["board_page"]["total"] == BOTS
    text = client.get(f"/ladders/{ladder}?page=9").get_data(as_text=True)
    assert "Page 9 is past the last · page 9 of 3" in text and "No bot on this page of the board" in text
    assert f'rel="prev" href="/ladders/{ladder}?page=3"' in text  # back to the last page

    # By bot name, by owner name (any case), or a part of either: the board's own ranks.
    rank = {r["bot"]: r["rank"] for r in full}
    for q in ("B00042", "o00042", " b00042 "):
        found = client.get(f"/api/v1/ladders/{ladder}?q={q}").get_json()["ladder"]
        assert names_and_ranks(found["board"]) == [("b00042", rank["b00042"])], q
        assert found["board_page"]["total"] == 1 and found["board_page"]["q"] == q.strip().lower()
    part = client.get(f"/api/v1/ladders/{ladder}?q=0004").get_json()["ladder"]["board"]
    assert names_and_ranks(part) == [(r["bot"], r["rank"]) for r in full if "0004" in r["bot"]]
    assert len(part) == 11  # b00004 and b00040 to b00049
    searched = client.get(f"/ladders/{ladder}?q=b0004").get_data(as_text=True)
    assert [b for _, b in html_rows(searched)] == [r["bot"] for r in full if "b0004" in r["bot"]]
    assert "matching “b0004”" in searched

    # Bad paging or search: a 400 naming the parameter, JSON under /api and a page elsewhere.
    for bad, named in (("page=0", "'page'"), ("page=two", "'page'"), ("page=1e3", "'page'"),
                       ("per_page=101", "'per_page'"), ("q=" + "x" * 65, "'q'"), ("q=%3Cscript%3E", "'q'"),
                       ("q=a%00b", "'q'"), ("q=" + "é" * 5000, "'q'")):  # fmt: skip
        assert named in error(client, f"/api/v1/ladders/{ladder}?{bad}"), bad
        assert named in error(client, f"/api/v1/ladders/{ladder}/live?html=1&{bad}"), bad
        assert named in error(client, f"/api/v1/leaderboard?{bad}"), bad
    assert "5000 characters given" in error(client, "/api/v1/leaderboard?q=" + "é" * 5000)
    for path in (f"/ladders/{ladder}?page=-1", f"/ladders/{ladder}?q=%3Cb%3E", "/?page=zero"):
        answer = client.get(path)
        assert answer.status_code == 400 and "text/html" in answer.content_type, path
        assert "<b>" not in answer.get_data(as_text=True).split("<main")[-1], path  # quoted, escaped

    # The leaderboard: the same paging and search, over every bot of the arena.
    second = client.get("/api/v1/leaderboard?page=2&per_page=50").get_json()
    assert names_and_ranks(second["leaderboard"]) == names_and_ranks(everyone[50:100])
    assert (second["page"], second["per_page"], second["total"], second["pages"]) == (2, 50, BOTS, 3)
    assert len(client.get("/api/v1/leaderboard").get_json()["leaderboard"]) == 100
    by_owner = client.get("/api/v1/leaderboard?q=O00007").get_json()
    assert [r["bot"] for r in by_owner["leaderboard"]] == ["b00007"] and by_owner["total"] == 1
    home = client.get("/?page=3").get_data(as_text=True)
    assert "Rows 101\u2013120 of 120" in home and 'rel="prev" href="/?page=2"' in home
    assert re.findall(r'data-bot="(\w+)"', home) == [r["bot"] for r in everyone[100:]]


def poll(client: FlaskClient, ladder: int, etag: str | None = None, query: str = "") -> Any:
    headers = {"If-None-Match": etag} if etag else {}
    return client.get(f"/api/v1/ladders/{ladder}/live?html=1{query}", headers=headers)


def test_the_live_poll_answers_304_until_what_it_shows_changes(big: tuple[str, int, FlaskClient]) -> None:
    url, ladder, client = big
    first = poll(client, ladder, query="&page=2")
    assert first.status_code == 200 and first.headers["Cache-Control"] == "no-cache"
    tag = first.headers["ETag"]
    live = first.get_json()["live"]
    with session_scope(url) as session:
        full = ladder_detail(session, ladder)["board"]
    # Only the page the tab shows is rendered.
    assert [b for _, b in html_rows(live["html"]["board"])] == [r["bot"] for r in full[50:100]]
    assert live["board_page"]["page"] == 2

    again = poll(client, ladder, tag, "&page=2")
    assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == tag
    # The page carries the ETag of what it shows, so its first poll is a 304 too: the tab's
    # script never swaps the board for the same rows.
    shown = client.get(f"/ladders/{ladder}?page=2").get_data(as_text=True)
    page_tag = re.search(r'data-etag="([^"]+)"', shown)
    assert page_tag and f'W/"{page_tag[1]}"' == tag  # the tag `again` was answered 304 for
    assert poll(client, ladder, tag, "&page=3").status_code == 200  # another page: another ETag
    assert poll(client, ladder, tag, "&page=2&q=b000").status_code == 200
    assert poll(client, ladder, 'W/"something-else"', "&page=2").status_code == 200

    # A new match on the ladder (pending), then finished: each time a 200 with a new ETag.
    with session_scope(url) as session:
        bots = list(session.execute(select(BotVersion.bot_id, BotVersion.id).limit(2)))
        match_id = session.execute(
            insert(Match).values(tournament_id=ladder, key="new", table_index=9999, deal_index=0, rotation=0,
                                 seed=7, hands=1, status=MatchStatus.PENDING)
        ).inserted_primary_key[0]  # fmt: skip
        session.execute(insert(MatchSeat), [
            {"match_id": match_id, "seat": k, "bot_id": b, "bot_version_id": v}
            for k, (b, v) in enumerate(bots)
        ])  # fmt: skip
    pending = poll(client, ladder, tag, "&page=2")
    assert pending.status_code == 200 and pending.headers["ETag"] != tag
    assert pending.get_json()["live"]["matches"]["pending"] == 1
    tag = pending.headers["ETag"]
    assert poll(client, ladder, tag, "&page=2").status_code == 304
    with session_scope(url) as session:
        session.execute(update(Match).where(Match.id == match_id).values(status=MatchStatus.DONE))
        for seat, score in ((0, 1), (1, -1)):
            seat_row = (MatchSeat.match_id == match_id) & (MatchSeat.seat == seat)
            session.execute(update(MatchSeat).where(seat_row).values(score=score))
    done = poll(client, ladder, tag, "&page=2")
    assert done.status_code == 200 and done.headers["ETag"] != tag
    assert done.get_json()["live"]["matches"] == {**live["matches"], "done": live["matches"]["done"] + 1,
                                                  "total": live["matches"]["total"] + 1}  # fmt: skip
    tag = done.headers["ETag"]

    # A bot of this page is retired: it no longer plays (the board's order is read again).
    retired = full[60]["bot"]
    with session_scope(url) as session:
        session.execute(update(Bot).where(Bot.name == retired).values(status=BotStatus.RETIRED))
    gone = poll(client, ladder, tag, "&page=2")
    assert gone.status_code == 200 and gone.headers["ETag"] != tag
    row = next(r for r in re.findall(r"<tr>.*?</tr>", gone.get_json()["live"]["html"]["board"], re.S)
               if f">{retired}</a>" in r)  # fmt: skip
    assert ">retired<" in row
    tag = gone.headers["ETag"]

    # Its status changes (paused by an operator): a 200 saying so.
    assert client.post(f"/api/v1/ladders/{ladder}/pause", headers=AUTH).status_code == 200
    paused = poll(client, ladder, tag, "&page=2")
    assert paused.status_code == 200 and paused.get_json()["live"]["status"] == "paused"
    assert poll(client, ladder, paused.headers["ETag"], "&page=2").status_code == 304

"""Live that respects fairness: "now showing" lists only finished deals (every rotation done),
newest first, with links that open their replay playing; a deal still being played shows no
card, score or record anywhere, in the feed, on the pages or in the API."""

from __future__ import annotations

import json
import re
from typing import Any

from helpers.dashboard_fixtures import live_arena
from sqlalchemy import select, update

from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Match, MatchSeat
from arena.store.statuses import MatchStatus


def _deals(url: str, match_ids: list[int]) -> list[list[int]]:
    """The tournament's deals (a duplicate deal's two rotations share a seed), by table."""
    with session_scope(url) as session:
        rows = session.execute(
            select(Match.id, Match.seed, Match.table_index).where(Match.id.in_(match_ids)).order_by(Match.id)
        ).all()
    by_seed: dict[int, list[int]] = {}
    for m in sorted(rows, key=lambda r: (r.table_index, r.id)):
        by_seed.setdefault(m.seed, []).append(m.id)
    deals = list(by_seed.values())
    assert [len(d) for d in deals] == [2, 2, 2]  # the fixture: duplicate deals, two rotations each
    return deals


def _live(client: Any, tournament_id: int) -> dict[str, Any]:
    response = client.get(f"/api/v1/tournaments/{tournament_id}/live?html=1")
    assert response.status_code == 200, response.data[:300]
    data: dict[str, Any] = response.get_json()["live"]
    return data


def _linked(html: str) -> set[int]:
    """The match ids an HTML fragment links to."""
    return {int(m) for m in re.findall(r"/matches/(\d+)", html)}


def _section(html: str) -> str:
    start = html.index('id="now-showing-section"')
    return html[start:html.index("</section>", start)]


def test_now_showing_lists_finished_deals_only_and_leaks_nothing_of_a_running_one(
    db_url: str, app_factory: Any
) -> None:
    tournament_id, matches = live_arena(db_url)
    (a1, a2), (b1, b2), (c1, c2) = _deals(db_url, matches)
    client = app_factory(db_url).test_client()
    assert _live(client, tournament_id)["now_showing"] == []

    # Deal A is finished; deal B is being played (one rotation running, the other to come),
    # and deal C has one rotation done and one still to play.
    for match_id in (a1, a2, c1):
        assert play_match_job(match_id, db_url) == "done"
    with session_scope(db_url) as session:
        running_now = update(Match).where(Match.id == b1).values(status=MatchStatus.RUNNING, hands_played=2)
        session.execute(running_now)
        for seat, score in enumerate((-5, 5)):
            session.execute(
                update(MatchSeat).where(MatchSeat.match_id == b1, MatchSeat.seat == seat).values(score=score)
            )

    live = _live(client, tournament_id)
    [deal] = live["now_showing"]
    assert [m["id"] for m in deal["matches"]] == [a1, a2]
    assert all(s["score"] is not None for m in deal["matches"] for s in m["seats"])
    secret = {b1, b2, c1, c2}
    # Nothing of deals B and C in the feed: not its matches, not their scores (the API's and the HTML's).
    feed_html = live["html"]["now_showing"]
    assert _linked(feed_html) == {a1, a2} and "play=1" in feed_html
    assert not secret & {m["id"] for d in live["now_showing"] for m in d["matches"]}
    # The running match: no score, and its row points to the latest finished deal's replay.
    [running] = live["running"]
    assert running["id"] == b1 and running["score_hidden"]
    assert [s["score"] for s in running["seats"]] == [None, None]
    assert f"/matches/{a1}#hand=0&amp;step=0&amp;play=1" in live["html"]["running"]
    assert "watch the latest finished deal" in live["html"]["running"]
    # Why a score waits is said once, under the list, not repeated on each row (issue #40, point 17).
    assert live["html"]["running"].count("score-later-note") == 1
    assert "other rotations" not in live["html"]["running"]
    assert "+5" not in live["html"]["running"] and "\u22125" not in live["html"]["running"]

    # The pages: the tournament's and the home page's "now showing" link to deal A alone.
    page = client.get(f"/tournaments/{tournament_id}").get_data(as_text=True)
    assert _linked(_section(page)) == {a1, a2}
    home = client.get("/").get_data(as_text=True)
    assert _linked(_section(home)) == {a1, a2}
    # ...and so does the home page's poll; no headline yet, it names no hand of any deal.
    arena = client.get("/api/v1/now-showing?html=1").get_json()
    assert [m["id"] for d in arena["now_showing"] for m in d["matches"]] == [a1, a2]
    assert _linked(arena["html"]["now_showing"]) == {a1, a2}
    assert live["headline"] is None and not live["html"]["result"].strip()

    # The running match's page shows no score either.
    page = client.get(f"/matches/{b1}").get_data(as_text=True)
    assert "2 of 6 hands</b>" in page and "+5</span>" not in page and "\u22125</span>" not in page
    assert f"/tournaments/{tournament_id}#now-showing-section" in page
    # Deal C's records stay closed while it plays (what the feed could otherwise point to).
    for match_id in (c1, c2):
        detail = client.get(f"/api/v1/matches/{match_id}").get_json()["match"]
        assert (detail["seed"], detail["replay"]) == (None, False)
        assert client.get(f"/api/v1/matches/{match_id}/steps").status_code == 409
    assert client.get(f"/api/v1/matches/{b1}").get_json()["match"]["seats"][0]["score"] is None
    assert 'id="viewer"' not in client.get(f"/matches/{c1}").get_data(as_text=True)

    # Once C's last rotation is done it lands on top, A below it; B (unfinished) never shows.
    assert play_match_job(c2, db_url) == "done"
    live = _live(client, tournament_id)
    assert [[m["id"] for m in d["matches"]] for d in live["now_showing"]] == [[c1, c2], [a1, a2]]
    assert not {b1, b2} & _linked(live["html"]["now_showing"])
    assert json.dumps(live["now_showing"]).count('"id"') == 4
    # The replay it links to is public now.
    assert client.get(f"/api/v1/matches/{c1}/steps").status_code == 200


def test_a_deal_dealt_independently_is_listed_once_with_all_its_matches(
    db_url: str, app_factory: Any
) -> None:
    """A table dealt independently (a ladder's or an ``auto`` tournament's where a bot keeps
    memory) gives each seat order its own seed. Grouped by seed, such a deal was listed twice,
    or with one of its two matches (issue #40, point 13); a deal is its table and deal index."""
    tournament_id, matches = live_arena(db_url)
    (a1, a2), _, (c1, c2) = _deals(db_url, matches)
    with session_scope(db_url) as session:
        for k, match_id in enumerate(matches):  # each match its own cards, as independent dealing does
            session.execute(update(Match).where(Match.id == match_id).values(seed=1000 + k))
    for match_id in (a1, a2, c1):
        assert play_match_job(match_id, db_url) == "done"
    client = app_factory(db_url).test_client()
    live = _live(client, tournament_id)
    # Deal A once, both its matches; deal C (one seat order still to play) not at all.
    assert [[m["id"] for m in d["matches"]] for d in live["now_showing"]] == [[a1, a2]]
    assert _linked(live["html"]["now_showing"]) == {a1, a2}
    assert play_match_job(c2, db_url) == "done"
    deals = _live(client, tournament_id)["now_showing"]
    assert [[m["id"] for m in d["matches"]] for d in deals] == [[c1, c2], [a1, a2]]
    assert len({(d["table"], d["deal"]) for d in deals}) == 2

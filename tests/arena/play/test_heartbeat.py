"""A tournament as it plays: the worker's heartbeat stamps the running score, and the live
endpoint gives progress, timing, running matches and the page's parts, until "finished"."""

from __future__ import annotations

import time
from typing import Any

import pytest
from helpers.dashboard_fixtures import live_arena
from sqlalchemy import select

from arena.play.heartbeat import Heartbeat
from arena.play.lifecycle import MatchLife
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import Match, MatchSeat
from dashboard import create_app


def live(client: Any, tournament_id: int, html: bool = False) -> dict[str, Any]:
    response = client.get(f"/api/v1/tournaments/{tournament_id}/live" + ("?html=1" if html else ""))
    assert response.status_code == 200, response.data[:300]
    data: dict[str, Any] = response.get_json()["live"]
    return data


def test_the_heartbeat_stamps_hands_and_the_running_score(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tournament, matches = live_arena(sqlite_url)
    with session_scope(sqlite_url) as session:
        assert MatchLife(sqlite_url, matches[0], "w1").claim(session) is None
    monkeypatch.setattr("arena.play.heartbeat.HEARTBEAT_S", 0.05)
    beat = Heartbeat(sqlite_url, matches[0], "w1")
    beat.on_hand(None, [4, -4])  # type: ignore[arg-type]  # the log is not read
    beat.on_hand(None, [3, -3])  # type: ignore[arg-type]
    beat.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with session_scope(sqlite_url) as session:
                scores = list(session.scalars(
                    select(MatchSeat.score).where(MatchSeat.match_id == matches[0]).order_by(MatchSeat.seat)
                ))
                played = session.scalar(select(Match.hands_played).where(Match.id == matches[0]))
            if scores == [3, -3]:
                break
            time.sleep(0.05)
    finally:
        beat.stop()
    assert scores == [3, -3] and played == 2


def test_live_endpoint_from_start_to_finished(sqlite_url: str) -> None:
    tournament_id, matches = live_arena(sqlite_url)
    app = create_app({"DATABASE_URL": sqlite_url, "TESTING": True, "CACHE_REFRESH_SECONDS": 0,
                      "CACHE_STALE_OK": False})
    client = app.test_client()
    first = live(client, tournament_id)
    assert first["status"] == "running" and first["standings"] == [] and first["running"] == []
    assert first["timing"]["elapsed_s"] == 0 and first["timing"]["eta_s"] is None
    assert play_match_job(matches[0], sqlite_url) == "done"
    middle = live(client, tournament_id, html=True)
    assert [s["matches"] for s in middle["standings"]] == [1, 1]
    assert middle["timing"]["hands_per_min"] and middle["timing"]["eta_s"] is not None
    assert 'table class="standings"' in middle["html"]["standings"]
    assert "Time left" in middle["html"]["timing"]
    for match_id in matches[1:]:
        assert play_match_job(match_id, sqlite_url) == "done"
    end = live(client, tournament_id, html=True)
    assert end["status"] == "finished" and end["timing"]["finished"] and end["timing"]["eta_s"] == 0
    assert "finished" in end["html"]["timing"] and end["progress"]["percent"] == 100.0
    assert sum(s["chips"] for s in end["standings"]) == 0
    assert client.get("/api/v1/tournaments/999999/live").status_code == 404
    assert client.get(f"/api/v1/tournaments/{tournament_id}/live?html=2").status_code == 400


def test_a_match_being_played_shows_hands_and_score_so_far(sqlite_url: str) -> None:
    from sqlalchemy import update

    _tournament, matches = live_arena(sqlite_url)
    with session_scope(sqlite_url) as session:
        rows = session.execute(select(Match.id, Match.table_index).where(Match.id.in_(matches))).all()
        table = {m: t for m, t in rows}
        playing = matches[1]
        sibling = next(m for m in matches if table[m] == table[playing] and m != playing)
        session.execute(update(Match).where(Match.id == playing).values(status="running", hands_played=2))
        for seat, score in enumerate((-5, 5)):
            session.execute(update(MatchSeat).where(MatchSeat.match_id == playing, MatchSeat.seat == seat)
                            .values(score=score))
    client = create_app({"DATABASE_URL": sqlite_url, "TESTING": True}).test_client()
    # The other rotation of its deal (the same cards) is still to play: no score yet.
    html = client.get(f"/matches/{playing}").data.decode()
    assert "2 of 6 hands</b>" in html and "+5</span>" not in html
    assert "shown when the other rotations of its deal are done" in html
    assert live(client, _tournament)["running"][0]["seats"][0]["score"] is None
    assert play_match_job(sibling, sqlite_url) == "done"
    html = client.get(f"/matches/{playing}").data.decode()
    assert "2 of 6 hands</b>" in html and "\u22125</span>" in html and "+5</span>" in html
    assert 'id="viewer"' not in html  # still no replay
    assert [s["score"] for s in live(client, _tournament)["running"][0]["seats"]] == [-5, 5]
    pending = next(m for m in matches if m not in (playing, sibling))
    assert "Being played" not in client.get(f"/matches/{pending}").data.decode()

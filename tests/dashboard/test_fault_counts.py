"""Charged faults and uncharged slow lifecycle notices, apart and with the same counts on
every page and in the API (issue #27: a bot page showed "Faults 27" in warning orange for
notices the leaderboard rightly counted as 0 faults)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Flask
from sqlalchemy import select

from arena.bots.owners import get_or_create_operator
from arena.bots.registry import host_bot
from arena.config import Settings
from arena.runtime.jobs import play_match_job
from arena.store.db import session_scope
from arena.store.models import SLOW_NOTICE_KIND, FaultRecord, Match
from arena.tournaments.lifecycle import create_tournament, start_tournament


def _played(url: str) -> None:
    """Two matches of a bot that crashes now and then and is slow to take EndMatch, under a
    20 ms lifecycle deadline: its 50 ms EndMatch is a slow notice in every match."""
    with session_scope(url) as session:
        house = get_or_create_operator(session, "house")
        ids = [
            host_bot(session, house, "dawdler", "helpers.dashboard_fixtures:SlowNoticeBot", check=False).id,
            host_bot(session, house, "random", "bots.random_bot:RandomBot", check=False).id,
        ]
        t = create_tournament(
            session, name="Notice Cup", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=6,
            seed=20270101, settings=Settings(database_url=url), config={"lifecycle_deadline_ms": 20},
        )
        start_tournament(session, t.id)
        matches = list(session.scalars(select(Match.id).where(Match.tournament_id == t.id)))
    for match_id in matches:
        assert play_match_job(match_id, url) == "done"


def test_charged_faults_and_slow_notices_are_counted_apart_everywhere(
    writable_url: str, app_factory: Callable[..., Flask]
) -> None:
    _played(writable_url)
    with session_scope(writable_url) as session:
        kinds = list(session.scalars(select(FaultRecord.kind)))
    notices = kinds.count(SLOW_NOTICE_KIND)
    charged = len(kinds) - notices
    assert notices >= 2 and charged > 0, kinds  # both kinds on the record

    client = app_factory(writable_url).test_client()

    def get(url: str) -> Any:
        response = client.get(url)
        assert response.status_code == 200, (url, response.data[:300])
        return response.get_json() if response.mimetype == "application/json" else response.get_data(True)

    bot = get("/api/v1/bots/dawdler")["bot"]
    assert bot["faults"]["total"] == charged == bot["record"]["faults"]
    assert SLOW_NOTICE_KIND not in bot["faults"]["by_kind"]
    assert all(f["kind"] != SLOW_NOTICE_KIND for f in bot["faults"]["recent"])
    assert bot["notices"]["total"] == notices and bot["notices"]["charged"] is False
    assert {f["kind"] for f in bot["notices"]["recent"]} == {SLOW_NOTICE_KIND}
    row = next(r for r in get("/api/v1/leaderboard")["leaderboard"] if r["bot"] == "dawdler")
    assert row["faults"] == charged

    match_ids = {f["match"] for f in bot["notices"]["recent"]}
    seen_faults = seen_notices = 0
    for match_id in match_ids:
        match = get(f"/api/v1/matches/{match_id}")["match"]
        assert len(match["fault_records"]) == match["faults"] == sum(s["faults"] for s in match["seats"])
        assert {f["kind"] for f in match["notice_records"]} == {SLOW_NOTICE_KIND}
        seen_faults += match["faults"]
        seen_notices += len(match["notice_records"])
        html = get(f"/matches/{match_id}")
        assert f"{len(match['notice_records'])} notice" in html and "not charged" in html
    assert (seen_faults, seen_notices) == (charged, notices)

    html = get("/bots/dawdler")
    for label, count in (("Faults (charged)", charged), ("Notices (not charged)", notices)):
        label_html = f'<span class="label">{re.escape(label)}</span>'
        stat = re.search(label_html + r'<span class="value">(\d+)</span>', html)
        assert stat and int(stat.group(1)) == count, label
    assert "a busy host" in html

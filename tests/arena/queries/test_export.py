"""Exports of hands as tonk-hand/1 JSON lines (arena/queries/export.py): streamed by the API and
written by ``tonk export``, every line verified by ``tonk record verify``, and only hands of
finished deals (every seat rotation done)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from arena.store.db import session_scope
from arena.store.models import Bot, Match, MatchSeat
from sdk.cli import main
from sdk.record import HandRecord

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded


def lines_of(client: FlaskClient, url: str) -> list[dict[str, Any]]:
    response = client.get(url)
    assert response.status_code == 200, response.data[:300]
    assert response.is_streamed and response.mimetype == "application/x-ndjson"
    assert response.headers["Content-Disposition"].startswith("attachment; filename=")
    return [json.loads(line) for line in response.data.decode().splitlines()]


def done_hands(url: str, tournament_id: int | None = None, bot: str | None = None) -> int:
    with session_scope(url) as session:
        query = select(Match.hands_played).where(Match.status == "done")
        if tournament_id is not None:
            query = query.where(Match.tournament_id == tournament_id)
        if bot is not None:
            mine = select(MatchSeat.match_id).join(Bot, Bot.id == MatchSeat.bot_id).where(Bot.name == bot)
            query = query.where(Match.id.in_(mine))
        return sum(session.scalars(query))


def test_a_finished_tournament_exports_every_hand_as_verified_records(
    client: FlaskClient, seeded: Seeded
) -> None:
    spring = seeded.tournaments["spring"]
    records = lines_of(client, f"/api/v1/tournaments/{spring}/hands")
    assert len(records) == done_hands(seeded.url, spring) > 0
    keys = [(r["arena"]["match"], r["arena"]["hand"]) for r in records]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for record in records:
        assert record["format"] == "tonk-hand/1" and "latency_us" not in record and "faults" not in record
        assert record["arena"]["tournament"] == spring
        HandRecord.from_json(record).verify()
    assert any(r["outcome"]["end"] == "fault" for r in records)


def test_only_finished_deals_are_exported(client: FlaskClient, seeded: Seeded) -> None:
    # Summer Cup has one done match, but the other rotation of its deal is still to play.
    summer = seeded.tournaments["summer"]
    assert done_hands(seeded.url, summer) > 0
    assert lines_of(client, f"/api/v1/tournaments/{summer}/hands") == []
    records = lines_of(client, "/api/v1/bots/lowball/hands")
    assert records and all("lowball" in r["players"] for r in records)
    assert summer not in {r["arena"]["tournament"] for r in records}
    # Nor does the bot page offer it among the recent matches to watch.
    with session_scope(seeded.url) as session:
        unfinished_deal = session.scalars(
            select(Match.id).where(Match.tournament_id == summer, Match.status == "done")
        ).all()
    html = client.get("/bots/lowball").data.decode()
    assert 'class="recent-matches"' in html
    assert not any(f'href="/matches/{m}"' in html for m in unfinished_deal)
    finished = done_hands(seeded.url, seeded.tournaments["spring"], "lowball")
    finished += done_hands(seeded.url, seeded.tournaments["winter"], "lowball")
    assert len(records) == finished


def test_export_of_nothing_there(client: FlaskClient, seeded: Seeded) -> None:
    for url, status in (("/api/v1/tournaments/999999/hands", 404), ("/api/v1/bots/nobody/hands", 404),
                        ("/api/v1/bots/bad%20name!/hands", 400)):
        response = client.get(url)
        assert response.status_code == status and response.get_json()["error"]["message"]


def test_tonk_export_writes_what_tonk_record_verify_accepts(
    seeded: Seeded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "winter.jsonl"
    winter = seeded.tournaments["winter"]
    assert main(["export", "--tournament", str(winter), "--database-url", seeded.url, "-o", str(out)]) == 0
    count = done_hands(seeded.url, winter)
    assert f"{count} hands" in capsys.readouterr().err
    assert main(["record", "verify", str(out)]) == 0
    verified = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(verified) == count and [v["line"] for v in verified] == list(range(1, count + 1))
    assert all("outcome" in v for v in verified)
    # To standard output, by bot; and a clear refusal for a bot that does not exist.
    assert main(["export", "--bot", "flaky", "--database-url", seeded.url]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 0
    assert main(["export", "--bot", "nobody", "--database-url", seeded.url]) == 1
    assert "there is no bot named 'nobody'" in capsys.readouterr().err
    # A tampered line fails verification, and says which line.
    lines = out.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["outcome"]["payoffs"] = [p + 1 if i == 0 else p - 1 if i == 1 else p
                                 for i, p in enumerate(bad["outcome"]["payoffs"])]
    lines[1] = json.dumps(bad)
    out.write_text("\n".join(lines) + "\n")
    assert main(["record", "verify", str(out)]) == 1
    errors = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"error"' in line]
    assert [e["line"] for e in errors] == [2]

"""The spectator's API on SQLite and PostgreSQL: a replay's steps (computed by the engine),
refused before a match is done."""

from __future__ import annotations

import gzip
import json
from typing import TYPE_CHECKING, Any

import pytest
from flask.testing import FlaskClient

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded


def get_json(client: FlaskClient, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.data[:300])
    assert response.mimetype == "application/json"
    return response.get_json()


def test_steps_of_a_done_match(client: FlaskClient, seeded: Seeded) -> None:
    replay = get_json(client, f"/api/v1/matches/{seeded.fault_match}/replay")["hands"]
    data = get_json(client, f"/api/v1/matches/{seeded.fault_match}/steps")
    assert data["match"] == seeded.fault_match and len(data["hands"]) == len(replay)
    running = [0] * len(replay[0]["players"])
    for hand, log in zip(data["hands"], replay, strict=True):
        assert hand["outcome"] == log["outcome"] and hand["score_before"] == running
        assert len(hand["steps"]) == len(log["actions"]) + 1 + bool(log.get("faults"))
        assert hand["steps"][-1]["outcome"] == log["outcome"]
        running = [a + b for a, b in zip(running, log["outcome"]["payoffs"], strict=True)]
    assert any(h["steps"][-1]["event"]["kind"] == "fault" for h in data["hands"])
    # Gzipped for a client that takes it (as browsers do), and the same data.
    packed = client.get(f"/api/v1/matches/{seeded.fault_match}/steps", headers={"Accept-Encoding": "gzip"})
    assert packed.headers["Content-Encoding"] == "gzip" and packed.headers["Vary"] == "Accept-Encoding"
    assert json.loads(gzip.decompress(packed.data)) == data and len(packed.data) * 4 < len(json.dumps(data))


@pytest.mark.parametrize("which", ["pending_match", "running_match", "failed_match"])
def test_no_steps_before_done(client: FlaskClient, seeded: Seeded, which: str) -> None:
    body = get_json(client, f"/api/v1/matches/{getattr(seeded, which)}/steps", 409)
    assert body["error"]["code"] == "not_finished"
    assert get_json(client, "/api/v1/matches/999999/steps", 404)["error"]["message"]

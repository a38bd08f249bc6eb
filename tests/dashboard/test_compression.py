"""Pages and JSON are gzipped for clients that accept it (the charts' four widths cost little
then), never for a request carrying a token (BREACH), and never twice."""

from __future__ import annotations

import gzip
from typing import TYPE_CHECKING

from flask.testing import FlaskClient

if TYPE_CHECKING:
    from helpers.dashboard_fixtures import Seeded

GZIP = {"Accept-Encoding": "gzip, deflate"}


def test_a_page_is_gzipped_to_the_same_html_when_the_client_accepts_it(client: FlaskClient) -> None:
    plain = client.get("/")
    packed = client.get("/", headers=GZIP)
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed.headers["Vary"] and "Accept-Encoding" in plain.headers["Vary"]
    html = gzip.decompress(packed.data)
    assert html == plain.data
    assert len(packed.data) * 4 < len(plain.data), (len(packed.data), len(plain.data))
    print(f"leaderboard page: {len(plain.data)} bytes, gzipped {len(packed.data)}")


def test_json_is_gzipped_too(client: FlaskClient) -> None:
    packed = client.get("/api/v1/leaderboard", headers=GZIP)
    assert packed.headers.get("Content-Encoding") == "gzip"
    assert gzip.decompress(packed.data) == client.get("/api/v1/leaderboard").data


def test_a_request_with_a_token_is_never_compressed(client: FlaskClient, seeded: Seeded) -> None:
    auth = {**GZIP, "Authorization": f"Bearer {seeded.alice_token}"}
    response = client.get("/api/v1/bots/lowball", headers=auth)
    assert response.status_code == 200
    assert "Content-Encoding" not in response.headers
    assert response.get_json()["bot"]["name"] == "lowball"


def test_small_bodies_errors_and_pre_gzipped_steps_are_left_as_they_are(client: FlaskClient) -> None:
    assert "Content-Encoding" not in client.get("/healthz", headers=GZIP).headers
    missing = client.get("/bots/no-such-bot", headers=GZIP)
    assert missing.status_code == 404 and "Content-Encoding" not in missing.headers
    static = client.get("/static/css/site.css", headers=GZIP)
    assert static.status_code == 200 and "Content-Encoding" not in static.headers
    static.close()

"""The invite and own-token routes of the JSON API on a fresh store (SQLite and PostgreSQL):
operators make, list and revoke invites; anyone redeems one into an owner; an owner rotates
their own token. Every refusal answers its own code and changes nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from helpers.dashboard_fixtures import OPERATOR_TOKEN
from sqlalchemy import func, select, update

from arena.bots.owners import create_owner
from arena.store.db import session_scope
from arena.store.models import Invite, Owner
from dashboard.ratelimit import RateLimiter, TooManyAttemptsError

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}


@pytest.fixture
def app(app_factory: Callable[..., Flask], writable_url: str) -> Flask:
    return app_factory(writable_url, JOIN_RATE_LIMIT=(1000, 60.0))  # its own test below


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def works(client: FlaskClient, token: str) -> bool:
    """Whether ``token`` authenticates (retiring a bot nobody has: 404 past the check, 401 not)."""
    status = client.delete("/api/v1/bots/nobody", headers=bearer(token)).status_code
    assert status in (401, 404)
    return status == 404


def make(client: FlaskClient, **body: Any) -> dict[str, Any]:
    answer = client.post("/api/v1/invites", json=body, headers=OPERATOR)
    assert answer.status_code == 201, answer.get_json()
    invite: dict[str, Any] = answer.get_json()["invite"]
    return invite


def join(client: FlaskClient, code: object, name: object) -> tuple[int, dict[str, Any]]:
    answer = client.post("/api/v1/owners", json={"invite": code, "name": name})
    return answer.status_code, answer.get_json()


def owners(url: str) -> list[str]:
    with session_scope(url) as session:
        return sorted(session.scalars(select(Owner.name)))


def test_operators_make_list_and_revoke_invites(client: FlaskClient, writable_url: str) -> None:
    invite = make(client, uses=3, expires="2d", note="spring workshop")
    assert invite["code"].startswith("tonki_")
    assert invite["status"] == "active" and (invite["uses_left"], invite["uses_total"]) == (3, 3)
    assert invite["note"] == "spring workshop" and invite["created_by"] == "operator"
    assert invite["joined"] == 0
    default = make(client)  # an empty body: one use, seven days
    assert default["uses_total"] == 1
    expires = dt.datetime.fromisoformat(default["expires_at"])
    assert dt.timedelta(days=6) < expires - dt.datetime.now(dt.UTC) <= dt.timedelta(days=7)

    listed = client.get("/api/v1/invites", headers=OPERATOR).get_json()["invites"]
    assert [i["id"] for i in listed] == [default["id"], invite["id"]]
    assert all("code" not in i for i in listed)
    with session_scope(writable_url) as session:
        hashes = session.scalars(select(Invite.code_hash)).all()
        assert invite["code"] not in hashes and default["code"] not in hashes

    revoked = client.delete(f"/api/v1/invites/{invite['id']}", headers=OPERATOR).get_json()["invite"]
    assert revoked["status"] == "revoked" and revoked["revoked_at"]
    status, body = join(client, invite["code"], "alice")
    assert (status, body["error"]["code"]) == (410, "invite_revoked")
    assert client.delete("/api/v1/invites/999", headers=OPERATOR).status_code == 404


def test_only_operators_touch_invites(client: FlaskClient, writable_url: str) -> None:
    with session_scope(writable_url) as session:
        _, token = create_owner(session, "alice")
    for method, path in (
        ("post", "/api/v1/invites"),
        ("get", "/api/v1/invites"),
        ("delete", "/api/v1/invites/1"),
    ):
        assert getattr(client, method)(path, json={}).status_code == 401
        answer = getattr(client, method)(path, json={}, headers=bearer(token))
        assert (answer.status_code, answer.get_json()["error"]["code"]) == (403, "forbidden")
    with session_scope(writable_url) as session:
        assert session.scalar(select(func.count()).select_from(Invite)) == 0


@pytest.mark.parametrize(
    ("body", "quoted"),
    [({"uses": 0}, "uses 0"), ({"uses": 1001}, "1 to 1000"), ({"uses": "2"}, "uses '2'"),
     ({"expires": "1y"}, "'1y'"), ({"expires": "120d"}, "90 days"), ({"note": 5}, "note")],
)  # fmt: skip
def test_bad_invite_options_are_refused_and_quoted(
    client: FlaskClient, body: dict[str, Any], quoted: str
) -> None:
    answer = client.post("/api/v1/invites", json=body, headers=OPERATOR)
    error = answer.get_json()["error"]
    assert (answer.status_code, error["code"]) == (400, "invalid_invite_options")
    assert quoted in error["message"]
    assert client.get("/api/v1/invites", headers=OPERATOR).get_json()["invites"] == []


def test_a_newcomer_joins_and_uses_and_rotates_their_token(client: FlaskClient, writable_url: str) -> None:
    invite = make(client, uses=2)
    status, body = join(client, invite["code"], "alice")
    assert status == 201, body
    assert body["owner"]["name"] == "alice" and body["owner"]["operator"] is False
    token = body["token"]
    assert token.startswith("tonk_")
    assert works(client, token)
    assert client.post("/api/v1/invites", json={}, headers=bearer(token)).status_code == 403

    rotated = client.post("/api/v1/owners/me/token", headers=bearer(token))
    assert rotated.status_code == 200
    new = rotated.get_json()["token"]
    assert new != token and rotated.get_json()["owner"]["name"] == "alice"
    old = client.post("/api/v1/owners/me/token", headers=bearer(token))
    assert (old.status_code, old.get_json()["error"]["code"]) == (401, "unauthenticated")
    assert works(client, new) and not works(client, token)
    listed = client.get("/api/v1/invites", headers=OPERATOR).get_json()["invites"]
    assert (listed[0]["uses_left"], listed[0]["joined"]) == (1, 1)


def test_the_environments_operator_token_is_not_rotated_here(client: FlaskClient) -> None:
    answer = client.post("/api/v1/owners/me/token", headers=OPERATOR)
    assert answer.status_code == 403 and "TONK_OPERATOR_TOKEN" in answer.get_json()["error"]["message"]
    assert client.post("/api/v1/owners/me/token").status_code == 401


def test_each_refusal_has_its_code_and_changes_nothing(client: FlaskClient, writable_url: str) -> None:
    single = make(client)
    expired = make(client, uses=5)
    with session_scope(writable_url) as session:
        past = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        session.execute(update(Invite).where(Invite.id == expired["id"]).values(expires_at=past))
        create_owner(session, "taken")
    forged = single["code"][:-1] + ("A" if single["code"][-1] != "A" else "B")
    cases = [
        (single["code"], "taken", 409, "owner_name_taken"),  # the use is not spent
        (single["code"], "bad name!", 400, "invalid_owner_name"),
        (forged, "mallory", 404, "invite_not_found"),
        ("tonki_" + "x" * 43, "mallory", 404, "invite_not_found"),
        ("tonk_not-an-invite", "mallory", 400, "invalid_invite"),
        (None, "mallory", 400, "invalid_invite"),
        (expired["code"], "mallory", 410, "invite_expired"),
    ]
    for code, name, status, error in cases:
        got, body = join(client, code, name)
        assert (got, body["error"]["code"]) == (status, error), (code, name, body)
    assert owners(writable_url) == ["operator", "taken"]
    assert join(client, single["code"], "alice")[0] == 201
    replayed = join(client, single["code"], "mallory")
    assert (replayed[0], replayed[1]["error"]["code"]) == (410, "invite_used_up")
    assert owners(writable_url) == ["alice", "operator", "taken"]
    for body in ({"invite": single["code"]}, {"invite": single["code"], "name": "x" * 201}, [1]):
        answer = client.post("/api/v1/owners", json=body)
        assert answer.status_code == 400
    assert client.post("/api/v1/owners", data="{", content_type="application/json").status_code == 400


def test_redemptions_are_bounded_per_client_address(
    app_factory: Callable[..., Flask], sqlite_url: str
) -> None:
    client = app_factory(sqlite_url, JOIN_RATE_LIMIT=(3, 3600.0)).test_client()
    for _ in range(3):
        assert join(client, "tonki_" + "x" * 43, "mallory")[0] == 404
    answer = client.post("/api/v1/owners", json={"invite": "tonki_" + "x" * 43, "name": "mallory"})
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (429, "too_many_requests")
    assert 3500 <= int(answer.headers["Retry-After"]) <= 3601
    other = client.post(
        "/api/v1/owners",
        json={"invite": "tonki_" + "x" * 43, "name": "m"},
        environ_base={"REMOTE_ADDR": "10.0.0.2"},
    )
    assert other.status_code == 400  # another address has its own bound (and 'm' is too short)


def test_the_limiter_forgets_old_attempts_and_bounds_its_memory() -> None:
    limiter = RateLimiter(2, 10.0)
    limiter.hit("a", 0.0)
    limiter.hit("a", 1.0)
    with pytest.raises(TooManyAttemptsError) as caught:
        limiter.hit("a", 5.0)
    assert caught.value.retry_after == 6
    limiter.hit("a", 10.5)  # the first attempt is out of the window
    for i in range(10_050):
        limiter.hit(f"client{i}", 20.0 + i / 1000)
    assert len(limiter._seen) <= 10_001
    with pytest.raises(ValueError, match="attempts"):
        RateLimiter(0, 1.0)

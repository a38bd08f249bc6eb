"""Signing in on the dashboard and an owner's own page (dashboard/signin.py,
dashboard/views/account.py), on SQLite and PostgreSQL: sign in with a token or from an invite,
the cookie's attributes, CSRF, forged, expired and outdated sessions, the upload form, and
nothing of another owner's shown. Every refusal says why and changes nothing."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import itsdangerous
import pytest
from flask import Flask
from flask.testing import FlaskClient
from helpers.archives import project, tar_gz
from helpers.dashboard_fixtures import OPERATOR_TOKEN
from sqlalchemy import func, select

from arena.bots.owners import create_owner, rotate_token
from arena.bots.uploaded import submit_upload
from arena.config import Settings
from arena.store.db import session_scope
from arena.store.models import Bot, Invite, Owner
from arena.tournaments.lifecycle import create_tournament

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture
def arena(app_factory: Callable[..., Flask], writable_url: str, tmp_path: Path) -> dict[str, Any]:
    """An app on a fresh store with owners alice and bob, each with an uploaded bot."""
    settings = Settings(data_dir=str(tmp_path), database_url=writable_url)
    app = app_factory(writable_url, SETTINGS=settings, JOIN_RATE_LIMIT=(1000, 60.0))
    tokens = {}
    with session_scope(writable_url) as session:
        for name in ("alice", "bob"):
            owner, tokens[name] = create_owner(session, name)
            submit_upload(session, owner, f"{name}-bot", tar_gz(project()), settings=settings, check=False)
    return {"app": app, "url": writable_url, **tokens}


def owner_id_of(session: Any, name: str) -> int:
    return int(session.scalar(select(Owner.id).where(Owner.name == name)))


def csrf_of(client: FlaskClient, path: str) -> str:
    found = CSRF.search(client.get(path).get_data(as_text=True))
    assert found, f"no CSRF field on {path}"
    return found.group(1)


def sign_in(client: FlaskClient, token: str) -> Any:
    return client.post("/signin", data={"csrf": csrf_of(client, "/signin"), "token": token})


def cookie(client: FlaskClient) -> str | None:
    found = client.get_cookie("tonk_session")
    return None if found is None else found.value


def test_an_owner_signs_in_sees_their_own_and_signs_out(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    assert client.get("/me").headers["Location"].endswith("/signin")  # signed out: sent to sign in
    answer = sign_in(client, arena["alice"])
    assert answer.status_code == 303 and answer.headers["Location"].endswith("/me")
    head = next(h for k, h in answer.headers.items() if k == "Set-Cookie" and "tonk_session=" in h)
    for attribute in ("HttpOnly", "SameSite=Lax", "Expires=", "Path=/"):
        assert attribute in head, head
    assert arena["alice"] not in head  # the cookie never carries the token

    with session_scope(arena["url"]) as session:  # a test alice started, and one of nobody's
        bots = list(session.scalars(select(Bot.id).order_by(Bot.id)))
        for owner_id, name in ((owner_id_of(session, "alice"), "alice's test"), (None, "an operator's")):
            made = create_tournament(session, name=name, bot_ids=bots, table_sizes=[2], deals_per_table=1,
                                     hands_per_match=2)  # fmt: skip
            made.owner_id = owner_id
    page = client.get("/me")
    text = page.get_data(as_text=True)
    assert "alice&#39;s test" in text and "an operator" not in text
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert page.mimetype == "text/html"
    assert 'data-bot="alice-bot"' in text and "bob-bot" not in text
    assert "My page" in client.get("/").get_data(as_text=True)  # the header greets the owner

    # Their own uploaded bot's page shows its build; another owner's shows only the note.
    assert "Build log" in client.get("/bots/alice-bot").get_data(as_text=True)
    assert "Build log" not in client.get("/bots/bob-bot").get_data(as_text=True)

    out = client.post("/signout", data={"csrf": csrf_of(client, "/me")})
    assert out.status_code == 303
    assert client.get("/me").status_code == 302
    assert "Build log" not in client.get("/bots/alice-bot").get_data(as_text=True)


def test_a_wrong_token_is_refused_and_signs_nobody_in(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    for token, said in (("tonk_" + "x" * 43, "invalid API token"), ("", "owner token is required"),
                        ("tonk_" + "y" * 300, "longer than 200")):  # fmt: skip
        answer = sign_in(client, token)
        assert answer.status_code in (400, 401)
        assert said in answer.get_data(as_text=True)
        assert client.get("/me").status_code == 302


def test_forms_without_this_sessions_csrf_token_are_refused(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    csrf_of(client, "/signin")
    for data in ({"token": arena["alice"]}, {"token": arena["alice"], "csrf": "forged"}):
        answer = client.post("/signin", data=data)
        assert answer.status_code == 400 and "reload the page" in answer.get_data(as_text=True)
        assert client.get("/me").status_code == 302
    # A token from another session (another browser's page) is worth nothing here.
    other = arena["app"].test_client()
    elsewhere = {"csrf": csrf_of(other, "/signin"), "token": arena["alice"]}
    assert client.post("/signin", data=elsewhere).status_code == 400

    # Signing in gives the session a new token: one planted before it no longer signs out.
    planted = csrf_of(client, "/signin")
    assert sign_in(client, arena["alice"]).status_code == 303
    assert client.post("/signout", data={"csrf": planted}).status_code == 400
    assert client.get("/me").status_code == 200  # still signed in


def test_forged_and_expired_sessions_are_signed_out(
    arena: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    app: Flask = arena["app"]
    client = app.test_client()
    sign_in(client, arena["alice"])
    good = cookie(client)
    assert good is not None
    with session_scope(arena["url"]) as session:
        bob = session.scalars(select(Owner).where(Owner.name == "bob")).one()
        bob_id = bob.id

    # The same content signed with another key, and the real one with bob's id swapped in.
    ours = app.session_interface.get_signing_serializer(app)  # type: ignore[attr-defined]
    assert ours is not None
    payload = ours.loads(good)
    forged = itsdangerous.URLSafeTimedSerializer(
        "not-our-key",
        salt="cookie-session",
        signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha1},
    )
    tampered = {**payload, "owner": bob_id, "name": "bob"}
    for value in (forged.dumps(payload), good[:-4] + "AAAA", ours.dumps(tampered)[:-2] + "zz"):
        fresh = app.test_client()
        fresh.set_cookie("tonk_session", value)
        assert fresh.get("/me").status_code == 302, value
        assert "Build log" not in fresh.get("/bots/bob-bot").get_data(as_text=True)

    # Past its lifetime (TONK_SESSION_HOURS) a session is refused as Flask reads it.
    eight_days_ago = int(time.time()) - 8 * 24 * 3600
    monkeypatch.setattr(itsdangerous.TimestampSigner, "get_timestamp", lambda self: eight_days_ago)
    old = ours.dumps(payload)
    monkeypatch.undo()
    stale = app.test_client()
    stale.set_cookie("tonk_session", old)
    assert stale.get("/me").status_code == 302
    # The same content signed now is accepted: what ended the session was its age.
    fresh = app.test_client()
    fresh.set_cookie("tonk_session", ours.dumps(payload))
    assert fresh.get("/me").status_code == 200


def test_a_rotated_token_ends_the_sessions_it_opened(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    sign_in(client, arena["alice"])
    assert client.get("/me").status_code == 200
    with session_scope(arena["url"]) as session:
        rotate_token(session, session.scalars(select(Owner).where(Owner.name == "alice")).one())
    assert client.get("/me").status_code == 302
    assert cookie(client) in (None, "")  # and the cookie is cleared, not kept


def test_the_operator_signs_in_and_a_changed_operator_token_ends_it(
    arena: dict[str, Any], app_factory: Callable[..., Flask]
) -> None:
    app: Flask = arena["app"]
    client = app.test_client()
    sign_in(client, OPERATOR_TOKEN)
    assert "operator" in client.get("/me").get_data(as_text=True)
    moved = app_factory(arena["url"], SECRET_KEY=app.config["SECRET_KEY"], OPERATOR_TOKEN="another-token")
    other = moved.test_client()
    other.set_cookie("tonk_session", cookie(client) or "")
    assert other.get("/me").status_code == 302


def test_the_api_takes_tokens_only_never_the_cookie(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    sign_in(client, arena["alice"])
    # A write another site's page could forge with the browser's cookie: refused.
    answer = client.delete("/api/v1/bots/alice-bot")
    assert answer.status_code == 401 and answer.get_json()["error"]["code"] == "unauthenticated"
    assert client.get("/api/v1/bots/alice-bot/logs").status_code == 404  # the cookie shows nothing
    with session_scope(arena["url"]) as session:
        assert session.scalar(select(Bot.status).where(Bot.name == "alice-bot")) == "active"


def invite(client: FlaskClient) -> str:
    answer = client.post("/api/v1/invites", json={"uses": 1}, headers=OPERATOR)
    assert answer.status_code == 201
    code: str = answer.get_json()["invite"]["code"]
    return code


def owner_count(url: str) -> int:
    with session_scope(url) as session:
        return int(session.scalar(select(func.count()).select_from(Owner)) or 0)


def test_a_newcomer_joins_from_an_invite_and_is_signed_in(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    code = invite(client)
    form = client.get(f"/join?code={code}").get_data(as_text=True)
    assert f'value="{code}"' in form  # an invite link fills the code in
    before = owner_count(arena["url"])

    # Refusals first: each says why, creates nobody and spends no use.
    for data, status, said in (
        ({"code": code, "name": "x"}, 400, "is not valid"),
        ({"code": code, "name": "alice"}, 409, "already taken"),
        ({"code": "tonki_" + "z" * 43, "name": "carol"}, 404, "no such invite"),
        ({"code": code, "name": "carol", "csrf": "stale"}, 400, "reload the page"),
    ):
        data = {"csrf": csrf_of(client, "/join"), **data}
        answer = client.post("/join", data=data)
        assert answer.status_code == status and said in answer.get_data(as_text=True), data
        assert owner_count(arena["url"]) == before
    with session_scope(arena["url"]) as session:
        assert session.scalar(select(Invite.uses_left)) == 1

    page = client.post("/join", data={"csrf": csrf_of(client, "/join"), "code": code, "name": "carol"})
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    token = re.search(r"<code class=\"token\" data-token>([^<]+)</code>", text)
    assert token is not None
    # The token shown works on the API, and the newcomer is signed in already.
    shown = {"Authorization": f"Bearer {token.group(1)}"}
    assert client.delete("/api/v1/bots/nobody", headers=shown).status_code == 404
    assert "carol" in client.get("/me").get_data(as_text=True)
    # The invite is spent: a second newcomer with it is refused.
    again = arena["app"].test_client()
    answer = again.post("/join", data={"csrf": csrf_of(again, "/join"), "code": code, "name": "dave"})
    assert answer.status_code == 410 and owner_count(arena["url"]) == before + 1


def test_sign_in_attempts_are_bounded_per_address(
    app_factory: Callable[..., Flask], writable_url: str
) -> None:
    client = app_factory(writable_url, JOIN_RATE_LIMIT=(3, 60.0)).test_client()
    codes = [sign_in(client, "tonk_" + "x" * 43).status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]


def upload(client: FlaskClient, *, csrf: str | None = None, **fields: Any) -> Any:
    from io import BytesIO

    data: dict[str, Any] = {"csrf": csrf or csrf_of(client, "/me"), "mode": "new", **fields}
    if isinstance(data.get("archive"), bytes):
        data["archive"] = (BytesIO(data["archive"]), "bot.tar.gz")
    return client.post("/me/upload", data=data, content_type="multipart/form-data")


def test_an_owner_uploads_a_bot_and_a_version_from_their_page(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    sign_in(client, arena["alice"])
    answer = upload(client, bot="alice-two", archive=tar_gz(project()))
    assert answer.status_code == 303 and answer.headers["Location"].endswith("/bots/alice-two")
    assert 'data-bot="alice-two"' in client.get("/me").get_data(as_text=True)
    changed = project({"tiny_bot.py": project()["tiny_bot.py"] + b"\n# v2\n"})
    assert upload(client, bot="alice-two", mode="version", archive=tar_gz(changed)).status_code == 303
    with session_scope(arena["url"]) as session:
        bot = session.scalars(select(Bot).where(Bot.name == "alice-two")).one()
        assert [v.number for v in bot.versions] == [1, 2]


@pytest.mark.parametrize(
    ("fields", "status", "said"),
    [
        ({"bot": "bob-bot", "mode": "version"}, 403, "bob"),  # another owner's bot
        ({"bot": "alice-bot"}, 409, "already"),  # "new" over an existing name
        ({"bot": "x y"}, 400, "is not valid"),
        ({"bot": "fresh", "mode": "sideways"}, 400, "mode must be"),
        ({"bot": "fresh", "archive": b"not a gzip"}, 422, "gzip"),
        ({"bot": "fresh", "archive": None}, 400, "choose the project"),
        ({"bot": "fresh", "csrf": "forged"}, 400, "reload the page"),
    ],
)
def test_refused_uploads_say_why_and_change_nothing(
    arena: dict[str, Any], fields: dict[str, Any], status: int, said: str
) -> None:
    client = arena["app"].test_client()
    sign_in(client, arena["alice"])
    with session_scope(arena["url"]) as session:
        before = sorted((b.name, len(b.versions)) for b in session.scalars(select(Bot)))
    fields = {"archive": tar_gz(project()), **fields}
    if fields["archive"] is None:
        del fields["archive"]
    answer = upload(client, **fields)
    text = answer.get_data(as_text=True)
    assert answer.status_code == status, text[-800:]
    assert said in text.lower() or said in text
    with session_scope(arena["url"]) as session:
        assert sorted((b.name, len(b.versions)) for b in session.scalars(select(Bot))) == before


def test_an_upload_needs_a_signed_in_owner(arena: dict[str, Any]) -> None:
    client = arena["app"].test_client()
    csrf = csrf_of(client, "/signin")
    answer = upload(client, csrf=csrf, bot="sneaky", archive=tar_gz(project()))
    assert answer.status_code == 302 and answer.headers["Location"].endswith("/signin")
    with session_scope(arena["url"]) as session:
        assert session.scalar(select(Bot).where(Bot.name == "sneaky")) is None

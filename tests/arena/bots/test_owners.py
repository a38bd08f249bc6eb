"""Owners' API tokens on real PostgreSQL and SQLite: created once, stored hashed, checked in
constant time; missing, forged and rotated tokens refused."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.bots.owners import (
    AuthenticationError,
    InvalidOwnerNameError,
    OwnerNameTakenError,
    PermissionDeniedError,
    authenticate,
    create_owner,
    get_or_create_operator,
    parse_bearer,
    require_operator,
    rotate_token,
)
from arena.config import Settings
from arena.errors import ConflictError
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Owner


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    yield url
    dispose_engines()  # before the pg_url fixture drops the database


@pytest.fixture
def session(db_url: str) -> Iterator[Session]:
    with session_scope(db_url) as session:
        yield session


def test_tokens_are_stored_hashed_and_find_their_owner(db_url: str) -> None:
    with session_scope(db_url) as session:
        alice, alice_token = create_owner(session, "alice")
        _, bob_token = create_owner(session, "bob")
        assert alice_token.startswith("tonk_") and len(alice_token) >= 5 + 43  # 32 bytes, base64
        assert alice_token != bob_token
        assert alice.token_hash == hashlib.sha256(alice_token.encode()).hexdigest()
        assert alice_token not in alice.token_hash
        assert not alice.is_operator
    with session_scope(db_url) as session:  # a later request, a new session
        assert authenticate(session, alice_token).name == "alice"
        assert authenticate(session, bob_token).name == "bob"  # each token is its owner's only
        assert authenticate(session, f"  {alice_token}\n").name == "alice"


def test_missing_and_forged_tokens_are_refused_without_being_quoted(session: Session) -> None:
    for missing in (None, "", "   "):
        with pytest.raises(AuthenticationError, match="missing") as info:
            authenticate(session, missing)
        assert info.value.status == 401
    _, token = create_owner(session, "alice")
    forged = [
        token[:-1] + ("A" if token[-1] != "A" else "B"),  # one character off
        "tonk_" + "x" * 43,
        token.removeprefix("tonk_"),  # the right secret without its prefix
        "tonk_" + "x" * 5000,  # absurdly long
        hashlib.sha256(token.encode()).hexdigest(),  # the stored hash itself
    ]
    for candidate in forged:
        with pytest.raises(AuthenticationError) as info:
            authenticate(session, candidate)
        assert candidate not in str(info.value)
        assert info.value.to_json()["error"]["code"] == "unauthenticated"


def test_tokens_are_compared_in_constant_time(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with session_scope(sqlite_url) as session:
        _, token = create_owner(session, "alice")
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)  # arena.bots.owners calls hmac.compare_digest
    with session_scope(sqlite_url) as session:
        authenticate(session, token)
        assert calls, "authenticate must compare with hmac.compare_digest"
        calls.clear()
        authenticate(session, "operator-secret", Settings(operator_token="operator-secret"))
        assert calls
    dispose_engines()


def test_rotation_invalidates_the_old_token(session: Session) -> None:
    alice, old = create_owner(session, "alice")
    new = rotate_token(session, alice)
    assert new != old
    assert authenticate(session, new) is alice
    with pytest.raises(AuthenticationError):
        authenticate(session, old)


def test_operator_token_from_settings(session: Session) -> None:
    settings = Settings(operator_token="s3cret-operator-token")
    owner = authenticate(session, "s3cret-operator-token", settings)
    assert owner.name == "operator" and owner.is_operator
    assert require_operator(owner) is owner
    assert authenticate(session, "s3cret-operator-token", settings) is owner  # created once
    # The environment's token is never written down, and cannot be rotated from here.
    assert "s3cret" not in owner.token_hash
    with pytest.raises(PermissionDeniedError):
        rotate_token(session, owner)
    with pytest.raises(AuthenticationError):
        authenticate(session, "s3cret-operator-token")  # no settings: no operator token
    with pytest.raises(AuthenticationError):
        authenticate(session, "s3cret-operator-tokeN", settings)
    with pytest.raises(AuthenticationError):  # an empty operator token never matches
        authenticate(session, "", Settings(operator_token=""))


def test_operators(session: Session) -> None:
    alice, _ = create_owner(session, "alice")
    admin, admin_token = create_owner(session, "admin", operator=True)
    with pytest.raises(PermissionDeniedError, match="alice") as info:
        require_operator(alice)
    assert info.value.status == 403
    assert require_operator(authenticate(session, admin_token)) is admin
    house = get_or_create_operator(session, "house")  # the house bots' owner: idempotent
    assert house.is_operator and get_or_create_operator(session, "house") is house
    with pytest.raises(ConflictError):
        get_or_create_operator(session, "alice")


def test_bad_taken_and_reserved_owner_names(session: Session) -> None:
    for name in ["", "a", "-alice", "alice bob", "x" * 65, "al/ice", "ålice", "alice\n"]:
        with pytest.raises(InvalidOwnerNameError) as info:
            create_owner(session, name)
        assert info.value.status == 400
    assert session.scalar(select(func.count()).select_from(Owner)) == 0
    create_owner(session, "alice")
    for name in ("alice", "operator", "Operator"):
        with pytest.raises(OwnerNameTakenError) as taken:
            create_owner(session, name)
        assert taken.value.status == 409
    assert session.scalar(select(func.count()).select_from(Owner)) == 1


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("Bearer tonk_abc", True),
        ("bearer   tonk_abc ", True),
        (None, False),
        ("", False),
        ("Basic eA==", False),
        ("Bearer", False),
        ("tonk_abc", False),
    ],
)
def test_parse_bearer(header: str | None, ok: bool) -> None:
    if ok:
        assert parse_bearer(header) == "tonk_abc"
    else:
        with pytest.raises(AuthenticationError):
            parse_bearer(header)

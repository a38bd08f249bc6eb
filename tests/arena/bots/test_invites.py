"""Invite codes (arena/bots/invites.py) on real PostgreSQL and SQLite: stored hashed, spent
one use per owner, and refused, each with its own code and nothing changed, when malformed,
unknown or forged, used up (a replayed single-use code), expired or revoked; a taken name
spends no use; racing redemptions never overspend a code (threads)."""

from __future__ import annotations

import datetime as dt
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, func, pool, select, text, update
from sqlalchemy.orm import Session

from arena.bots.invites import (
    INVITE_PREFIX,
    MAX_USES,
    InvalidInviteError,
    InvalidInviteOptionsError,
    InviteExpiredError,
    InviteNotFoundError,
    InviteRevokedError,
    InviteUsedUpError,
    create_invite,
    hash_code,
    invite_status,
    list_invites,
    parse_expiry,
    redeem_invite,
    redemptions,
    revoke_invite,
)
from arena.bots.owners import (
    InvalidOwnerNameError,
    OwnerNameTakenError,
    authenticate,
    create_owner,
    operator_owner,
)
from arena.errors import ArenaError
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Invite, InviteRedemption, Owner, utcnow

NOW = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    yield url
    dispose_engines()


@pytest.fixture
def pg(pg_url: str) -> Iterator[str]:
    yield pg_url
    dispose_engines()


def make_invite(url: str, **options: object) -> tuple[int, str]:
    with session_scope(url) as session:
        invite, code = create_invite(session, operator_owner(session), **options)  # type: ignore[arg-type]
        return invite.id, code


def state(url: str) -> tuple[list[tuple[int, int, bool]], list[str], int]:
    """Every invite's (uses left, uses total, revoked), the owners' names, the redemptions."""
    with session_scope(url) as session:
        invites = [(i.uses_left, i.uses_total, i.revoked_at is not None) for i in list_invites(session)]
        owners = sorted(session.scalars(select(Owner.name)))
        count = session.scalar(select(func.count()).select_from(InviteRedemption)) or 0
    return invites, owners, count


def redeem(url: str, code: object, name: str) -> str:
    with session_scope(url) as session:
        return redeem_invite(session, code, name)[1]


def refused(url: str, code: object, name: str, error: type[ArenaError]) -> ArenaError:
    """Redeeming is refused with ``error`` and changes nothing."""
    before = state(url)
    with pytest.raises(error) as caught:
        redeem(url, code, name)
    assert type(caught.value) is error
    assert state(url) == before
    return caught.value


def test_a_code_is_stored_hashed_and_redeemed_into_an_owner_with_a_token(db_url: str) -> None:
    invite_id, code = make_invite(db_url, uses=2, note="workshop\x00 \u202e")
    assert code.startswith(INVITE_PREFIX) and len(code) == len(INVITE_PREFIX) + 43
    with session_scope(db_url) as session:
        invite = session.get(Invite, invite_id)
        assert invite is not None
        assert invite.code_hash == hash_code(code) != code
        assert invite.note == "workshop \u202e"  # controls removed before storing
        assert (invite.uses_left, invite.uses_total) == (2, 2)
        assert dt.timedelta(days=6, hours=23) < invite.expires_at - utcnow() <= dt.timedelta(days=7)
        dump = " ".join(str(v) for v in session.execute(select(Invite.__table__)).one())
        assert code not in dump and code[len(INVITE_PREFIX) :] not in dump

    token = redeem(db_url, code, "alice")
    with session_scope(db_url) as session:
        alice = authenticate(session, token)
        assert alice.name == "alice" and not alice.is_operator
        joined = session.scalars(select(InviteRedemption)).one()
        assert (joined.owner_id, joined.invite_id) == (alice.id, invite_id)
        assert redemptions(session) == {invite_id: 1}
    assert state(db_url)[0] == [(1, 2, False)]
    redeem(db_url, f"  {code}\n", "bob")  # surrounding space is forgiven
    assert state(db_url)[0] == [(0, 2, False)]
    assert state(db_url)[1] == ["alice", "bob", "operator"]


def test_a_replayed_single_use_code_is_used_up(db_url: str) -> None:
    _, code = make_invite(db_url)
    redeem(db_url, code, "alice")
    error = refused(db_url, code, "mallory", InviteUsedUpError)
    assert error.status == 410 and error.code == "invite_used_up"
    assert "used up" in error.message and "1 owner" in error.message
    refused(db_url, code, "alice", InviteUsedUpError)  # the same name again too


def test_unknown_and_forged_codes_are_the_same_no_such_invite(db_url: str) -> None:
    _, code = make_invite(db_url)
    forged = code[:-4] + ("AAAA" if not code.endswith("AAAA") else "BBBB")
    unknown = INVITE_PREFIX + secrets.token_urlsafe(32)
    messages = {refused(db_url, c, "mallory", InviteNotFoundError).message for c in (forged, unknown)}
    assert len(messages) == 1  # nothing tells a near miss from a wild guess
    error = refused(db_url, unknown, "mallory", InviteNotFoundError)
    assert (error.status, error.code) == (404, "invite_not_found")


MALFORMED = ["", "tonk_" + "a" * 43, "tonki_short", "tonki_" + "a" * 44, "tonki_" + "a" * 42 + "!"]


@pytest.mark.parametrize("code", [*MALFORMED, None, 7, "x" * 10**6])
def test_a_malformed_code_is_refused_without_being_quoted(db_url: str, code: object) -> None:
    error = refused(db_url, code, "mallory", InvalidInviteError)
    assert (error.status, error.code) == (400, "invalid_invite")
    assert not isinstance(code, str) or not code or code not in error.message


def test_an_expired_code_is_refused_with_its_date(db_url: str) -> None:
    invite_id, code = make_invite(db_url, uses=3)
    with session_scope(db_url) as session:
        session.execute(update(Invite).where(Invite.id == invite_id).values(expires_at=NOW))
    error = refused(db_url, code, "alice", InviteExpiredError)
    assert (error.status, error.code) == (410, "invite_expired") and "2026-12-02 12:00 UTC" in error.message
    with session_scope(db_url) as session:
        assert invite_status(session.get_one(Invite, invite_id)) == "expired"


def test_a_revoked_code_is_refused_and_revoking_is_idempotent(db_url: str) -> None:
    invite_id, code = make_invite(db_url, uses=3)
    redeem(db_url, code, "alice")
    with session_scope(db_url) as session:
        first = revoke_invite(session, invite_id).revoked_at
    with session_scope(db_url) as session:
        assert revoke_invite(session, invite_id).revoked_at == first
        assert invite_status(session.get_one(Invite, invite_id)) == "revoked"
    error = refused(db_url, code, "bob", InviteRevokedError)
    assert (error.status, error.code) == (410, "invite_revoked")
    with session_scope(db_url) as session, pytest.raises(InviteNotFoundError):
        revoke_invite(session, invite_id + 1)


def test_a_taken_or_malformed_name_spends_no_use(db_url: str) -> None:
    _, code = make_invite(db_url)
    with session_scope(db_url) as session:
        create_owner(session, "alice")
    refused(db_url, code, "alice", OwnerNameTakenError)
    refused(db_url, code, "Operator", OwnerNameTakenError)
    refused(db_url, code, "no spaces", InvalidOwnerNameError)
    refused(db_url, code, "x" * 65, InvalidOwnerNameError)
    redeem(db_url, code, "bob")  # the one use is still there
    assert state(db_url)[0] == [(0, 1, False)]


def test_invite_options_are_bounded(db_url: str) -> None:
    for uses in (0, -1, MAX_USES + 1, True, 1.5, "3"):
        with pytest.raises(InvalidInviteOptionsError, match="uses"):
            make_invite(db_url, uses=uses)
    for expires in ("1m", "91d", "13w", "2000-01-01", "tomorrow", "7 days", 7, "9" * 50):
        with pytest.raises(InvalidInviteOptionsError, match="expir"):
            make_invite(db_url, expires=expires)
    with pytest.raises(InvalidInviteOptionsError, match="note"):
        make_invite(db_url, note=["x"])
    assert state(db_url)[0] == []  # nothing made
    invite_id, _ = make_invite(db_url, uses=MAX_USES, expires="90d", note="n" * 500)
    with session_scope(db_url) as session:
        assert len(session.get_one(Invite, invite_id).note) == 200


@given(
    amount=st.integers(min_value=0, max_value=10**6),
    unit=st.sampled_from(["m", "h", "d", "w"]),
)
def test_a_duration_expires_that_long_from_now_or_is_refused(amount: int, unit: str) -> None:
    length = dt.timedelta(**{{"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]: amount})
    if dt.timedelta(minutes=5) <= length <= dt.timedelta(days=90):
        assert parse_expiry(f"{amount}{unit}", NOW) == NOW + length
    else:
        with pytest.raises(InvalidInviteOptionsError):
            parse_expiry(f"{amount}{unit}", NOW)


def test_dates_expire_at_their_moment_in_utc() -> None:
    assert parse_expiry(None, NOW) == NOW + dt.timedelta(days=7)
    assert parse_expiry("2026-12-20", NOW) == dt.datetime(2026, 12, 20, tzinfo=dt.UTC)
    assert parse_expiry("2026-12-20T10:00+02:00", NOW) == dt.datetime(2026, 12, 20, 8, tzinfo=dt.UTC)


# --- races (concurrent writers: PostgreSQL re-checks the row, SQLite has one writer) ------


@pytest.mark.postgres
def test_of_two_redemptions_racing_for_the_last_use_exactly_one_wins(pg: str) -> None:
    """The loser passed the first check (the winner had not committed) and then waited on the
    row: the conditional UPDATE, re-checked on the committed row, spends nothing."""
    _, code = make_invite(pg)
    outcome: dict[str, object] = {}

    def loser() -> None:
        try:
            outcome["token"] = redeem(pg, code, "bob")
        except ArenaError as exc:
            outcome["error"] = exc

    with session_scope(pg) as winner:
        redeem_invite(winner, code, "alice")  # uncommitted: holds the invite's row
        thread = threading.Thread(target=loser)
        thread.start()
        waiting_on_lock(pg)
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), InviteUsedUpError), outcome
    assert state(pg)[0] == [(0, 1, False)] and state(pg)[1] == ["alice", "operator"]


def waiting_on_lock(url: str) -> None:
    """Return once another connection to the database waits on a row lock."""
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        for _ in range(3000):
            with engine.connect() as c:
                waiting = c.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND wait_event_type = 'Lock'"
                    )
                ).scalar()
            if waiting:
                return
            time.sleep(0.01)
        raise AssertionError("the second redemption never waited on the invite's row")
    finally:
        engine.dispose()


@pytest.mark.parametrize("uses", [1, 3])
def test_many_threads_redeeming_at_once_spend_exactly_the_uses(db_url: str, uses: int) -> None:
    _, code = make_invite(db_url, uses=uses)
    threads, start = 8, threading.Barrier(8)
    results: list[object] = [None] * threads

    def attempt(i: int) -> None:
        start.wait()
        try:
            results[i] = redeem(db_url, code, f"newcomer{i}")
        except ArenaError as exc:
            results[i] = exc

    workers = [threading.Thread(target=attempt, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    tokens = [r for r in results if isinstance(r, str)]
    assert len(tokens) == uses
    assert all(isinstance(r, InviteUsedUpError) for r in results if not isinstance(r, str)), results
    invites, owners, joined = state(db_url)
    assert invites == [(0, uses, False)] and joined == uses and len(owners) == uses + 1
    with Session(create_engine(db_url, poolclass=pool.NullPool)) as session:
        assert {authenticate(session, t).name for t in tokens} == set(owners) - {"operator"}


# --- the books always balance ------------------------------------------------------------

STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("join"), st.sampled_from(["ann", "ben", "cat", "dan", "eve", "bad name", "Operator"])
        ),
        st.tuples(st.just("replay"), st.sampled_from(["ann", "zed"])),
        st.tuples(st.just("revoke"), st.none()),
        st.tuples(st.just("expire"), st.none()),
    ),
    max_size=12,
)


@settings(max_examples=20, deadline=None)
@given(uses=st.integers(min_value=1, max_value=4), steps=STEPS)
def test_uses_left_plus_owners_joined_is_always_the_uses_given(
    uses: int, steps: list[tuple[str, str | None]]
) -> None:
    """Whatever is tried in whatever order, an invite never makes more owners than its uses,
    each owner it made is recorded once, and a refusal changes nothing."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/arena.sqlite"
        invite_id, code = make_invite(url, uses=uses)
        made: list[str] = []
        for action, name in steps:
            if action in ("join", "replay"):
                try:
                    redeem(url, code, str(name))
                    made.append(str(name))
                except ArenaError:
                    pass
            elif action == "revoke":
                with session_scope(url) as session:
                    revoke_invite(session, invite_id)
            else:
                with session_scope(url) as session:
                    session.execute(update(Invite).where(Invite.id == invite_id).values(expires_at=NOW))
            [(left, total, _)], owners, joined = state(url)
            assert left + joined == total == uses and left >= 0
            assert joined == len(made) == len(set(made)) and sorted([*made, "operator"]) == owners
        dispose_engines()

"""Connecting to the gateway: who may connect as which bot, after the admission check, and
bad input, each ending only the offending connection."""

from __future__ import annotations

import collections
import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from helpers.link import (
    Arena,
    Client,
    RawLink,
    bot_id,
    link_player,
    status,
    wait_until,
    welcomed,
)
from sqlalchemy import delete, func, select

from arena.link import connection as connection_module
from arena.link import directory, link_service
from arena.store.db import session_scope
from arena.store.models import Bot, CheckLease, LinkConnection, Owner, utcnow
from bots.random_bot import RandomBot
from sdk.bot import Bot as SdkBot
from sdk.link import LinkClient, LinkRefusedError
from sdk.protocol import bot_pb2 as pb
from sdk.protocol import link_pb2 as lpb

# -- connecting and registering -------------------------------------------------------------


def test_a_new_name_is_registered_after_the_admission_check(arena: Arena, clients: list[Client]) -> None:
    client = Client(arena, "alice", "linked")
    clients.append(client)
    client.wait()
    with session_scope(arena.url) as session:
        bot = session.scalars(select(Bot).where(Bot.name == "linked")).one()
        assert bot.connected and bot.address is None and bot.owner.name == "alice"
        assert bot.versions[0].connected and bot.versions[0].info["protocol_version"] == "tonk.v1"
        assert directory.connected_capacity(session, bot.id) == 2
    assert client.link.stats.calls > 10  # the conformance match and protocol check ran over the link


def test_a_bot_failing_the_admission_check_is_not_registered(arena: Arena) -> None:
    class Crashing(SdkBot):
        name = "crashing"

        def act(self, obs: Any) -> int:
            raise RuntimeError("boom")

    link = LinkClient(Crashing, arena.address, arena.tokens["alice"], "crashing", capacity=1)
    with pytest.raises(LinkRefusedError, match=r"FAILED_PRECONDITION.*admission check failed.*boom"):
        link.run()
    with session_scope(arena.url) as session:
        assert session.scalars(select(Bot).where(Bot.name == "crashing")).first() is None
        assert session.scalar(select(func.count(LinkConnection.id))) == 0


@pytest.mark.parametrize(
    ("owner", "name", "code", "text"),
    [
        (None, "anybot", grpc.StatusCode.UNAUTHENTICATED, "Bearer"),
        ("nobody", "anybot", grpc.StatusCode.UNAUTHENTICATED, ""),
        ("alice", "dialled", grpc.StatusCode.PERMISSION_DENIED, "belongs to another owner"),
        ("bob", "dialled", grpc.StatusCode.FAILED_PRECONDITION, "dialled at an address"),
        ("alice", "Not A Name!", grpc.StatusCode.INVALID_ARGUMENT, "not valid"),
    ],
)
def test_a_token_connects_only_its_owners_bots(
    arena: Arena, owner: str | None, name: str, code: grpc.StatusCode, text: str
) -> None:
    token = None if owner is None else arena.tokens.get(owner, "not-a-token")
    link = RawLink(arena.address, token)
    try:
        link.hello(name)
        error = link.closed_with()
        assert error.code() == code and text in (error.details() or "")
    finally:
        link.close()


def test_another_owner_cannot_connect_as_a_connected_bot(arena: Arena, clients: list[Client]) -> None:
    clients.append(Client(arena, "alice", "mine").wait())
    link = RawLink(arena.address, arena.tokens["bob"])
    try:
        link.hello("mine")
        error = link.closed_with()
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        link.close()
    # Alice's bot still plays.
    assert link_player(arena, "mine").describe()["protocol_version"] == "tonk.v1"


@pytest.mark.parametrize(
    ("first", "text"),
    [
        (b"\xff\xff\xff\xff", "not a ConnectRequest"),
        (lpb.ConnectRequest(reply=lpb.LinkReply(call_id=1)).SerializeToString(), "must be a hello"),
        (
            lpb.ConnectRequest(hello=lpb.LinkHello(bot_name="zero", capacity=0)).SerializeToString(),
            "capacity",
        ),
    ],
)
def test_a_bad_first_message_is_refused(arena: Arena, first: bytes, text: str) -> None:
    link = RawLink(arena.address, arena.tokens["alice"])
    try:
        link.send(first)
        error = link.closed_with()
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and text in (error.details() or "")
    finally:
        link.close()


def test_no_hello_in_time_is_refused(arena: Arena, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(link_service, "HELLO_TIMEOUT_S", 0.5)
    link = RawLink(arena.address, arena.tokens["alice"])
    try:
        error = link.closed_with()
        assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED and "hello" in (error.details() or "")
    finally:
        link.close()


def test_connections_per_owner_are_limited(arena: Arena, clients: list[Client]) -> None:
    for _ in range(3):  # the fixture's limit
        clients.append(Client(arena, "alice", "many", capacity=1).wait())
    link = RawLink(arena.address, arena.tokens["alice"])
    try:
        link.hello("many")
        error = link.closed_with()
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "3 connections" in (error.details() or "")
    finally:
        link.close()
    clients.append(Client(arena, "bob", "bobs").wait())  # another owner is not affected


# -- bad input after the welcome: only that connection pays ----------------------------------


def test_garbage_is_answered_invalid_argument(raw: RawLink) -> None:
    raw.send(b"\x0a\xff\xff\xff\xff\x0f")
    code, details = status(raw)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "is not a ConnectRequest" in details


def test_a_reply_to_a_call_never_made_ends_the_connection(raw: RawLink) -> None:
    raw.send(
        lpb.ConnectRequest(reply=lpb.LinkReply(call_id=10_000, decide=pb.DecideResponse(action_index=0)))
    )
    code, details = status(raw)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "call 10000, which was never made" in details


def test_a_second_hello_ends_the_connection(raw: RawLink) -> None:
    raw.hello("rawbot")
    code, details = status(raw)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "second hello" in details


def test_a_message_over_the_size_limit_ends_the_connection(raw: RawLink) -> None:
    text = "x" * (link_service.MAX_MESSAGE_BYTES + 10)
    big = lpb.LinkReply(call_id=1, error=lpb.LinkError(code=13, message=text))
    raw.send(lpb.ConnectRequest(reply=big))
    code, _details = status(raw)
    assert code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT)


def test_late_replies_get_a_notice_and_a_flood_ends_the_connection(raw: RawLink) -> None:
    # Call 1 was answered during the admission check: answering it again is a stray reply.
    stray = lpb.ConnectRequest(reply=lpb.LinkReply(call_id=1, get_info=pb.GetInfoResponse()))
    raw.send(stray)
    notice = raw.next()
    assert notice.WhichOneof("message") == "notice" and notice.notice.kind == "late_reply"
    for _ in range(connection_module.MAX_STRAY_PER_MINUTE + 1):
        raw.send(stray)
    code, details = status(raw)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "answer no waiting call" in details




def test_the_connection_limit_holds_under_a_burst(arena: Arena) -> None:
    """Issue 29, point 7: 40 connections of one owner at once get no more welcomes than the
    limit (3 here); the rest are refused with RESOURCE_EXHAUSTED."""
    first = RawLink(arena.address, arena.tokens["alice"])
    first.hello("rawbot")
    welcomed(first)  # registered: the burst is re-admissions of one build
    first.close()
    wait_until(lambda: not arena.gateway.holdings.by_bot and not arena.gateway.holdings.open_ids)
    links = [RawLink(arena.address, arena.tokens["alice"]) for _ in range(40)]
    try:
        time.sleep(1.0)  # let every stream be authenticated and wait for its hello
        for link in links:
            link.hello("rawbot")

        def outcome(link: RawLink) -> str:
            item = link.next(timeout=60)
            if isinstance(item, grpc.RpcError):
                return item.code().name
            link.received.put(item)  # the admission's first call: answer it and the rest
            welcomed(link)
            return "welcome"

        with ThreadPoolExecutor(max_workers=40) as pool:
            outcomes = collections.Counter(pool.map(outcome, links))
        assert 1 <= outcomes["welcome"] <= 3, outcomes
        assert outcomes["welcome"] + outcomes["RESOURCE_EXHAUSTED"] == 40, outcomes
    finally:
        for link in links:
            link.close()


# -- the admission check's time limit and check slots (issue 29, point 5) -------------------


class SlowBot(RandomBot):
    """Legal, within every deadline, but slow: its admission check takes a long while."""

    name = "slowpoke"
    pause_s = 0.3

    def act(self, obs: Any) -> int:
        time.sleep(self.pause_s)
        return int(super().act(obs))  # type: ignore[arg-type]


def leases(arena: Arena) -> list[tuple[int, str]]:
    """The running checks: (owner id, holder) of each check slot taken."""
    with session_scope(arena.url) as session:
        return [(row.owner_id, row.holder) for row in session.scalars(select(CheckLease))]


def owner_id(arena: Arena, name: str) -> int:
    with session_scope(arena.url) as session:
        return int(session.scalars(select(Owner.id).where(Owner.name == name)).one())


def test_a_slow_connected_bot_is_cut_at_the_check_time_limit_holding_a_check_slot(
    arena: Arena, clients: list[Client]
) -> None:
    """A connected bot's admission check is bounded as a dialled bot's is: past
    ``check_time_limit_s`` the connection ends with the same refusal, nothing is registered,
    and the check slot it held meanwhile (one of the dashboard's) is free again."""
    service = arena.gateway.link_service
    service.settings = dataclasses.replace(service.settings, check_time_limit_s=3)
    slow = Client(arena, "alice", "slowpoke", bot=SlowBot, capacity=1)
    clients.append(slow)
    alice = owner_id(arena, "alice")
    wait_until(lambda: [o for o, _ in leases(arena)] == [alice], timeout=30)  # checking it
    slow.thread.join(60)
    assert not slow.thread.is_alive(), "still being checked after twenty times its time limit"
    assert len(slow.errors) == 1 and isinstance(slow.errors[0], LinkRefusedError), slow.errors
    error = slow.errors[0]
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION, error
    assert "admission check failed" in error.details and "longer than the 3 s" in error.details, error
    wait_until(lambda: leases(arena) == [], timeout=30)  # given back as the check's thread ends
    with session_scope(arena.url) as session:
        assert session.scalars(select(Bot).where(Bot.name == "slowpoke")).first() is None
        assert session.scalar(select(func.count(LinkConnection.id))) == 0


@pytest.mark.parametrize(
    ("checking", "text"),
    [
        (["alice"], "a check of one of your bots is still running"),
        (["bob", "carol"], "already checking 2 bots"),
    ],
)
def test_a_new_connected_bot_needs_a_free_check_slot(arena: Arena, checking: list[str], text: str) -> None:
    """The gateway's checks share the arena's check slots with the dashboard's: with the
    owner's own check running, or every slot taken (here by dashboard checks, as rows of
    ``check_leases``), a new name is refused at once with RESOURCE_EXHAUSTED (the SDK's client
    retries) before any call reaches the bot, and nothing changes. Once free, it is checked."""
    import datetime as dt

    from arena.bots.owners import create_owner

    with session_scope(arena.url) as session:
        create_owner(session, "carol")
        later = utcnow() + dt.timedelta(minutes=5)
        for slot, name in enumerate(checking):
            owner = session.scalars(select(Owner).where(Owner.name == name)).one()
            holder = f"dashboard-{slot}"
            session.add(CheckLease(slot=slot, owner_id=owner.id, holder=holder, expires_at=later))
    link = RawLink(arena.address, arena.tokens["alice"])
    try:
        link.hello("newcomer")
        item = link.next(timeout=30)
        assert isinstance(item, grpc.RpcError), f"the bot was called: {item}"
        assert item.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and text in (item.details() or ""), item
    finally:
        link.close()
    assert sorted(holder for _, holder in leases(arena)) == [f"dashboard-{i}" for i in range(len(checking))]
    with session_scope(arena.url) as session:
        assert session.scalars(select(Bot).where(Bot.name == "newcomer")).first() is None
        session.execute(delete(CheckLease))
    again = RawLink(arena.address, arena.tokens["alice"])
    try:
        again.hello("newcomer")
        assert welcomed(again).registered
    finally:
        again.close()
    wait_until(lambda: leases(arena) == [], timeout=30)


def test_a_burst_of_slow_admission_checks_does_not_stall_the_gateways_heartbeat(
    arena: Arena, clients: list[Client]
) -> None:
    """Issue 29, point 5: 32 slow-but-legal new names checked at once once held every thread
    of the gateway: its heartbeat stalled past its lease and every connected bot looked
    offline, and a known bot reconnecting waited for its welcome. Here 32 owners (one check
    each) with slots enough for all of them (an operator's choice): the checks run on threads
    of their own, so the heartbeat goes on, a bot connected before stays online, and a known
    bot reconnecting is welcomed while the checks still run."""
    from arena.bots.owners import create_owner
    from arena.store.models import LinkGateway

    gateway = arena.gateway
    service = gateway.link_service
    service.settings = dataclasses.replace(service.settings, check_slots=32, check_time_limit_s=12)
    owners = [f"owner{i}" for i in range(32)]
    with session_scope(arena.url) as session:
        for name in ["carol", *owners]:
            arena.tokens[name] = create_owner(session, name)[1]
    clients.append(Client(arena, "carol", "bystander").wait())
    bystander = bot_id(arena, "bystander")
    Client(arena, "carol", "returner").wait().stop()  # registered, gone for now

    for name in owners:
        clients.append(Client(arena, name, f"slow-{name}", bot=SlowBot, capacity=1))
    wait_until(lambda: len(gateway.holdings.holding) >= 28, timeout=60)  # the burst is being admitted
    returner = Client(arena, "carol", "returner")
    clients.append(returner)
    returner.wait(timeout=60)
    assert len(gateway.holdings.holding) >= 16, "the known bot's welcome waited for the burst's checks"

    def heartbeat_age() -> float:
        with session_scope(arena.url) as session:
            row = session.get(LinkGateway, gateway.id)
            assert row is not None
            return (utcnow() - row.heartbeat_at).total_seconds()

    ages, capacities = [], []
    watch_until = time.monotonic() + directory.GATEWAY_LEASE_S + 4
    while time.monotonic() < watch_until and gateway.holdings.holding:
        ages.append(heartbeat_age())
        with session_scope(arena.url) as session:
            capacities.append(directory.connected_capacity(session, bystander))
        time.sleep(0.25)
    assert ages and max(ages) < directory.GATEWAY_LEASE_S, f"heartbeat {max(ages):.1f} s old"
    assert min(capacities) == 2, "the bot connected before the burst looked offline"

"""The bot registry against real PostgreSQL and SQLite and real gRPC bots on loopback.

Every refusal is checked to leave the database exactly as it was. The only network traffic
is to servers these tests start on 127.0.0.1 (host names are resolved by a fake resolver).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.bots.addresses import (
    AddressNotAllowedError,
    InvalidAddressError,
    InvalidBotNameError,
    check_address,
    parse_address,
    validate_bot_name,
)
from arena.bots.owners import PermissionDeniedError, create_owner
from arena.bots.registry import (
    BotNotFoundError,
    BotUnhealthyError,
    BotUnreachableError,
    ConformanceFailedError,
    InvalidHostedBotError,
    NameTakenError,
    NotOwnerError,
    bot_to_json,
    get_bot,
    host_bot,
    register_bot,
    retire_bot,
    update_bot,
)
from arena.config import Settings
from arena.errors import ArenaError
from arena.queries.bots import bot_list
from arena.store.db import dispose_engines, session_scope
from arena.store.models import Bot, BotVersion, Owner
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from sdk.actions import Action
from sdk.bot import Bot as SdkBot
from sdk.observation import Observation
from sdk.server import RunningServer, start_server

LOOPBACK = Settings(allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=1000, time_bank_ms=3000)
#: A short deadline and no time bank, so that SlowBot times out on its first decision.
IMPATIENT = Settings(allowed_bot_hosts=("127.0.0.1",), decision_deadline_ms=200, time_bank_ms=0)


# -- bots that fail -------------------------------------------------------------------------


class IllegalBot(SdkBot):
    """Always answers an action index that does not exist."""

    name = "illegal"

    def act(self, obs: Observation) -> Action | int:
        return len(obs.legal_actions) + 7


class CrashingBot(SdkBot):
    name = "crashing"

    def act(self, obs: Observation) -> Action | int:
        raise RuntimeError("deliberately broken")


class TwoSeatBot(SdkBot):
    """Plays two-seat games well enough, and breaks at bigger tables (only the protocol check
    sees those)."""

    name = "two-seat"

    def act(self, obs: Observation) -> Action | int:
        if len(obs.players) > 2:
            raise RuntimeError("only heads-up, sorry")
        return self.rng.randrange(len(obs.legal_actions))


class SlowBot(SdkBot):
    name = "slow"

    def act(self, obs: Observation) -> Action | int:
        time.sleep(0.5)  # longer than IMPATIENT's 200 ms deadline, with no time bank
        return 0


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    running: dict[str, RunningServer] = {
        "greedy": start_server(GreedyBot),
        "random": start_server(RandomBot),
        "illegal": start_server(IllegalBot),
        "crashing": start_server(CrashingBot),
        "slow": start_server(SlowBot),
        "two_seat": start_server(TwoSeatBot),
        "not_serving": start_server(RandomBot),
    }
    from grpc_health.v1 import health_pb2

    running["not_serving"]._health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    yield {name: server.address for name, server in running.items()}
    for server in running.values():
        server.stop(0)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    yield url
    dispose_engines()  # before the pg_url fixture drops the database


@pytest.fixture
def owners(db_url: str) -> dict[str, int]:
    with session_scope(db_url) as session:
        alice, _ = create_owner(session, "alice")
        bob, _ = create_owner(session, "bob")
        house, _ = create_owner(session, "house", operator=True)
        return {"alice": alice.id, "bob": bob.id, "house": house.id}


def owner(session: Session, name: str) -> Owner:
    found = session.scalars(select(Owner).where(Owner.name == name)).one()
    return found


def snapshot(url: str) -> list[tuple[Any, ...]]:
    """Every row the registry may touch, read in a fresh session."""
    with session_scope(url) as session:
        rows: list[tuple[Any, ...]] = [
            ("owner", o.id, o.name, o.token_hash, o.is_operator) for o in session.scalars(select(Owner))
        ]
        rows += [
            ("bot", b.id, b.name, b.owner_id, b.address, b.hosted, b.status)
            for b in session.scalars(select(Bot))
        ]
        rows += [
            ("version", v.id, v.bot_id, v.number, v.address, v.hosted, repr(v.info))
            for v in session.scalars(select(BotVersion))
        ]
        return sorted(rows, key=repr)


def refused(url: str, error: type[ArenaError], call: Any, *args: Any, **kwargs: Any) -> ArenaError:
    """Run ``call(session, ...)`` in a transaction, expect ``error``, and check nothing changed."""
    before = snapshot(url)
    with pytest.raises(error) as info, session_scope(url) as session:
        call(session, *args, **kwargs)
    assert snapshot(url) == before, f"{error.__name__} changed the database"
    assert info.value.status == error.status
    return info.value


def register(session: Session, who: str, name: str, address: str, **kwargs: Any) -> Bot:
    return register_bot(
        session, owner(session, who), name, address, settings=kwargs.pop("settings", LOOPBACK), **kwargs
    )


# -- registering ----------------------------------------------------------------------------


def test_a_working_bot_is_registered_with_its_info(
    db_url: str, owners: dict[str, int], servers: dict[str, str]
) -> None:
    with session_scope(db_url) as session:
        bot = register(session, "alice", "my-greedy", servers["greedy"])
        assert bot.id is not None
    with session_scope(db_url) as session:
        bot = get_bot(session, "my-greedy")
        assert (bot.owner.name, bot.address, bot.hosted, bot.status) == (
            "alice",
            servers["greedy"],
            None,
            "active",
        )
        (version,) = bot.versions
        assert version.number == 1 and version.address == servers["greedy"]
        assert version.info["name"] == "greedy"
        assert version.info["protocol_version"] == "tonk.v1"
        assert version.info["version"] == GreedyBot.version
        data = bot_to_json(bot)
        assert data["owner"] == "alice" and data["version"]["info"]["name"] == "greedy"
        assert [(b["name"], b["owner"], b["status"]) for b in bot_list(session, db_url)] == [
            ("my-greedy", "alice", "active")
        ]


def test_refusals_change_nothing(
    db_url: str, owners: dict[str, int], servers: dict[str, str], closed_port: int
) -> None:
    with session_scope(db_url) as session:
        register(session, "alice", "taken", servers["random"])

    exc = refused(db_url, BotUnreachableError, register, "alice", "ghost", f"127.0.0.1:{closed_port}")
    assert f"127.0.0.1:{closed_port}" in exc.message

    exc = refused(db_url, ConformanceFailedError, register, "alice", "cheater", servers["illegal"])
    assert exc.details["faults"][0]["kind"] == "illegal" and "out of range" in exc.message
    exc = refused(db_url, ConformanceFailedError, register, "alice", "crasher", servers["crashing"])
    assert "deliberately broken" in exc.message and exc.details["faults"][0]["kind"] == "crash"
    exc = refused(
        db_url, ConformanceFailedError, register, "alice", "sleepy", servers["slow"], settings=IMPATIENT
    )
    assert exc.details["faults"][0]["kind"] == "timeout"
    exc = refused(db_url, ConformanceFailedError, register, "alice", "heads-up", servers["two_seat"])
    assert "protocol check" in exc.message and "only heads-up" in exc.message
    assert exc.details["check"].startswith(f"tonk check {servers['two_seat']}")
    exc = refused(db_url, BotUnhealthyError, register, "alice", "tired", servers["not_serving"])
    assert "NOT_SERVING" in exc.message

    for who in ("alice", "bob"):  # whoever asks, and whether or not the bot would work
        exc = refused(db_url, NameTakenError, register, who, "taken", servers["greedy"])
        assert "'taken'" in exc.message

    # Internal addresses are refused before anything is dialled.
    def must_not_dial(address: str, settings: Settings) -> dict[str, Any]:
        raise AssertionError(f"dialled {address}")

    for address in (servers["greedy"], "10.0.0.5:50051", "169.254.169.254:80", "[::1]:50051"):
        exc = refused(
            db_url,
            AddressNotAllowedError,
            register,
            "alice",
            "sneaky",
            address,
            settings=Settings(),
            checker=must_not_dial,
        )
        assert address in exc.message
    exc = refused(db_url, InvalidAddressError, register, "alice", "typo", "127.0.0.1", checker=must_not_dial)
    assert exc.code == "invalid_address"
    for name in ("X", "Bad Name", "-dash", "a" * 33, "ünïcode", ""):
        refused(
            db_url, InvalidBotNameError, register, "alice", name, servers["greedy"], checker=must_not_dial
        )


def test_losing_a_race_for_a_name_is_a_conflict(db_url: str, owners: dict[str, int]) -> None:
    """Another request takes the name while this one is checking its bot (which takes a while)."""

    def checker(address: str, settings: Settings) -> dict[str, Any]:
        with session_scope(db_url) as other:
            register(other, "bob", "racy", "8.8.8.8:50051", check=False)
        return {"name": "racy"}

    with pytest.raises(NameTakenError), session_scope(db_url) as session:
        register(session, "alice", "racy", "8.8.4.4:50051", checker=checker)
    with session_scope(db_url) as session:
        bot = get_bot(session, "racy")
        assert (bot.owner.name, bot.address, len(bot.versions)) == ("bob", "8.8.8.8:50051", 1)


def test_update_and_retire(db_url: str, owners: dict[str, int], servers: dict[str, str]) -> None:
    with session_scope(db_url) as session:
        register(session, "alice", "mine", servers["random"])

    def update(session: Session, who: str, address: str) -> Bot:
        return update_bot(session, owner(session, who), "mine", address, settings=LOOPBACK)

    exc = refused(db_url, NotOwnerError, update, "bob", servers["greedy"])
    assert exc.status == 403 and "another owner" in exc.message
    refused(db_url, NotOwnerError, lambda s: retire_bot(s, owner(s, "bob"), "mine"))
    refused(db_url, ConformanceFailedError, update, "alice", servers["illegal"])
    exc = refused(
        db_url,
        BotNotFoundError,
        lambda s: update_bot(s, owner(s, "alice"), "nobody", servers["greedy"], settings=LOOPBACK),
    )
    assert exc.status == 404 and exc.to_json()["error"]["code"] == "bot_not_found"
    refused(db_url, BotNotFoundError, get_bot, "nobody")

    before = snapshot(db_url)
    with session_scope(db_url) as session:  # re-submitted unchanged: the same version (and rating)
        bot = update(session, "alice", servers["random"])
        assert [(v.number, v.info["name"]) for v in bot.versions] == [(1, "random")]
    assert snapshot(db_url) == before

    with session_scope(db_url) as session:
        bot = update(session, "alice", servers["greedy"])
        assert bot.address == servers["greedy"]
        assert [(v.number, v.info["name"]) for v in bot.versions] == [(1, "random"), (2, "greedy")]

    with session_scope(db_url) as session:
        assert retire_bot(session, owner(session, "alice"), "mine").status == "retired"
        assert retire_bot(session, owner(session, "alice"), "mine").status == "retired"  # idempotent
    with session_scope(db_url) as session:
        assert [(b["name"], b["status"]) for b in bot_list(session, db_url)] == [("mine", "retired")]
    refused(db_url, NameTakenError, register, "alice", "mine", servers["greedy"])  # names are not reused

    with session_scope(db_url) as session:  # an operator may act on anyone's bot; updating revives it
        bot = update(session, "house", servers["random"])
        assert bot.status == "active" and len(bot.versions) == 3 and bot.owner.name == "alice"


def test_hosted_bots(db_url: str, owners: dict[str, int]) -> None:
    refused(
        db_url,
        PermissionDeniedError,
        lambda s: host_bot(s, owner(s, "alice"), "greedy", "bots.greedy:GreedyBot"),
    )
    exc = refused(
        db_url, InvalidHostedBotError, lambda s: host_bot(s, owner(s, "house"), "nope", "bots.nope:Nope")
    )
    assert "bots.nope" in exc.message
    with session_scope(db_url) as session:
        bot = host_bot(session, owner(session, "house"), "greedy", "bots.greedy:GreedyBot", settings=LOOPBACK)
        assert (bot.hosted, bot.address) == ("bots.greedy:GreedyBot", None)
        assert bot.versions[0].info["name"] == "greedy"
    before = snapshot(db_url)
    with session_scope(db_url) as session:  # the same class again: nothing new
        host_bot(session, owner(session, "house"), "greedy", "bots.greedy:GreedyBot", settings=LOOPBACK)
    assert snapshot(db_url) == before
    with session_scope(db_url) as session:  # a short name stands for the house class
        bot = host_bot(session, owner(session, "house"), "greedy", "random", settings=LOOPBACK)
        assert bot.hosted == "bots.random_bot:RandomBot" and len(bot.versions) == 2
    refused(
        db_url,
        InvalidHostedBotError,
        lambda s: update_bot(s, owner(s, "house"), "greedy", "127.0.0.1:1", settings=LOOPBACK),
    )


# -- names and addresses (no database, no network) ------------------------------------------


@pytest.mark.parametrize("name", ["ab", "random", "my-bot_2", "0day", "a" * 32])
def test_good_bot_names(name: str) -> None:
    assert validate_bot_name(name) == name


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("bots.example.org:50051", ("bots.example.org", 50051)),
        ("Bots.Example.ORG:1", ("bots.example.org", 1)),
        ("203.0.113.7:65535", ("203.0.113.7", 65535)),
        ("[2001:db8::7]:50051", ("2001:db8::7", 50051)),
        (" host:80 ", ("host", 80)),
    ],
)
def test_parse_address(address: str, expected: tuple[str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize(
    "address",
    [
        "", "host", "host:", ":80", "host:0", "host:65536", "host:-1", "host:8O", "host:٣",
        "http://host:80", "host:80/path", "::1:80", "[::1]", "[nope]:80", "[::1]80",
        "bad_host:80", "-host:80", "host-.example:80", "a..b:80", "127.1:80", "2130706433:80",
        "x" * 300 + ":80",
    ],
)  # fmt: skip
def test_bad_addresses(address: str) -> None:
    with pytest.raises(InvalidAddressError) as info:
        parse_address(address)
    assert info.value.status == 400
    assert address.strip()[:20] in info.value.message


def fake_resolver(table: dict[str, list[str]]) -> Any:
    return lambda host: table.get(host, [])


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1:50051", "10.1.2.3:80", "172.16.0.1:80", "192.168.1.1:80", "169.254.169.254:80",
        "0.0.0.0:80", "224.0.0.1:80", "100.64.0.1:80", "255.255.255.255:80", "[::1]:80", "[::]:80",
        "[fe80::1]:80", "[fd00::1]:80", "[ff02::1]:80", "[::ffff:127.0.0.1]:80", "[2002:7f00:1::1]:80",
        "[64:ff9b::a00:1]:80", "localhost:80", "metadata.google.internal:80", "sneaky.example.com:80",
    ],
)  # fmt: skip
def test_internal_addresses_are_refused(address: str) -> None:
    resolver = fake_resolver(
        {
            "localhost": ["127.0.0.1", "::1"],
            "metadata.google.internal": ["169.254.169.254"],
            "sneaky.example.com": ["93.184.216.34", "10.0.0.1"],  # one internal answer is enough
        }
    )
    with pytest.raises(AddressNotAllowedError) as info:
        check_address(address, (), resolver=resolver)
    assert info.value.status == 422 and address in info.value.message


def test_public_and_allow_listed_addresses() -> None:
    resolver = fake_resolver(
        {"bots.example.org": ["93.184.216.34", "2606:2800:220:1::1"], "localhost": ["127.0.0.1"]}
    )
    assert check_address("bots.example.org:50051", resolver=resolver) == "bots.example.org:50051"
    assert check_address("8.8.8.8:53", resolver=resolver) == "8.8.8.8:53"
    assert check_address("[2001:4860:4860::8888]:443", resolver=resolver) == "[2001:4860:4860::8888]:443"
    allowed = ("127.0.0.1", "10.0.0.0/8", "LocalHost", "[::1]")
    assert check_address("127.0.0.1:5000", allowed, resolver=resolver) == "127.0.0.1:5000"
    assert check_address("10.20.30.40:5000", allowed, resolver=resolver) == "10.20.30.40:5000"
    assert check_address("localhost:5000", allowed, resolver=resolver) == "localhost:5000"
    assert check_address("[::1]:5000", allowed, resolver=resolver) == "[::1]:5000"
    with pytest.raises(AddressNotAllowedError):
        check_address("192.168.0.1:5000", allowed, resolver=resolver)
    with pytest.raises(InvalidAddressError, match="does not resolve"):
        check_address("nowhere.example.org:5000", resolver=resolver)


def test_an_unchanged_bot_keeps_its_version_whatever_its_check_warned(
    db_url: str, owners: dict[str, int]
) -> None:
    """A check's warnings (a slow notice on a busy machine, a nondeterministic choice) say how
    that check went, not what plays: re-registering the same bot at the same address with the
    same GetInfo keeps its version (and its rating) and shows the latest check's warnings."""
    warnings = iter([["EndHand took 700 ms"], [], ["StartMatch took 900 ms"]])

    def checker(address: str, settings: Settings) -> dict[str, Any]:
        info: dict[str, Any] = {"name": "steady", "version": "1.0", "max_concurrent_matches": 0}
        found = next(warnings)
        return {**info, "check_warnings": found} if found else info

    with session_scope(db_url) as session:
        register(session, "alice", "steady", "8.8.4.4:50051", checker=checker)
    for expected in ([], ["StartMatch took 900 ms"]):
        with session_scope(db_url) as session:
            alice = owner(session, "alice")
            bot = update_bot(session, alice, "steady", "8.8.4.4:50051", settings=LOOPBACK, checker=checker)
            assert [v.number for v in bot.versions] == [1]
            assert bot.versions[0].info.get("check_warnings", []) == expected

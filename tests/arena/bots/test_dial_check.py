"""Registered addresses are checked again right before a worker dials them, and the
resolution that passed is the one dialled (arena.bots.addresses.resolve_for_dial): a name that
was public at registration and points inside later (DNS rebinding) is never connected to."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from arena.bots.addresses import (
    AddressNotAllowedError,
    DialTarget,
    InvalidAddressError,
    check_address,
    resolve_for_dial,
)
from arena.play.plan import MatchPlan, RefusedPlayer, SeatPlan, make_seat_player, run_match
from bots.greedy import GreedyBot
from sdk.observation import Observation
from sdk.referee import FaultKind, RefereeConfig
from sdk.rules import STANDARD
from sdk.server import RunningServer, start_server


def resolver_of(table: dict[str, list[str]]) -> Any:
    return lambda host: table.get(host, [])


def test_a_name_is_pinned_to_the_address_that_was_checked() -> None:
    resolver = resolver_of({"bots.example.org": ["93.184.216.34", "2606:2800:220:1::1"]})
    target = resolve_for_dial("Bots.Example.org:50051", resolver=resolver)
    assert target == DialTarget("93.184.216.34:50051", "bots.example.org:50051")
    only_v6 = resolver_of({"bots.example.org": ["2606:2800:220:1::1"]})
    v6 = resolve_for_dial("bots.example.org:50051", resolver=only_v6)
    assert v6 == DialTarget("[2606:2800:220:1::1]:50051", "bots.example.org:50051")


def test_literals_and_hosts_allowed_by_name_are_dialled_as_they_are() -> None:
    assert resolve_for_dial("8.8.8.8:53") == DialTarget("8.8.8.8:53")
    assert resolve_for_dial("[2001:4860:4860::8888]:443") == DialTarget("[2001:4860:4860::8888]:443")
    # The operator trusts a name it lists: its resolution is left to the network it names.
    assert resolve_for_dial("bot-random:50051", ("bot-random",), resolver=resolver_of({})) == DialTarget(
        "bot-random:50051"
    )
    # An IP address was checked when it was registered and cannot be rebound since.
    assert resolve_for_dial("127.0.0.1:5000") == DialTarget("127.0.0.1:5000")
    assert resolve_for_dial("[::1]:5000") == DialTarget("[::1]:5000")


def test_a_name_that_now_points_inside_is_refused_at_dial_time() -> None:
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    rebinding = lambda host: next(answers)  # noqa: E731 - public first, loopback next
    assert check_address("rebind.example.com:50051", resolver=rebinding) == "rebind.example.com:50051"
    with pytest.raises(AddressNotAllowedError, match=r"resolves to the internal address 127\.0\.0\.1"):
        resolve_for_dial("rebind.example.com:50051", resolver=rebinding)
    with pytest.raises(InvalidAddressError, match="does not resolve"):
        resolve_for_dial("gone.example.com:50051", resolver=resolver_of({}))


# -- a real match: the worker's side --------------------------------------------------------


class CountingBot(GreedyBot):
    """Greedy play that counts the calls it gets (all instances, in this process)."""

    calls = 0
    lock = threading.Lock()

    def act(self, obs: Observation) -> Any:
        with CountingBot.lock:
            CountingBot.calls += 1
        return super().act(obs)


@pytest.fixture
def counting_server() -> Iterator[RunningServer]:
    CountingBot.calls = 0
    server = start_server(CountingBot, port=0, host="127.0.0.1")
    yield server
    server.stop(0)


def localhost_resolves_to_loopback() -> bool:
    try:
        return any(info[4][0] == "127.0.0.1" for info in socket.getaddrinfo("localhost", None))
    except OSError:
        return False


needs_localhost = pytest.mark.skipif(
    not localhost_resolves_to_loopback(), reason="localhost does not resolve to 127.0.0.1 here"
)


def plan_with(address: str) -> MatchPlan:
    seats = (
        SeatPlan(1, 1, "remote", address, None),
        SeatPlan(2, 2, "house", None, "greedy"),
    )
    return MatchPlan(1, 1, "dial-check", 42, 6, STANDARD, RefereeConfig(decision_deadline_ms=2000), seats)


@needs_localhost
def test_a_refused_address_is_an_unreachable_seat_and_never_dialled(counting_server: RunningServer) -> None:
    plan = plan_with(f"localhost:{counting_server.port}")
    player = make_seat_player(plan.seats[0], ())
    assert isinstance(player, RefusedPlayer)
    result = run_match(plan, player_factory=lambda seat: make_seat_player(seat, ()))
    assert [f.kind for f in result.faults] == [FaultKind.UNREACHABLE]
    assert "did not connect to 'localhost:" in result.faults[0].reason
    assert "internal address 127.0.0.1" in result.faults[0].reason
    assert result.forfeited == 0 and result.scores == [-12, 12]  # 6 hands forfeited at 2x
    assert CountingBot.calls == 0  # the bot behind the refused name never heard from us


@needs_localhost
def test_an_allowed_resolution_is_pinned_and_played_over_grpc(counting_server: RunningServer) -> None:
    plan = plan_with(f"localhost:{counting_server.port}")
    allowed = ("127.0.0.1", "::1")  # by address, not by name: the name is resolved and pinned
    player = make_seat_player(plan.seats[0], allowed)
    assert player.address == f"localhost:{counting_server.port} (127.0.0.1:{counting_server.port})"  # type: ignore[attr-defined]
    player.close()
    result = run_match(plan, player_factory=lambda seat: make_seat_player(seat, allowed))
    assert result.faults == [] and result.forfeited is None
    assert len(result.hands) == 6 and sum(result.scores) == 0
    assert CountingBot.calls > 0


# -- IPv6 forms that embed an IPv4 address --------------------------------------------------

EMBEDDING_FORMS = [
    # (form, address, internal?)
    ("IPv4-compatible loopback", "::127.0.0.1", True),
    ("IPv4-compatible private", "::10.0.0.1", True),
    ("IPv4-compatible, hex", "::7f00:1", True),
    ("IPv4-mapped loopback", "::ffff:127.0.0.1", True),
    ("IPv4-mapped metadata", "::ffff:169.254.169.254", True),
    ("SIIT (IPv4-translated) loopback", "::ffff:0:7f00:1", True),
    ("SIIT private", "::ffff:0:c0a8:101", True),
    ("local-use NAT64 loopback", "64:ff9b:1::7f00:1", True),
    ("local-use NAT64, /48 embedding", "64:ff9b:1:7f00:1::", True),
    ("local-use NAT64 of a public v4", "64:ff9b:1::808:808", True),  # never public (RFC 8215)
    ("well-known NAT64 loopback", "64:ff9b::7f00:1", True),
    ("well-known NAT64 private", "64:ff9b::a00:1", True),
    ("well-known NAT64 shared (CGN)", "64:ff9b::6440:1", True),
    ("6to4 loopback", "2002:7f00:1::1", True),
    ("6to4 private", "2002:c0a8:101::1", True),
    ("6to4 link-local", "2002:a9fe:a9fe::1", True),
    ("Teredo", "2001:0:4136:e378:8000:63bf:80ff:fffe", True),
    ("ISATAP with a private v4", "2600:1f18::5efe:a00:1", True),
    ("ISATAP (u bit) with loopback", "2600:1f18::200:5efe:7f00:1", True),
    ("well-known NAT64 of a public v4", "64:ff9b::808:808", False),
    ("6to4 of a public v4", "2002:808:808::1", False),
    ("plain public IPv6", "2606:2800:220:1::1", False),
]


@pytest.mark.parametrize(("form", "ip", "internal"), EMBEDDING_FORMS, ids=[f[0] for f in EMBEDDING_FORMS])
def test_ipv6_forms_embedding_a_non_public_ipv4_are_refused(form: str, ip: str, internal: bool) -> None:
    """As a literal, and as what a name resolves to, at registration and at dial time."""
    literal = f"[{ip}]:50051"
    named = resolver_of({"bot.example.org": [ip]})
    if internal:
        with pytest.raises(AddressNotAllowedError, match="internal address"):
            check_address(literal)
        with pytest.raises(AddressNotAllowedError, match="resolves to the internal address"):
            check_address("bot.example.org:50051", resolver=named)
        with pytest.raises(AddressNotAllowedError):
            resolve_for_dial("bot.example.org:50051", resolver=named)
    else:
        assert check_address(literal) == literal
        assert resolve_for_dial("bot.example.org:50051", resolver=named).target == literal


# -- registration: the checks dial the address that was checked ------------------------------


def can_bind(host: str) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((host, 0))
        except OSError:
            return False
    return True


class TrapServer:
    """A gRPC server that answers nothing and counts every call it gets."""

    def __init__(self, host: str, port: int):
        from concurrent import futures

        import grpc

        self.calls: list[str] = []

        class Handler(grpc.GenericRpcHandler):
            def service(inner, details: Any) -> None:  # noqa: N805 - the handler's own self
                self.calls.append(details.method)
                return None  # UNIMPLEMENTED

        pool = futures.ThreadPoolExecutor(max_workers=4)
        self.server = grpc.server(pool, options=[("grpc.so_reuseport", 0)])
        self.server.add_generic_rpc_handlers((Handler(),))
        if self.server.add_insecure_port(f"{host}:{port}") == 0:
            raise OSError(f"cannot listen on {host}:{port}")
        self.server.start()

    def stop(self) -> None:
        self.server.stop(0).wait(5)


@needs_localhost
@pytest.mark.skipif(not can_bind("127.0.0.2"), reason="127.0.0.2 is not a local address here")
@pytest.mark.parametrize("how", ["register", "update"])
def test_registration_checks_dial_only_the_address_that_was_checked(sqlite_url: str, how: str) -> None:
    """``localhost`` resolves, for the arena's check, to 127.0.0.2 (allowed, the real bot
    there) and to 127.0.0.1 on any later lookup (not allowed; a trap listens there on the
    same port, which is also where gRPC's own resolution of ``localhost`` leads). The health
    check, GetInfo, the conformance match and the protocol check all reach the real bot; the
    trap hears nothing, and the name is looked up once."""
    from arena.bots.owners import get_or_create_operator
    from arena.bots.registry import find_bot, register_bot, update_bot
    from arena.config import Settings
    from arena.store.db import dispose_engines, session_scope
    from arena.store.migrate import upgrade

    upgrade(sqlite_url)
    real = start_server(GreedyBot, port=0, host="127.0.0.2")
    trap = TrapServer("127.0.0.1", real.port)
    lookups: list[str] = []

    def rebinding(host: str) -> list[str]:
        lookups.append(host)
        return ["127.0.0.2"] if len(lookups) == 1 else ["127.0.0.1"]

    settings = Settings(database_url=sqlite_url, allowed_bot_hosts=("127.0.0.2",), decision_deadline_ms=500)
    address = f"localhost:{real.port}"
    try:
        with session_scope(sqlite_url) as session:
            owner = get_or_create_operator(session, "pinning")
            if how == "register":
                register_bot(session, owner, "pinned", address, settings=settings, resolver=rebinding)
            else:
                register_bot(session, owner, "pinned", address, settings=settings, check=False,
                             resolver=lambda host: ["127.0.0.2"])
                update_bot(session, owner, "pinned", address, settings=settings, resolver=rebinding)
        with session_scope(sqlite_url) as session:
            bot = find_bot(session, "pinned")
            assert bot is not None and bot.address == address
            assert bot.versions[-1].info["name"] == GreedyBot.name
        assert trap.calls == []
        assert lookups == ["localhost"]
    finally:
        trap.stop()
        real.stop(0)
        dispose_engines()

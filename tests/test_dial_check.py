"""Registered addresses are checked again right before a worker dials them, and the
resolution that passed is the one dialled (arena.addresses.resolve_for_dial): a name that
was public at registration and points inside later (DNS rebinding) is never connected to."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from arena.addresses import (
    AddressNotAllowedError,
    DialTarget,
    InvalidAddressError,
    check_address,
    resolve_for_dial,
)
from arena.match_runner import MatchPlan, RefusedPlayer, SeatPlan, make_seat_player, run_match
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

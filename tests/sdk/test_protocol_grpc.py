"""The protocol over real gRPC on loopback: the bot server, the referee's GrpcPlayer, and
what each way of misbehaving is charged as. No mocks: every bot here is a real server.

The broken bots are in tests/helpers/grpc_bots.py (tests/sdk/test_conformance.py uses them too).
What the referee charges each fault kind over a whole match, and the forfeits, is
tests/arena/play/test_faults.py's: here, the transport's verdict on each call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
from helpers.grpc_bots import (
    CrashBot,
    HangBot,
    HookCrashBot,
    IllegalBot,
    MalformedBot,
    OutOfRangeBot,
    a_decision,
    raw_server,
    serving,
)
from helpers.net import free_port

from bots.random_bot import RandomBot
from sdk.bot import Bot, HandResult, MatchInfo, MatchSummary
from sdk.grpc_player import GrpcPlayer
from sdk.players import HOUSE_BOTS, load_bot_class
from sdk.protocol import PROTOCOL_VERSION, SERVICE_NAME, bot_pb2_grpc
from sdk.protocol import bot_pb2 as pb
from sdk.referee import (
    DecisionRequest,
    FaultKind,
    LocalPlayer,
    MatchResult,
    Player,
    PlayerFaultError,
    RefereeConfig,
    play_match,
)
from sdk.rules import Rules
from sdk.server import RunningServer, start_server

# -- broken bots ----------------------------------------------------------------------------


# -- the server -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def random_server() -> Iterator[RunningServer]:
    with serving(RandomBot) as running:
        yield running


def test_health_service_says_serving(random_server: RunningServer) -> None:
    with grpc.insecure_channel(random_server.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE_NAME):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=2)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as err:
            stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=2)
        assert err.value.code() is grpc.StatusCode.NOT_FOUND


def test_reflection_describes_the_service(random_server: RunningServer) -> None:
    with grpc.insecure_channel(random_server.address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = set(database.get_services())
        assert {SERVICE_NAME, "grpc.health.v1.Health"} <= services
        file = database.FindFileContainingSymbol(SERVICE_NAME)
        assert file.package == "tonk.v1"
        assert {m.name for m in file.message_type} >= {"DecideRequest", "DecideResponse", "Observation"}
        assert [m.name for m in file.service[0].method] == [
            "GetInfo",
            "StartMatch",
            "Decide",
            "EndHand",
            "EndMatch",
            "EndDeal",
        ]


def test_get_info(random_server: RunningServer) -> None:
    with grpc.insecure_channel(random_server.address) as channel:
        info = bot_pb2_grpc.BotServiceStub(channel).GetInfo(pb.GetInfoRequest(), timeout=2)
    assert (info.name, info.version, info.protocol_version) == ("random", RandomBot.version, PROTOCOL_VERSION)
    player = GrpcPlayer(random_server.address)
    try:
        assert player.describe()["name"] == "random"
    finally:
        player.close()


def test_running_server_unpacks_as_server_and_port(random_server: RunningServer) -> None:
    server, port = random_server
    assert isinstance(server, grpc.Server) and port == random_server.port > 0


def test_busy_port_is_refused(random_server: RunningServer) -> None:
    with pytest.raises(OSError, match="cannot listen"):
        start_server(RandomBot, port=random_server.port)


def test_a_bot_exception_is_an_internal_status_and_the_server_lives_on() -> None:
    with serving(CrashBot) as running, grpc.insecure_channel(running.address) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)
        for _ in range(2):
            with pytest.raises(grpc.RpcError) as err:
                stub.Decide(pb.DecideRequest.FromString(_wire(a_decision())), timeout=2)
            assert err.value.code() is grpc.StatusCode.INTERNAL
            assert err.value.details() == "RuntimeError: boom in act"
        assert stub.GetInfo(pb.GetInfoRequest(), timeout=2).name == "crash"


def _wire(request: DecisionRequest) -> bytes:
    from sdk.wire import encode_decide_request

    return encode_decide_request(request)


def test_an_invalid_request_is_invalid_argument(random_server: RunningServer) -> None:
    with grpc.insecure_channel(random_server.address) as channel:
        decide = channel.unary_unary(f"/{SERVICE_NAME}/Decide")
        with pytest.raises(grpc.RpcError) as err:
            decide(b"\xff\xff\xff", timeout=2)
        assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_a_decide_without_start_match_still_gets_an_answer(random_server: RunningServer) -> None:
    # grpcurl users and restarted servers: the bot is started from the request itself.
    with GrpcPlayer(random_server.address) as player:
        reply = player.act(a_decision(match_id="never-started"))
    assert type(reply) is int and 0 <= reply < 3


def test_each_match_and_seat_gets_its_own_bot_and_is_cleaned_up() -> None:
    made: list[Bot] = []

    def factory() -> Bot:
        bot = RandomBot()
        made.append(bot)
        return bot

    with serving(factory) as running:
        players = [GrpcPlayer(running.address) for _ in range(3)]
        result = play_match(players, seed=9, hands=3, match_id="own-bots")
        for p in players:
            p.close()
        assert not result.faults
        assert running.servicer.active_seats == 0  # EndMatch dropped them
    started = [b for b in made if b.match is not None]
    assert sorted(b.match.seat for b in started if b.match) == [0, 1, 2]


def test_idle_match_seats_are_dropped() -> None:
    with serving(RandomBot, idle_timeout_s=0.2) as running, GrpcPlayer(running.address) as player:
        info = MatchInfo("abandoned", 0, ("a", "b"), Rules(), 3)
        player.match_start(info)  # and its referee never comes back
        assert running.servicer.active_seats == 1
        time.sleep(0.3)
        player.match_start(MatchInfo("next", 0, ("a", "b"), Rules(), 3))  # a call sweeps
        assert running.servicer.active_seats == 1  # only "next" is left


def test_a_raising_hook_does_not_spoil_the_match() -> None:
    with serving(HookCrashBot) as running:
        players: list[Player] = [GrpcPlayer(running.address), LocalPlayer(RandomBot)]
        remote = play_match(players, seed=2, hands=4, match_id="hooks")
        local = play_match(
            [LocalPlayer(RandomBot), LocalPlayer(RandomBot)], seed=2, hands=4, match_id="hooks"
        )
        players[0].close()
    assert not remote.faults and remote.scores == local.scores


# -- the same match in-process and over gRPC -------------------------------------------------------


HOUSE = ("random", "greedy", "heuristic")  # a house bot that does not load fails the tests


@pytest.fixture(scope="module")
def house_servers() -> Iterator[dict[str, RunningServer]]:
    running = {name: start_server(load_bot_class(name)) for name in HOUSE}
    yield running
    for server in running.values():
        server.stop(0)


def _same_results(local: MatchResult, remote: MatchResult) -> None:
    assert not local.faults and not remote.faults, (local.faults, remote.faults)
    assert remote.scores == local.scores
    assert [h.record.to_json() for h in remote.hands] == [h.record.to_json() for h in local.hands]


@pytest.mark.parametrize(
    ("seats", "rules"),
    [
        (["random", "random"], Rules()),
        (["greedy", "random", "heuristic"], Rules(hit_lock=True)),
        (["heuristic", "greedy"], Rules(book_layoff=True, ace_high_or_low=True)),
        (["greedy", "heuristic", "random", "greedy", "heuristic", "random"], Rules(stock_reshuffle=True)),
        (
            ["greedy", "greedy", "greedy", "greedy"],
            Rules(discard_pickup_may_return=True, meld_out_double=True),
        ),
    ],
    ids=["2-random", "3-mixed-hit-lock", "2-layoffs", "6-mixed-reshuffle", "4-greedy-variants"],
)
def test_grpc_match_equals_in_process_match(
    house_servers: dict[str, RunningServer], seats: list[str], rules: Rules
) -> None:
    names = [f"{i}:{s}" for i, s in enumerate(seats)]
    config = RefereeConfig(decision_deadline_ms=5000)
    local = play_match(
        [LocalPlayer(load_bot_class(s)) for s in seats],
        77,
        12,
        match_id="same",
        names=names,
        rules=rules,
        config=config,
    )
    remote_players = [GrpcPlayer(house_servers[s].address) for s in seats]
    try:
        remote = play_match(remote_players, 77, 12, match_id="same", names=names, rules=rules, config=config)
    finally:
        for p in remote_players:
            p.close()
    _same_results(local, remote)


def test_many_matches_at_once_on_one_server(house_servers: dict[str, RunningServer]) -> None:
    address = house_servers["random"].address
    results: dict[int, MatchResult] = {}

    def run(k: int) -> None:
        players = [GrpcPlayer(address) for _ in range(2 + k % 3)]
        try:
            results[k] = play_match(players, 100 + k, 10, match_id=f"parallel-{k}")
        finally:
            for p in players:
                p.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, remote in results.items():
        local = play_match(
            [LocalPlayer(RandomBot) for _ in range(2 + k % 3)], 100 + k, 10, match_id=f"parallel-{k}"
        )
        _same_results(local, remote)
    assert len(results) == 6
    assert house_servers["random"].servicer.active_seats == 0


# -- faults -----------------------------------------------------------------------------------------


def _fault_of(address: str, deadline_ms: int = 1000) -> PlayerFaultError:
    # Decide alone: the server starts the bot from the request.
    with GrpcPlayer(address) as player, pytest.raises(PlayerFaultError) as err:
        player.act(a_decision(deadline_ms, match_id="f"))
    return err.value


def test_timeout() -> None:
    with serving(HangBot) as running:
        started = time.perf_counter()
        fault = _fault_of(running.address, deadline_ms=200)
        assert time.perf_counter() - started < 2
    assert fault.kind is FaultKind.TIMEOUT and "200 ms" in fault.reason


def test_crash() -> None:
    with serving(CrashBot) as running:
        fault = _fault_of(running.address)
    assert fault.kind is FaultKind.CRASH and "RuntimeError: boom in act" in fault.reason


def test_unreachable() -> None:
    fault = _fault_of(f"127.0.0.1:{free_port()}")
    assert fault.kind is FaultKind.UNREACHABLE


def test_server_gone_mid_match_is_unreachable() -> None:
    running = start_server(RandomBot)
    player = GrpcPlayer(running.address)
    player.match_start(MatchInfo("gone", 0, ("a", "b"), Rules(), 1))
    assert type(player.act(a_decision(match_id="gone"))) is int
    running.stop(0)
    with pytest.raises(PlayerFaultError) as err:
        player.act(a_decision(match_id="gone"))
    player.close()
    assert err.value.kind is FaultKind.UNREACHABLE


def test_malformed_reply_from_a_python_bot() -> None:
    with serving(MalformedBot) as running:
        fault = _fault_of(running.address)
    assert fault.kind is FaultKind.MALFORMED and "names no action" in fault.reason


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (b"\xff\xff\xff\xff", "not a DecideResponse"),
        (b"", "names no action"),
        (pb.DecideResponse(text="discard 13z").SerializeToString(), "unreadable action"),
        (b"\x0a" + b"\x80\x80\x40" + b"x" * (1 << 20), "too large"),  # 1 MiB of unknown field
    ],
    ids=["garbage", "empty", "bad-text", "huge"],
)
def test_malformed_replies_from_a_raw_server(reply: bytes, reason: str) -> None:
    with raw_server({"Decide": lambda data, ctx: reply}) as address:
        fault = _fault_of(address)
    assert fault.kind is FaultKind.MALFORMED and reason in fault.reason


def test_out_of_range_index_and_illegal_action_are_left_to_the_referee() -> None:
    for bot, reason in ((OutOfRangeBot, "out of range"), (IllegalBot, "comes after the draw")):
        with serving(bot) as running:
            players: list[Player] = [GrpcPlayer(running.address), LocalPlayer(RandomBot)]
            result = play_match(players, 1, 5, config=RefereeConfig(max_faults=2))
            players[0].close()
        kinds = {f.kind for f in result.faults}
        assert kinds == {FaultKind.ILLEGAL}, result.faults
        assert reason in result.faults[0].reason and result.forfeited == 0


def test_unimplemented_decide_is_a_crash() -> None:
    with raw_server({}) as address:
        fault = _fault_of(address)
    assert fault.kind is FaultKind.CRASH and "UNIMPLEMENTED" in fault.reason


def test_a_bot_with_only_decide_can_play() -> None:
    # Lifecycle notices are optional: a minimal bot in another language answers UNIMPLEMENTED.
    with raw_server({"Decide": lambda data, ctx: pb.DecideResponse(action_index=0).SerializeToString()}) as a:
        players: list[Player] = [GrpcPlayer(a), LocalPlayer(RandomBot)]
        result = play_match(players, 3, 4)
        assert players[0].describe()["name"] == a  # no GetInfo: named by its address
        players[0].close()
    assert not result.faults


def test_every_call_has_a_deadline() -> None:
    # A hanging lifecycle call costs at most the lifecycle timeout.
    hang = threading.Event()

    def start(data: bytes, ctx: grpc.ServicerContext) -> bytes:
        hang.wait(10)
        return b""

    with raw_server({"StartMatch": start, "EndHand": start, "EndMatch": start, "GetInfo": start}) as address:
        player = GrpcPlayer(address, lifecycle_timeout_s=0.2)
        began = time.perf_counter()
        assert player.describe()["name"] == address
        with pytest.raises(PlayerFaultError) as err:
            player.match_start(MatchInfo("slow", 0, ("a", "b"), Rules(), 1))
        assert err.value.kind is FaultKind.TIMEOUT
        with pytest.raises(PlayerFaultError):
            player.hand_end(HandResult("slow", 0, {}, (0, 0), (0, 0)))
        with pytest.raises(PlayerFaultError):
            player.match_end(MatchSummary("slow", (0, 0), 1))
        assert time.perf_counter() - began < 2.5
        hang.set()
        player.close()


def test_house_bot_names_resolve() -> None:
    assert "random" in HOUSE_BOTS and load_bot_class("random") is RandomBot

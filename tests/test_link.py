"""The bot link (protos/tonk/v1/link.proto) over real sockets: a real gateway on its own loop,
bots connecting with the SDK's LinkClient or with hand-made streams, workers' calls relayed
with the LinkPlayer the referee uses. Every authentication and bad-input case, each ending
only the offending connection; capacity, session pinning, and the grace of an offline bot."""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from helpers.arena import charged_faults
from sqlalchemy import delete, func, select

from arena.bots.owners import create_owner
from arena.config import Settings
from arena.link import connection as connection_module
from arena.link import directory
from arena.link import gateway as gateway_module
from arena.link.gateway import Gateway, GatewayThread
from arena.link.player import (
    LinkPlayer,
    RelayStream,
    RelayStreamError,
    RelayTransport,
    Routes,
    decide_call,
)
from arena.play.offline import must_wait
from arena.store.db import session_scope
from arena.store.models import Bot, BotVersion, LinkConnection, Match, Owner
from bots.random_bot import RandomBot
from sdk.bot import Bot as SdkBot
from sdk.bot import MatchInfo
from sdk.link import LinkClient, LinkRefusedError
from sdk.protocol import LINK_SERVICE_NAME, RELAY_SERVICE_NAME
from sdk.protocol import bot_pb2 as pb
from sdk.protocol import link_pb2 as lpb
from sdk.referee import FaultKind, LocalPlayer, PlayerFaultError, RefereeConfig, play_match
from sdk.rules import STANDARD


@dataclasses.dataclass
class Arena:
    url: str
    gateway: Gateway
    tokens: dict[str, str]
    bot_ids: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gateway.port}"


@pytest.fixture
def arena(sqlite_url: str) -> Iterator[Arena]:
    tokens = {}
    with session_scope(sqlite_url) as session:
        for name in ("alice", "bob"):
            _owner, tokens[name] = create_owner(session, name)
        owner = session.scalars(select(Owner).where(Owner.name == "bob")).one()
        dialled = Bot(name="dialled", owner=owner, address="bots.example.org:50051", status="active")
        dialled.versions.append(BotVersion(number=1, address="bots.example.org:50051", info={}))
        session.add(dialled)
    settings = Settings(database_url=sqlite_url, decision_deadline_ms=2000)
    running = GatewayThread(Gateway(settings, max_connections_per_owner=3))
    gateway = running.start()
    gateway.started -= directory.GATEWAY_LEASE_S  # as if up a while (see the test of a fresh gateway)
    try:
        yield Arena(sqlite_url, gateway, tokens)
    finally:
        running.stop()


class RawLink:
    """A hand-made connection: send raw frames, read what the gateway sends."""

    def __init__(self, address: str, token: str | None):
        self.channel = grpc.insecure_channel(address)
        self.out: queue.Queue[bytes | None] = queue.Queue()
        metadata = () if token is None else (("authorization", f"Bearer {token}"),)
        connect = self.channel.stream_stream(f"/{LINK_SERVICE_NAME}/Connect")
        self.call = connect(self._frames(), metadata=metadata, timeout=30)
        self.received: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _frames(self) -> Iterator[bytes]:
        while (item := self.out.get()) is not None:
            yield item

    def _read(self) -> None:
        try:
            for data in self.call:
                self.received.put(lpb.ConnectResponse.FromString(data))
        except grpc.RpcError as exc:
            self.received.put(exc)

    def send(self, message: lpb.ConnectRequest | bytes) -> None:
        self.out.put(message if isinstance(message, bytes) else message.SerializeToString())

    def hello(self, name: str, capacity: int = 1) -> None:
        self.send(lpb.ConnectRequest(hello=lpb.LinkHello(bot_name=name, capacity=capacity)))

    def next(self, timeout: float = 10.0) -> Any:
        return self.received.get(timeout=timeout)

    def closed_with(self, timeout: float = 10.0) -> grpc.RpcError:
        """The status the gateway ended the stream with (skipping what came before)."""
        deadline = time.monotonic() + timeout
        while True:
            item = self.received.get(timeout=max(0.01, deadline - time.monotonic()))
            if isinstance(item, grpc.RpcError):
                return item

    def close(self) -> None:
        self.out.put(None)
        self.call.cancel()
        self.channel.close()


class Client:
    """The SDK's LinkClient in a thread."""

    def __init__(self, arena: Arena, owner: str, name: str, bot: Any = RandomBot, capacity: int = 2):
        self.link = LinkClient(bot, arena.address, arena.tokens[owner], name, capacity=capacity)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.link.run()
        except BaseException as exc:
            self.errors.append(exc)

    def wait(self, timeout: float = 60.0) -> Client:
        if not self.link.connected.wait(timeout):
            raise AssertionError(f"not connected: {self.errors or self.link.stats}")
        return self

    def stop(self) -> None:
        self.link.stop()
        self.thread.join(10)


@pytest.fixture
def clients() -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for client in made:
        client.stop()


def bot_id(arena: Arena, name: str) -> int:
    with session_scope(arena.url) as session:
        return int(session.scalars(select(Bot.id).where(Bot.name == name)).one())


def link_player(arena: Arena, name: str, *, secret: str = "") -> LinkPlayer:
    return LinkPlayer(name, RelayTransport(bot_id(arena, name), Routes(arena.url, secret)))


def welcomed(link: RawLink) -> lpb.LinkWelcome:
    """Answer the admission check's calls as a minimal bot would, until the welcome."""
    servicer_bot = RandomBot()
    while True:
        item = link.next(timeout=60)
        assert not isinstance(item, grpc.RpcError), item
        if item.WhichOneof("message") == "welcome":
            return item.welcome
        call = item.call
        reply = lpb.LinkReply(call_id=call.call_id)
        kind = call.WhichOneof("request")
        if kind == "decide":
            from sdk.messages import decision_from_proto

            request = decision_from_proto(call.decide)
            choice = servicer_bot.act(request.observation)
            reply.decide.CopyFrom(
                pb.DecideResponse(action_index=choice if isinstance(choice, int) else 0)
            )
        elif kind == "get_info":
            reply.get_info.CopyFrom(pb.GetInfoResponse(name="raw", protocol_version="tonk.v1"))
        else:
            getattr(reply, kind).SetInParent()
        link.send(lpb.ConnectRequest(reply=reply))


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
    monkeypatch.setattr(gateway_module, "HELLO_TIMEOUT_S", 0.5)
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


@pytest.fixture
def raw(arena: Arena, clients: list[Client]) -> Iterator[RawLink]:
    """A hand-made connection of a registered bot, welcomed, next to a well-behaved bot."""
    clients.append(Client(arena, "bob", "bystander").wait())
    link = RawLink(arena.address, arena.tokens["alice"])
    link.hello("rawbot")
    welcome = welcomed(link)
    assert welcome.registered and welcome.limits.max_message_bytes == gateway_module.MAX_MESSAGE_BYTES
    yield link
    link.close()
    # The other bot never noticed.
    assert link_player(arena, "bystander").describe()["name"] == "random"


def _status(link: RawLink) -> tuple[grpc.StatusCode, str]:
    error = link.closed_with()
    return error.code(), error.details() or ""


def test_garbage_is_answered_invalid_argument(raw: RawLink) -> None:
    raw.send(b"\x0a\xff\xff\xff\xff\x0f")
    code, details = _status(raw)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "is not a ConnectRequest" in details


def test_a_reply_to_a_call_never_made_ends_the_connection(raw: RawLink) -> None:
    raw.send(
        lpb.ConnectRequest(reply=lpb.LinkReply(call_id=10_000, decide=pb.DecideResponse(action_index=0)))
    )
    code, details = _status(raw)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "call 10000, which was never made" in details


def test_a_second_hello_ends_the_connection(raw: RawLink) -> None:
    raw.hello("rawbot")
    code, details = _status(raw)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "second hello" in details


def test_a_message_over_the_size_limit_ends_the_connection(raw: RawLink) -> None:
    text = "x" * (gateway_module.MAX_MESSAGE_BYTES + 10)
    big = lpb.LinkReply(call_id=1, error=lpb.LinkError(code=13, message=text))
    raw.send(lpb.ConnectRequest(reply=big))
    code, _details = _status(raw)
    assert code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT)


def test_late_replies_get_a_notice_and_a_flood_ends_the_connection(raw: RawLink) -> None:
    # Call 1 was answered during the admission check: answering it again is a stray reply.
    stray = lpb.ConnectRequest(reply=lpb.LinkReply(call_id=1, get_info=pb.GetInfoResponse()))
    raw.send(stray)
    notice = raw.next()
    assert notice.WhichOneof("message") == "notice" and notice.notice.kind == "late_reply"
    for _ in range(connection_module.MAX_STRAY_PER_MINUTE + 1):
        raw.send(stray)
    code, details = _status(raw)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "answer no waiting call" in details


# -- relaying -------------------------------------------------------------------------------


def test_a_worker_needs_the_gateway_secret(arena: Arena, clients: list[Client]) -> None:
    clients.append(Client(arena, "alice", "secretive").wait())
    from arena.link.player import GatewayRelayError

    transport = RelayTransport(bot_id(arena, "secretive"), Routes(arena.url, "wrong"))
    # The stored secret is used when the gateway made its own; a wrong configured one is not.
    good = LinkPlayer("secretive", transport)
    assert good.describe()["name"] == "random"
    gw_id = arena.gateway.id
    with session_scope(arena.url) as session:
        from arena.store.models import LinkGateway

        session.get(LinkGateway, gw_id).secret = None  # type: ignore[union-attr]
    bad = LinkPlayer("secretive", RelayTransport(bot_id(arena, "secretive"), Routes(arena.url, "wrong")))
    with pytest.raises(GatewayRelayError, match="UNAUTHENTICATED"):
        bad.act(_decision())


def _decision() -> Any:
    from sdk.dealing import deck_order
    from sdk.engine import HandState
    from sdk.observation import observe
    from sdk.referee import DecisionRequest

    state = HandState.deal(deck_order(7, 0), 2, 0, STANDARD)
    while state.outcome is not None:  # pragma: no cover - a TONK deal; seed 7 has none
        raise AssertionError("seed 7 deals a TONK")
    obs = observe(state, state.to_act, ("a", "b"), (0, 0), 0, 1)
    return DecisionRequest("m", 0, "m/0/0", obs, 1000)


def test_calls_reach_only_the_bot_they_are_for(arena: Arena, clients: list[Client]) -> None:
    class Named(RandomBot):
        name = "second"

    clients.append(Client(arena, "alice", "first").wait())
    clients.append(Client(arena, "alice", "second", bot=Named).wait())
    assert link_player(arena, "first").describe()["name"] == "random"
    assert link_player(arena, "second").describe()["name"] == "second"


def test_faults_through_the_link_are_those_of_a_dialled_bot(arena: Arena, clients: list[Client]) -> None:
    class Slow(RandomBot):
        match_id = ""

        def start_match(self, info: MatchInfo) -> None:
            self.match_id = info.match_id

        def act(self, obs: Any) -> Any:
            if self.match_id == "faulty" and obs.hand_index == 1:
                time.sleep(0.3)
            if self.match_id == "faulty" and obs.hand_index >= 2:
                raise ValueError("bad hand")
            return super().act(obs)

    clients.append(Client(arena, "alice", "slowpoke", bot=Slow).wait())
    player = link_player(arena, "slowpoke")
    config = RefereeConfig(decision_deadline_ms=150, time_bank_ms=0, max_faults=10)
    result = play_match([player, LocalPlayer(RandomBot)], 11, 8, match_id="faulty", config=config)
    kinds = {(f.hand_index, f.kind) for f in result.faults if f.seat == 0}
    assert (1, FaultKind.TIMEOUT) in kinds
    crashes = [f for f in result.faults if f.kind is FaultKind.CRASH]
    assert crashes and all(f.hand_index >= 2 for f in crashes)
    assert "INTERNAL" in crashes[0].reason and "bad hand" in crashes[0].reason
    assert {f.kind for f in result.faults} <= {FaultKind.TIMEOUT, FaultKind.CRASH}


def test_a_bot_that_is_not_connected_is_unreachable(arena: Arena, clients: list[Client]) -> None:
    client = Client(arena, "alice", "gone").wait()
    player = link_player(arena, "gone")
    player.match_start(MatchInfo("m", 0, ("gone", "x"), STANDARD, 1, 0, 1000, 0))
    client.stop()
    deadline = time.monotonic() + 10
    with pytest.raises(PlayerFaultError) as caught:
        while time.monotonic() < deadline:  # until the gateway has seen the stream end
            player.act(_decision())
            time.sleep(0.1)
    assert caught.value.kind is FaultKind.UNREACHABLE


def test_capacities_add_up_and_sessions_spread(arena: Arena, clients: list[Client]) -> None:
    a = Client(arena, "alice", "twin", capacity=2).wait()
    b = Client(arena, "alice", "twin", capacity=3).wait()
    clients += [a, b]
    twin = bot_id(arena, "twin")
    with session_scope(arena.url) as session:
        assert directory.connected_capacity(session, twin) == 5
        assert directory.link_status(session, [twin])[twin].connections == 2
    before = (a.link.stats.calls, b.link.stats.calls)
    for _ in range(5):  # five match seats: the gateway fills by capacity
        link_player(arena, "twin").match_start(MatchInfo("m", 0, ("twin", "x"), STANDARD, 1, 0, 1000, 0))
    assert a.link.stats.calls - before[0] == 2 and b.link.stats.calls - before[1] == 3
    b.stop()
    wait_until(lambda: _capacity(arena, twin) == 2)
    a.stop()
    wait_until(lambda: _capacity(arena, twin) == 0)


def _capacity(arena: Arena, bot: int) -> int:
    with session_scope(arena.url) as session:
        return directory.connected_capacity(session, bot)


def relay_server(methods: dict[str, grpc.RpcMethodHandler]) -> tuple[grpc.Server, str]:
    """A started gRPC server on loopback with only ``methods`` of the relay service (a
    stand-in gateway), and its address."""
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(RELAY_SERVICE_NAME, methods),))
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    return server, address


def slow_while(event: threading.Event, seconds: float) -> type[RandomBot]:
    """A random bot that thinks ``seconds`` a decision while ``event`` is set."""

    class SlowWhile(RandomBot):
        def act(self, obs: Any) -> Any:
            if event.is_set():
                time.sleep(seconds)
            return super().act(obs)

    return SlowWhile


def wait_until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_a_match_with_an_offline_bot_waits_within_its_grace(arena: Arena, clients: list[Client]) -> None:
    import datetime as dt

    from arena.tournaments.lifecycle import create_tournament

    client = Client(arena, "alice", "sleepy").wait()
    clients.append(Client(arena, "bob", "awake").wait())
    with session_scope(arena.url) as session:
        ids = [bot_id(arena, "sleepy"), bot_id(arena, "awake")]
        tournament = create_tournament(
            session, name="t", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=1,
            config={"offline_grace_s": 30},
        )
        match_id = session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)).first()
        assert not must_wait(session, match_id, 60)  # both online: play
    client.stop()
    wait_until(lambda: _capacity(arena, ids[0]) == 0)
    with session_scope(arena.url) as session:
        assert must_wait(session, match_id, 60)  # starts the grace period
        since = session.get(Match, match_id).waiting_since  # type: ignore[union-attr]
        assert since is not None
        later = since.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=31)
        assert not must_wait(session, match_id, 60, now=later)  # grace over: play and fault
    with session_scope(arena.url) as session:
        from arena.play.lifecycle import MatchLife
        from arena.tournaments.lifecycle import start_tournament

        start_tournament(session, tournament.id)
        assert MatchLife(arena.url, match_id, "here:1").claim(session) is None
        # Claimed: a later wait (e.g. after its gateway died) gets its whole grace again.
        assert session.get(Match, match_id).waiting_since is None  # type: ignore[union-attr]


def test_a_bot_gone_before_the_store_knows_waits_and_is_charged_only_after_its_grace(
    arena: Arena, clients: list[Client]
) -> None:
    """The store lags a gateway by a moment: a bot killed just now still has its row, so a
    worker claims its match. StartMatch finds it gone: within the grace that is a wait (the
    match is handed back, nothing recorded); once the grace is over it is the bot's fault."""
    import datetime as dt

    from arena.play.lifecycle import Outcome
    from arena.runtime.jobs import play_match_job
    from arena.store.models import FaultRecord
    from arena.tournaments.lifecycle import create_tournament, start_tournament

    client = Client(arena, "alice", "flaky").wait()
    clients.append(Client(arena, "bob", "steady").wait())
    ids = [bot_id(arena, "flaky"), bot_id(arena, "steady")]
    with session_scope(arena.url) as session:
        tournament = create_tournament(
            session, name="t", bot_ids=ids, table_sizes=[2], deals_per_table=1, hands_per_match=1,
            config={"offline_grace_s": 30},
        )
        start_tournament(session, tournament.id)
        match_id = session.scalars(select(Match.id).where(Match.tournament_id == tournament.id)).first()
        owner = session.scalars(select(Bot.owner_id).where(Bot.id == ids[0])).one()
    client.stop()
    wait_until(lambda: _capacity(arena, ids[0]) == 0)
    with session_scope(arena.url) as session:  # the store still says it is connected here
        directory.add_connection(session, "stale", arena.gateway.id, ids[0], owner, 1, "gone")

    assert play_match_job(match_id, arena.url) == Outcome.WAITING
    with session_scope(arena.url) as session:
        match = session.get(Match, match_id)
        assert match is not None and match.status == "pending" and match.waiting_since is not None
        assert session.scalar(select(func.count(FaultRecord.id))) == 0
        match.waiting_since = match.waiting_since - dt.timedelta(seconds=31)  # its grace is over

    assert play_match_job(match_id, arena.url) == "done"
    with session_scope(arena.url) as session:
        faults = session.execute(charged_faults(FaultRecord.bot_id, FaultRecord.kind)).all()
        assert faults and set(faults) == {(ids[0], "unreachable")}


def test_a_connection_row_that_outlived_its_connection_is_pruned(arena: Arena, clients: list[Client]) -> None:
    """However a connection's removal was lost (a cancelled task, a crash between two
    writes), the gateway's heartbeat deletes rows of its own that it does not hold open,
    and leaves those it holds and other gateways' alone."""
    import datetime as dt

    from arena.store.models import LinkGateway, utcnow

    clients.append(Client(arena, "alice", "alive").wait())
    alive = bot_id(arena, "alive")
    with session_scope(arena.url) as session:
        owner = session.scalars(select(Bot.owner_id).where(Bot.id == alive)).one()
        now = utcnow()
        session.add(LinkGateway(id="elsewhere", address="10.0.0.9:1", started_at=now, heartbeat_at=now))
        session.flush()
        directory.add_connection(session, "ghost", arena.gateway.id, alive, owner, 3, "gone")
        directory.add_connection(session, "theirs", "elsewhere", alive, owner, 1, "far")
        old = utcnow() - dt.timedelta(seconds=60)
        for row in session.scalars(select(LinkConnection).where(LinkConnection.id.in_(["ghost", "theirs"]))):
            row.connected_at = old
    wait_until(lambda: _capacity(arena, alive) == 2 + 1)  # the ghost's 3 gone: ours 2, theirs 1
    with session_scope(arena.url) as session:
        ids = set(session.scalars(select(LinkConnection.id)))
        assert "ghost" not in ids and "theirs" in ids and len(ids) == 2
        session.execute(delete(LinkConnection).where(LinkConnection.id == "theirs"))
        session.execute(delete(LinkGateway).where(LinkGateway.id == "elsewhere"))


def test_decide_calls_are_built_by_concatenation_like_the_message() -> None:
    request = b"\x0a\x01m"
    built = lpb.LinkCall.FromString(decide_call(request, 1500))
    assert built.deadline_ms == 1500 and built.decide.match_id == "m" and built.call_id == 0


def test_a_fresh_gateway_does_not_charge_a_bot_that_has_not_reconnected_yet(
    arena: Arena, clients: list[Client]
) -> None:
    from arena.link.player import GatewayLostError

    client = Client(arena, "alice", "returning").wait()
    player = link_player(arena, "returning")
    player.match_start(MatchInfo("m", 0, ("returning", "x"), STANDARD, 1, 0, 1000, 0))
    client.stop()
    wait_until(lambda: _capacity(arena, bot_id(arena, "returning")) == 0)
    arena.gateway.started = time.monotonic()  # as if it had just been restarted
    with pytest.raises(PlayerFaultError) as caught:  # it had reconnected here: its own fault
        player.act(_decision())
    assert caught.value.kind is FaultKind.UNREACHABLE
    arena.gateway.seen.clear()  # as if it had not reconnected since the restart
    transport = RelayTransport(bot_id(arena, "returning"), Routes(arena.url))
    gw = arena.gateway  # where the worker last saw the bot, as a worker's cached route would say
    transport._route = directory.GatewayRoute(gw.id, gw.advertise, gw.secret, 1)
    with pytest.raises(GatewayLostError, match="just started"):
        LinkPlayer("returning", transport).act(_decision())


def test_the_dashboard_shows_how_a_connected_bot_plays(arena: Arena, clients: list[Client]) -> None:
    from dashboard import create_app

    app = create_app({"DATABASE_URL": arena.url, "TESTING": True, "CACHE_REFRESH_SECONDS": 0.0})
    web = app.test_client()
    client = Client(arena, "alice", "shown", capacity=3).wait()
    detail = web.get("/api/v1/bots/shown").get_json()["bot"]
    assert detail["plays"] == "connected"
    assert detail["link"] == {"online": True, "connections": 1, "capacity": 3}
    page = web.get("/bots/shown").get_data(as_text=True)
    assert "connected now" in page and "capacity 3" in page
    assert web.get("/api/v1/bots/dialled").get_json()["bot"]["plays"] == "dialled"
    board = {r["bot"]: r for r in web.get("/api/v1/leaderboard").get_json()["leaderboard"]}
    assert board["shown"]["connected"] and board["shown"]["online"]
    client.stop()
    wait_until(lambda: _capacity(arena, bot_id(arena, "shown")) == 0)
    board = {r["bot"]: r for r in web.get("/api/v1/leaderboard").get_json()["leaderboard"]}
    assert board["shown"]["online"] is False and board["dialled"]["online"] is None
    assert "offline" in web.get("/").get_data(as_text=True)
    assert "offline" in web.get("/bots/shown").get_data(as_text=True)


def test_calls_in_flight_per_connection_are_limited(
    raw: RawLink, arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection_module, "MAX_CALLS_IN_FLIGHT", 2)
    request = _decision()
    slow = dataclasses.replace(request, deadline_ms=1500)
    faults: list[PlayerFaultError] = []

    def ask() -> None:  # the raw bot never answers
        try:
            link_player(arena, "rawbot").act(slow)
        except PlayerFaultError as exc:
            faults.append(exc)

    callers = [threading.Thread(target=ask) for _ in range(2)]
    for t in callers:
        t.start()
    wait_until(lambda: raw.received.qsize() >= 2)  # both calls are out, unanswered
    with pytest.raises(PlayerFaultError) as third:
        link_player(arena, "rawbot").act(request)
    assert third.value.kind is FaultKind.UNREACHABLE and "2 calls unanswered" in third.value.reason
    for t in callers:
        t.join()
    assert [f.kind for f in faults] == [FaultKind.TIMEOUT, FaultKind.TIMEOUT]


def test_tonk_serve_connect_fails_clearly(
    arena: Arena, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdk.cli import main as tonk

    monkeypatch.delenv("TONK_TOKEN", raising=False)
    monkeypatch.delenv("TONK_ARENA", raising=False)
    assert tonk(["serve", "random", "--connect", "--link", arena.address, "--name", "x1"]) == 2
    assert "--token" in capsys.readouterr().err
    code = tonk(["serve", "random", "--connect", "--link", arena.address, "--token", "wrong", "--name", "x1"])
    assert code == 1
    assert "UNAUTHENTICATED" in capsys.readouterr().err
    code = tonk(["serve", "random", "--connect", "--arena", "http://127.0.0.1:9", "--token", "t"])
    assert code == 1 and "cannot read" in capsys.readouterr().err


def test_a_gateway_without_relay_streams_gets_unary_relays(arena: Arena, clients: list[Client]) -> None:
    """A gateway from before RelayStream (a rolling upgrade): the worker's stream is refused
    UNIMPLEMENTED, the call goes as a unary Relay instead (it never reached the bot), and so
    do the later ones. The older gateway here is a real server that has only Relay and
    passes it on to the real gateway's."""
    from arena.link.player import GatewayLostError

    stalling, hung = threading.Event(), threading.Event()
    clients.append(Client(arena, "alice", "upgrading", bot=slow_while(stalling, 1.0)).wait())
    upstream = grpc.insecure_channel(arena.gateway.advertise)
    forward = upstream.unary_unary(f"/{RELAY_SERVICE_NAME}/Relay")
    relayed: list[lpb.RelayResponse] = []

    def relay(request: bytes, context: grpc.ServicerContext) -> bytes:
        if hung.is_set():  # the older gateway's host gone quiet: no answer at all
            time.sleep((context.time_remaining() or 0) + 0.5)
            return b""
        metadata = [(k, v) for k, v in context.invocation_metadata() if k == "x-tonk-gateway-secret"]
        try:
            answer: bytes = forward(request, metadata=metadata, timeout=context.time_remaining())
        except grpc.RpcError as exc:  # the real gateway's verdict, passed on as it is
            context.set_trailing_metadata(exc.trailing_metadata() or ())  # type: ignore[attr-defined]
            context.abort(exc.code(), exc.details())  # type: ignore[attr-defined]
        relayed.append(lpb.RelayResponse.FromString(answer))
        return answer

    old, address = relay_server({"Relay": grpc.unary_unary_rpc_method_handler(relay)})
    try:
        with session_scope(arena.url) as session:
            from arena.store.models import LinkGateway

            session.get(LinkGateway, arena.gateway.id).address = address  # type: ignore[union-attr]
        player = link_player(arena, "upgrading")
        assert player.describe()["name"] == "random"
        player.match_start(MatchInfo("m", 0, ("upgrading", "x"), STANDARD, 1, 0, 1000, 0))
        player.act(_decision())
        assert len(relayed) == 3  # GetInfo, StartMatch, Decide: each relayed once, unary
        # The unary Relay measures the bot's time too: that is what the decision is charged.
        assert relayed[-1].HasField("bot_us") and player.last_charged_us == relayed[-1].bot_us
        # The gateway's verdict on a slow bot, at the bot's deadline, is the bot's TIMEOUT...
        stalling.set()
        with pytest.raises(PlayerFaultError) as slow:
            player.act(dataclasses.replace(_decision(), deadline_ms=200))
        assert slow.value.kind is FaultKind.TIMEOUT
        stalling.clear()
        # ...but nothing at all, past the worker's own deadline, is the gateway's loss.
        hung.set()
        with pytest.raises(GatewayLostError, match=r"did not answer within 1\.2 s"):
            player.act(dataclasses.replace(_decision(), deadline_ms=200))
    finally:
        hung.clear()
        old.stop(0)
        upstream.close()


def test_calls_waiting_on_a_relay_stream_that_breaks_are_the_gateways_loss(
    arena: Arena, clients: list[Client]
) -> None:
    """The worker's relay stream ends under a call (the gateway's relay port going away, as
    when it is killed): that call is GatewayLostError (the match is played again), not a
    fault of the bot, and the next call does not reuse the dead stream."""
    import asyncio

    from arena.link.player import GatewayLostError

    holding = threading.Event()
    clients.append(Client(arena, "alice", "holding", bot=slow_while(holding, 0.8)).wait())
    routes = Routes(arena.url)
    player = LinkPlayer("holding", RelayTransport(bot_id(arena, "holding"), routes))
    assert player.describe()["name"] == "random"  # the stream is open
    stream = routes.stream(arena.gateway.advertise, arena.gateway.secret)
    holding.set()
    outcome: list[BaseException | object] = []

    def decide() -> None:
        try:
            outcome.append(player.act(_decision()))
        except BaseException as exc:  # judged below
            outcome.append(exc)

    thread = threading.Thread(target=decide)
    thread.start()
    wait_until(lambda: any(c.pending for cs in arena.gateway.by_bot.values() for c in cs))
    assert arena.gateway.loop is not None
    relay_server = arena.gateway._servers[1]
    asyncio.run_coroutine_threadsafe(relay_server.stop(0), arena.gateway.loop).result(10)
    thread.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], GatewayLostError), outcome
    assert routes.stream(arena.gateway.advertise, arena.gateway.secret) is not stream


def test_a_gateway_that_falls_silent_is_its_loss_not_a_timeout_of_the_bot(
    arena: Arena, clients: list[Client]
) -> None:
    """The gateway times each call to the bot itself and answers DEADLINE_EXCEEDED at the
    deadline. A worker that hears nothing even RELAY_MARGIN_S later (the gateway's loop
    stuck, its host gone quiet) has met the arena's failure: GatewayLostError, the match is
    played again, and the bot is charged nothing."""
    from arena.link.player import GatewayLostError

    clients.append(Client(arena, "alice", "patient").wait())
    routes = Routes(arena.url)
    player = LinkPlayer("patient", RelayTransport(bot_id(arena, "patient"), routes))
    assert player.describe()["name"] == "random"  # the stream is open
    silent = routes.stream(arena.gateway.advertise, arena.gateway.secret)
    assert arena.gateway.loop is not None
    frozen = threading.Event()
    arena.gateway.loop.call_soon_threadsafe(frozen.wait, 5)  # the gateway's loop stops dead
    try:
        with pytest.raises(GatewayLostError, match="did not answer within"):
            player.act(dataclasses.replace(_decision(), deadline_ms=200))
    finally:
        frozen.set()
    # The stream heard nothing after the call went out: it is given up, not reused.
    assert silent is not None and silent.failure is not None
    assert "sent nothing on the relay stream" in silent.failure[1]
    assert routes.stream(arena.gateway.advertise, arena.gateway.secret) is not silent
    assert player.act(_decision()) is not None  # the gateway back: the next call is played


class _PickyRelay:
    """A real RelayStream server that answers every request except those whose id is in
    ``drop`` (a gateway losing one reply), or none at all once ``mute`` is set."""

    def __init__(self) -> None:
        self.drop: set[int] = set()
        self.mute = threading.Event()
        handler = grpc.stream_stream_rpc_method_handler(
            self._serve,
            request_deserializer=lpb.RelayStreamRequest.FromString,
            response_serializer=lpb.RelayStreamResponse.SerializeToString,
        )
        self.server, self.address = relay_server({"RelayStream": handler})

    def _serve(
        self, requests: Iterator[lpb.RelayStreamRequest], context: Any
    ) -> Iterator[lpb.RelayStreamResponse]:
        for request in requests:
            if request.id not in self.drop and not self.mute.is_set():
                yield lpb.RelayStreamResponse(id=request.id, reply=b"ok")


@pytest.fixture
def picky() -> Iterator[_PickyRelay]:
    relay = _PickyRelay()
    yield relay
    relay.server.stop(0).wait(5)


def _open_stream(address: str) -> tuple[grpc.Channel, RelayStream]:
    channel = grpc.insecure_channel(address)
    return channel, RelayStream(channel, "secret")


def test_a_relay_stream_that_loses_one_reply_but_answers_others_is_kept(picky: _PickyRelay) -> None:
    """One reply lost while the stream keeps answering is that call's loss alone: the matches
    sharing the stream go on with it."""
    channel, stream = _open_stream(picky.address)
    try:
        assert stream.call(lpb.RelayStreamRequest(), 5).reply == b"ok"  # id 1
        picky.drop.add(2)
        outcome: list[BaseException] = []

        def lost_call() -> None:
            try:
                stream.call(lpb.RelayStreamRequest(), 1.0)  # id 2: never answered
            except BaseException as exc:  # judged below
                outcome.append(exc)

        thread = threading.Thread(target=lost_call)
        thread.start()
        wait_until(lambda: stream._waiting)  # id 2 is out before id 3 is sent
        assert stream.call(lpb.RelayStreamRequest(), 5).reply == b"ok"  # id 3: heard after id 2 went out
        thread.join(10)
        assert len(outcome) == 1 and isinstance(outcome[0], TimeoutError), outcome
        assert stream.failure is None
        assert stream.call(lpb.RelayStreamRequest(), 5).reply == b"ok"
    finally:
        stream.close()
        channel.close()


def test_a_silent_relay_stream_is_abandoned_and_its_other_calls_fail_at_once(picky: _PickyRelay) -> None:
    """A stream that hears nothing for a whole call's wait is dead (no RST will ever end it):
    the timed-out call gives it up, and calls still waiting on it fail now with the reason
    instead of each waiting out its own deadline."""
    channel, stream = _open_stream(picky.address)
    try:
        assert stream.call(lpb.RelayStreamRequest(), 5).reply == b"ok"
        picky.mute.set()
        outcome: list[tuple[BaseException, float]] = []

        def patient_call() -> None:
            started = time.monotonic()
            try:
                stream.call(lpb.RelayStreamRequest(), 60)
            except BaseException as exc:  # judged below
                outcome.append((exc, time.monotonic() - started))

        thread = threading.Thread(target=patient_call)
        thread.start()
        wait_until(lambda: stream._waiting)
        with pytest.raises(TimeoutError):
            stream.call(lpb.RelayStreamRequest(), 0.5)
        thread.join(30)
        assert len(outcome) == 1, outcome
        failure, waited = outcome[0]
        assert isinstance(failure, RelayStreamError) and failure.code is grpc.StatusCode.UNAVAILABLE
        assert "sent nothing on the relay stream for 0.5 s" in failure.details
        assert waited < 30  # failed with the stream, not at its own 60 s deadline
        with pytest.raises(RelayStreamError, match="sent nothing"):  # later calls are told too
            stream.call(lpb.RelayStreamRequest(), 5)
    finally:
        stream.close()
        channel.close()


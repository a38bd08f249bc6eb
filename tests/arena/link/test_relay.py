"""The relay between a worker and a gateway: one stream per worker, unary calls for a gateway
without streams, and a gateway that breaks or falls silent is its own loss, not the bot's."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from helpers.link import (
    Arena,
    Client,
    bot_id,
    decision,
    link_player,
    relay_server,
    slow_while,
    wait_until,
)

from arena.link.player import LinkPlayer
from arena.link.relay_client import RelayStream, RelayStreamError, RelayTransport, Routes
from arena.store.db import session_scope
from sdk.bot import MatchInfo
from sdk.protocol import RELAY_SERVICE_NAME
from sdk.protocol import link_pb2 as lpb
from sdk.referee import FaultKind, PlayerFaultError
from sdk.rules import STANDARD


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
        player.act(decision())
        assert len(relayed) == 3  # GetInfo, StartMatch, Decide: each relayed once, unary
        # The unary Relay measures the bot's time too: that is what the decision is charged.
        assert relayed[-1].HasField("bot_us") and player.last_charged_us == relayed[-1].bot_us
        # The gateway's verdict on a slow bot, at the bot's deadline, is the bot's TIMEOUT...
        stalling.set()
        with pytest.raises(PlayerFaultError) as slow:
            player.act(dataclasses.replace(decision(), deadline_ms=200))
        assert slow.value.kind is FaultKind.TIMEOUT
        stalling.clear()
        # ...but nothing at all, past the worker's own deadline, is the gateway's loss.
        hung.set()
        with pytest.raises(GatewayLostError, match=r"did not answer within 1\.2 s"):
            player.act(dataclasses.replace(decision(), deadline_ms=200))
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
            outcome.append(player.act(decision()))
        except BaseException as exc:  # judged below
            outcome.append(exc)

    thread = threading.Thread(target=decide)
    thread.start()
    wait_until(lambda: any(c.pending for cs in arena.gateway.holdings.by_bot.values() for c in cs))
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
            player.act(dataclasses.replace(decision(), deadline_ms=200))
    finally:
        frozen.set()
    # The stream heard nothing after the call went out: it is given up, not reused.
    assert silent is not None and silent.failure is not None
    assert "sent nothing on the relay stream" in silent.failure[1]
    assert routes.stream(arena.gateway.advertise, arena.gateway.secret) is not silent
    assert player.act(decision()) is not None  # the gateway back: the next call is played


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


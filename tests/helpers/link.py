"""The link test harness: a real gateway on its own loop (``Arena``), bots connected with
the SDK's LinkClient (``Client``) or hand-made streams (``RawLink``), and what the tests of
tests/arena/link share. The fixtures are in tests/arena/link/conftest.py."""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from sqlalchemy import select

from arena.link import directory
from arena.link.gateway import Gateway
from arena.link.player import LinkPlayer
from arena.link.relay_client import RelayTransport, Routes
from arena.store.db import session_scope
from arena.store.models import Bot
from bots.random_bot import RandomBot
from sdk.link import LinkClient
from sdk.protocol import LINK_SERVICE_NAME, RELAY_SERVICE_NAME
from sdk.protocol import bot_pb2 as pb
from sdk.protocol import link_pb2 as lpb
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


def status(link: RawLink) -> tuple[grpc.StatusCode, str]:
    error = link.closed_with()
    return error.code(), error.details() or ""


def decision() -> Any:
    from sdk.dealing import deck_order
    from sdk.engine import HandState
    from sdk.observation import observe
    from sdk.referee import DecisionRequest

    state = HandState.deal(deck_order(7, 0), 2, 0, STANDARD)
    while state.outcome is not None:  # pragma: no cover - a TONK deal; seed 7 has none
        raise AssertionError("seed 7 deals a TONK")
    obs = observe(state, state.to_act, ("a", "b"), (0, 0), 0, 1)
    return DecisionRequest("m", 0, "m/0/0", obs, 1000)


def capacity(arena: Arena, bot: int) -> int:
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



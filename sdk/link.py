"""Play a bot from anywhere that can open one outbound connection: the bot connects to the
arena's gateway (``tonk.v1.BotLinkService``, protos/tonk/v1/link.proto) instead of serving.

    tonk serve mybot:MyBot --connect --arena https://arena.example.org --token TOKEN --name mybot

    from sdk.link import connect
    connect(MyBot, arena="https://arena.example.org", token=TOKEN, name="mybot")  # blocks

No socket is listened on. The gateway's address is read from the arena's ``GET /api/v1/``
(``link.address``) unless given. The first connection of a name the owner does not have yet
registers it, once the bot passes the arena's admission check (played over this connection).
Calls are answered by the same :class:`~sdk.server.BotServicer` a served bot uses (a fresh bot
instance per match seat), as many at once as they come: on the connection's thread while the
bot answers fast, else on a thread pool. When the
connection drops the client reconnects with exponential backoff, until stopped or until the
arena refuses it for a reason retrying cannot fix (a bad token, a name that is not ours).
"""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import grpc

from sdk.bot import Bot
from sdk.protocol import LINK_SERVICE_NAME
from sdk.protocol import link_pb2 as lpb
from sdk.server import BotServicer

logger = logging.getLogger("tonk.link")

DEFAULT_CAPACITY: Final = 4
#: Reconnection backoff: first wait, longest wait (seconds); each wait is jittered.
BACKOFF_FIRST_S: Final = 0.5
BACKOFF_MAX_S: Final = 30.0
#: Refusals that a retry cannot fix: the client stops. (ALREADY_EXISTS is not one: another
#: process registered the name first, and the retry finds it registered.)
FINAL_CODES: Final = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.INVALID_ARGUMENT,
    }
)
_DISCOVERY_TIMEOUT_S: Final = 10.0
#: Answers faster than this (lately) are given on the connection's own thread.
INLINE_FAST_S: Final = 0.002
_MAX_DETAILS: Final = 1000


class LinkRefusedError(RuntimeError):
    """The arena refused the connection for good (the message says why)."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class ArenaDiscoveryError(ValueError):
    """The arena's URL does not say where its gateway is."""


def discover(arena: str, timeout_s: float = _DISCOVERY_TIMEOUT_S) -> str:
    """The gateway ``HOST:PORT`` the arena at ``arena`` (its dashboard URL) advertises."""
    url = arena.rstrip("/") + "/api/v1/"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            data = json.loads(response.read(64 * 1024))
    except (OSError, ValueError) as exc:
        raise ArenaDiscoveryError(f"cannot read {url!r}: {exc}") from None
    address = (data.get("link") or {}).get("address") if isinstance(data, dict) else None
    if not isinstance(address, str) or not address:
        raise ArenaDiscoveryError(f"the arena at {arena!r} advertises no gateway for connected bots")
    return address


class _CallAbortedError(Exception):
    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(details)
        self.code = code
        self.details = details


class _CallContext:
    """What BotServicer needs of a gRPC context, for one call received over the link."""

    def __init__(self, deadline: float):
        self.deadline = deadline

    def time_remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        raise _CallAbortedError(code, details)


@dataclass
class LinkStats:
    """What a client has done so far (tests and logs)."""

    connections: int = 0
    calls: int = 0
    welcomed: int = 0
    inline: int = 0  # calls answered on the connection's thread
    last_error: str = ""


class LinkClient:
    """Keeps ``factory``'s bot connected to the gateway at ``address`` until :meth:`stop`."""

    def __init__(
        self,
        factory: Callable[[], Bot],
        address: str,
        token: str,
        name: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        idle_timeout_s: float = 900.0,
        arena: str = "",
    ):
        self.servicer = BotServicer(factory, idle_timeout_s)
        self.arena = arena.rstrip("/")  # the dashboard's URL, to name the bot's page; "" unknown
        self.address = address
        self.token = token
        self.name = name
        self.capacity = capacity
        self.stats = LinkStats()
        self.connected = threading.Event()
        self._stopped = threading.Event()
        self._call: Any = None
        self._pool = ThreadPoolExecutor(max_workers=max(4, 2 * capacity), thread_name_prefix="tonk-link")
        self._lock = threading.Lock()
        self._pooled = 0  # calls being answered in the pool
        self._recent_s = 0.0  # how long answers take lately

    def run(self) -> None:
        """Connect, play, reconnect with backoff; returns when stopped, raises
        LinkRefusedError when the arena refuses for good."""
        backoff = BACKOFF_FIRST_S
        try:
            while not self._stopped.is_set():
                started = time.monotonic()
                try:
                    self._session()
                except grpc.RpcError as exc:
                    code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
                    details = (exc.details() if isinstance(exc, grpc.Call) else str(exc)) or ""
                    self.stats.last_error = f"{code.name}: {details}"
                    if code in FINAL_CODES:
                        raise LinkRefusedError(code, details) from None
                    if not self._stopped.is_set():
                        logger.warning("link to %s lost (%s: %s)", self.address, code.name, details)
                finally:
                    self.connected.clear()
                if self._stopped.is_set():
                    break
                if time.monotonic() - started > 2 * BACKOFF_MAX_S:
                    backoff = BACKOFF_FIRST_S  # it had been up a while: try again soon
                wait = backoff * random.uniform(0.5, 1.0)
                logger.info("reconnecting in %.1f s", wait)
                self._stopped.wait(wait)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def stop(self) -> None:
        self._stopped.set()
        call = self._call
        if call is not None:
            call.cancel()

    # -- one connection ------------------------------------------------------------------------

    def _session(self) -> None:
        outbox: queue.Queue[bytes | None] = queue.Queue()
        hello = lpb.LinkHello(bot_name=self.name, capacity=self.capacity, info=self.servicer.info)
        outbox.put(lpb.ConnectRequest(hello=hello).SerializeToString())

        def requests() -> Iterator[bytes]:
            while True:
                item = outbox.get()
                if item is None:
                    return
                yield item

        channel = grpc.insecure_channel(
            self.address,
            options=[
                ("grpc.keepalive_time_ms", 20_000),
                ("grpc.keepalive_timeout_ms", 10_000),
                ("grpc.max_receive_message_length", 16 * 1024 * 1024),
            ],
        )
        connect = channel.stream_stream(f"/{LINK_SERVICE_NAME}/Connect")
        self.stats.connections += 1
        try:
            # No deadline: this stream is the bot's whole session; each call on it has its own.
            call = connect(requests(), metadata=(("authorization", f"Bearer {self.token}"),))
            self._call = call
            if self._stopped.is_set():
                call.cancel()
            for data in call:
                self._on_message(data, outbox)
        finally:
            self._call = None
            outbox.put(None)
            channel.close()

    def _on_message(self, data: bytes, outbox: queue.Queue[bytes | None]) -> None:
        message = lpb.ConnectResponse.FromString(data)
        kind = message.WhichOneof("message")
        if kind == "call":
            self.stats.calls += 1
            received = time.monotonic()
            # A fast bot answers on this thread: a hand-off to the pool and back costs more
            # than the answer. Once an answer is slow, or while one is running in the pool,
            # calls go to the pool so that one slow seat never holds up the others.
            with self._lock:
                inline = self._pooled == 0 and self._recent_s < INLINE_FAST_S
                if not inline:
                    self._pooled += 1
            if inline:
                self.stats.inline += 1
                self._answer(message.call, received, outbox)
            else:
                self._pool.submit(self._answer_pooled, message.call, received, outbox)
        elif kind == "welcome":
            welcome = message.welcome
            self.stats.welcomed += 1
            self.connected.set()
            logger.info(
                "connected to %s as %s (%s; capacity %d)%s",
                self.address,
                welcome.bot_name,
                welcome.connection_id,
                welcome.capacity,
                ", registered" if welcome.registered else "",
            )
            if self.arena and self.stats.welcomed == 1:  # once, not on every reconnection
                logger.info("its page: %s/bots/%s", self.arena, urllib.parse.quote(welcome.bot_name))
        elif kind == "notice":
            logger.warning("arena notice %s: %s", message.notice.kind, message.notice.message)

    def _answer_pooled(self, call: lpb.LinkCall, received: float, outbox: queue.Queue[bytes | None]) -> None:
        try:
            self._answer(call, received, outbox)
        finally:
            with self._lock:
                self._pooled -= 1

    def _answer(self, call: lpb.LinkCall, received: float, outbox: queue.Queue[bytes | None]) -> None:
        started = time.monotonic()
        try:
            self._reply(call, received, outbox)
        finally:
            took = time.monotonic() - started
            with self._lock:  # a slow answer counts at once; fast ones bring the average back
                self._recent_s = took if took > INLINE_FAST_S else 0.9 * self._recent_s + 0.1 * took

    def _reply(self, call: lpb.LinkCall, received: float, outbox: queue.Queue[bytes | None]) -> None:
        context = _CallContext(received + call.deadline_ms / 1000)
        reply = lpb.LinkReply(call_id=call.call_id)
        kind = call.WhichOneof("request")
        try:
            if kind == "decide":
                data = self.servicer.decide(call.decide.SerializeToString(), context)
                reply.decide.ParseFromString(data)
            elif kind == "get_info":
                reply.get_info.CopyFrom(self.servicer.info)
            elif kind == "start_match":
                self.servicer.start_match(call.start_match, context)
                reply.start_match.SetInParent()
            elif kind == "end_hand":
                self.servicer.end_hand(call.end_hand, context)
                reply.end_hand.SetInParent()
            elif kind == "end_match":
                self.servicer.end_match(call.end_match, context)
                reply.end_match.SetInParent()
            elif kind == "end_deal":
                self.servicer.end_deal(call.end_deal, context)
                reply.end_deal.SetInParent()
            else:  # a call this SDK does not know (a newer arena): say so, as a server would
                reply.error.code = grpc.StatusCode.UNIMPLEMENTED.value[0]
                reply.error.message = f"this bot does not implement {kind or 'an empty call'}"
        except _CallAbortedError as exc:
            reply.ClearField("result")
            reply.error.code = exc.code.value[0]
            reply.error.message = exc.details[:_MAX_DETAILS]
        outbox.put(lpb.ConnectRequest(reply=reply).SerializeToString())


def connect(
    bot: type[Bot] | Callable[[], Bot],
    *,
    token: str,
    name: str,
    arena: str = "",
    address: str = "",
    capacity: int = DEFAULT_CAPACITY,
) -> None:
    """Connect ``bot`` to the arena and play until interrupted (Ctrl-C or SIGTERM)."""
    import signal

    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    target = address or discover(arena)
    client = LinkClient(bot, target, token, name, capacity=capacity, arena=arena)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: client.stop())
    logger.info("connecting %s to %s (capacity %d)", name, target, capacity)
    errors: list[BaseException] = []
    runner = threading.Thread(target=_run_into, args=(client, errors), name="tonk-link-run")
    runner.start()
    try:
        while runner.is_alive():
            runner.join(0.5)  # a short wait keeps Ctrl-C responsive
    except KeyboardInterrupt:
        client.stop()
        runner.join()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if errors:
        raise errors[0]


def _run_into(client: LinkClient, errors: list[BaseException]) -> None:
    try:
        client.run()
    except BaseException as exc:
        errors.append(exc)

"""The referee's side of a connected bot: a :class:`~sdk.referee.Player` whose every call
goes through the gateway holding the bot's connection.

:class:`LinkPlayer` keeps :class:`~sdk.grpc_player.GrpcPlayer`'s contract exactly (the same
deadlines, lifecycle timeout, reply size limit and fault kinds), so the referee cannot tell
which kind of bot it plays. What carries a call is a :class:`LinkTransport`: in a match
worker, :class:`RelayTransport` (a message on the process's ``GatewayRelayService.RelayStream``
to the gateway found in the store, or a unary ``Relay`` to a gateway without streams); in
the gateway itself, the connection (its admission check). The time charged for a decision
is the gateway's measure of the bot's (``RelayResponse.bot_us``), not this worker's wall time.

Failures map to faults as for a dialled bot: no reply in time (the gateway's verdict) is
TIMEOUT, a bot that is not connected or whose connection dropped is UNREACHABLE, an error
answer is CRASH, a reply of the wrong kind or unreadable is MALFORMED. One thing is not the
bot's fault: the gateway itself unreachable (killed, restarting) or silent past its own
verdict's time. That raises :class:`GatewayLostError`, which the
match job turns into "play this match again later" (arena/play/lifecycle.py), never into a fault.

A link that blips is not charged either: when a call mid-match (after one answered) finds
the bot's connection closed or the bot not connected, the player waits up to
``relink_wait_s`` for the bot to be connected again (a connection this match has not used).
If it is, the call raises
:class:`BotLinkLostError` and the match is handed back and replayed from its start; if not,
the call faults as UNREACHABLE as before, and so does every later one at once (one wait
per match, never one per call).
"""

from __future__ import annotations

import itertools
import os
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Final, Protocol

import grpc
from google.protobuf.message import DecodeError

from sdk.actions import Action
from sdk.bot import DealSummary, HandResult, MatchInfo, MatchSummary
from sdk.clock import charged_ns
from sdk.grpc_player import DEFAULT_LIFECYCLE_TIMEOUT_S, DEFAULT_MAX_REPLY_BYTES, bot_info
from sdk.messages import (
    MalformedReplyError,
    deal_summary_to_proto,
    hand_result_to_proto,
    match_info_to_proto,
    match_summary_to_proto,
    reply_from_proto,
)
from sdk.protocol import RELAY_SERVICE_NAME
from sdk.protocol import bot_pb2 as pb
from sdk.protocol import link_pb2 as lpb
from sdk.referee import DecisionRequest, FaultKind, PlayerFaultError
from sdk.wire import encode_decide_request, encode_varint

_MAX_REASON: Final = 300
#: Extra seconds a worker waits for the gateway's own verdict beyond the bot's deadline.
RELAY_MARGIN_S: Final = 1.0
#: Metadata key of the relay's secret.
SECRET_HEADER: Final = "x-tonk-gateway-secret"
#: Trailing metadata the gateway sets on errors about the bot (not about itself).
BOT_ERROR_HEADER: Final = "x-tonk-link"
#: Seconds a worker trusts what the store said about where a bot is connected.
ROUTE_TTL_S: Final = 1.0
#: Seconds between looks at the store for a bot whose link dropped mid-match.
RELINK_POLL_S: Final = 0.25

# A Decide's LinkCall is built by concatenation: deadline_ms (field 2, varint) and decide
# (field 12, length-delimited) around the referee's already-encoded DecideRequest.
_T_DEADLINE: Final = bytes([2 << 3])
_T_DECIDE: Final = bytes([(12 << 3) | 2])


class GatewayLostError(RuntimeError):
    """The gateway relaying a match's calls cannot be reached: an arena failure, not the bot's."""


class BotOfflineError(RuntimeError):
    """A connected bot was not connected when its match started, while the match may still
    wait for it (arena/play/offline.py): the match is handed back, not charged."""


class BotLinkLostError(BotOfflineError):
    """A connected bot's link dropped mid-match and the bot was connected again within the
    wait: the match is handed back and replayed from its start, not charged. ``seat``: whose."""

    def __init__(self, reason: str, seat: int):
        super().__init__(reason)
        self.seat = seat


class GatewayRelayError(RuntimeError):
    """The gateway refused a worker's relay (a wrong secret, a bug): the match fails, visibly."""


class LinkTransportError(Exception):
    """A call that got no reply: ``kind`` is the fault it is charged as."""

    def __init__(self, kind: FaultKind, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class LinkTransport(Protocol):
    """Delivers one serialized LinkCall for a session and returns the serialized LinkReply.
    Raises LinkTransportError (the bot's fault) or GatewayLostError (the arena's).
    ``last_bot_us``: the last call's time from the bot's stream to its reply, in µs, when the
    transport knows it (the gateway measures it), else None."""

    last_bot_us: int | None

    def call(self, session: str, call: bytes, timeout_s: float, *, last: bool = False) -> bytes: ...

    def close(self) -> None: ...


def decide_call(request_bytes: bytes, deadline_ms: int) -> bytes:
    """A serialized LinkCall carrying a serialized DecideRequest (call_id left 0)."""
    return b"".join(
        (_T_DEADLINE, encode_varint(max(deadline_ms, 1)),
         _T_DECIDE, encode_varint(len(request_bytes)), request_bytes)
    )


def lifecycle_call(kind: str, message: Any, deadline_ms: int) -> bytes:
    call = lpb.LinkCall(deadline_ms=deadline_ms)
    getattr(call, kind).CopyFrom(message)
    data: bytes = call.SerializeToString()
    return data


class LinkPlayer:
    """A seat played by connected bot ``name`` through ``transport``. Thread-safe the way
    the referee uses players (one call at a time per player); many players may share one
    transport's channels."""

    def __init__(
        self,
        name: str,
        transport: LinkTransport,
        *,
        lifecycle_timeout_s: float = DEFAULT_LIFECYCLE_TIMEOUT_S,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        offline_waits: bool = False,
        relinked: Callable[[], bool] | None = None,
        relink_wait_s: float = 0.0,
    ):
        self.name = name
        #: A StartMatch that finds the bot not connected raises BotOfflineError, not a fault.
        self.offline_waits = offline_waits
        #: Whether the bot is connected again since its link dropped (RelayTransport.relinked),
        #: and how long a dropped link is waited for (0: not at all, the call faults at once).
        self.relinked = relinked
        self.relink_wait_s = relink_wait_s
        #: A call of this player has been answered: a later "not connected" is a dropped link,
        #: not a bot absent from the start (that is the offline grace's, arena/play/offline.py).
        self._reached = False
        self._starting = False
        self.address = f"link:{name}"  # what fault reasons and logs call it
        self.transport = transport
        self.lifecycle_timeout_s = lifecycle_timeout_s
        self.max_reply_bytes = max_reply_bytes
        self.session = uuid.uuid4().hex
        self.seat = 0
        #: What the last Decide is charged, in µs, as GrpcPlayer's: the bot's time as the
        #: gateway measured it (send on the bot's stream to reply), never this worker's lag.
        self.last_charged_us: int | None = None
        self._info: dict[str, str] | None = None

    def __repr__(self) -> str:
        return f"LinkPlayer({self.name!r})"

    # -- the Player protocol ------------------------------------------------------------------

    def describe(self) -> dict[str, str]:
        if self._info is None:
            try:
                reply = self._send("get_info", pb.GetInfoRequest(), "GetInfo")
            except (PlayerFaultError, GatewayLostError):
                return bot_info(None, self.name)
            self._info = bot_info(reply.get_info, self.name)
        return dict(self._info)

    def match_start(self, info: MatchInfo) -> None:
        self.seat = info.seat
        self._starting = True
        try:
            self._lifecycle("start_match", match_info_to_proto(info), "StartMatch")
        finally:
            self._starting = False

    def act(self, request: DecisionRequest) -> Action | int:
        deadline_ms = max(request.deadline_ms, 1)
        call = decide_call(encode_decide_request(request), deadline_ms)
        self.last_charged_us = None
        started = time.perf_counter_ns()
        data = self._call(call, deadline_ms / 1000, "Decide", deadline_ms)  # a fault: wall time
        bot_us = self.transport.last_bot_us
        if bot_us is None:  # a gateway that does not measure: this worker's own estimate
            bot_us = charged_ns(started, time.perf_counter_ns()) // 1000
        self.last_charged_us = bot_us
        reply = self._parse(data, "Decide")
        kind = reply.WhichOneof("result")
        if kind == "error":
            raise PlayerFaultError(_error_kind(reply.error), _error_text("Decide", reply.error))
        if kind != "decide":
            raise PlayerFaultError(FaultKind.MALFORMED, f"Decide: the reply is {kind or 'empty'}, not decide")
        try:
            return reply_from_proto(reply.decide)
        except MalformedReplyError as exc:
            raise PlayerFaultError(FaultKind.MALFORMED, str(exc)[:_MAX_REASON]) from None

    def hand_end(self, result: HandResult) -> None:
        self._lifecycle("end_hand", hand_result_to_proto(result, self.seat), "EndHand")

    def match_end(self, summary: MatchSummary) -> None:
        self._lifecycle("end_match", match_summary_to_proto(summary, self.seat), "EndMatch", last=True)

    def deal_end(self, deal: DealSummary) -> None:
        """EndDeal: not part of a match (arena/play/deal_end.py sends it once a deal is over)."""
        self._lifecycle("end_deal", deal_summary_to_proto(deal), "EndDeal")

    def close(self) -> None:
        pass  # the transport's channels are shared; the gateway forgets idle sessions

    # -- helpers --------------------------------------------------------------------------------

    def _lifecycle(self, kind: str, message: Any, rpc: str, *, last: bool = False) -> None:
        reply = self._send(kind, message, rpc, last=last)
        result = reply.WhichOneof("result")
        if result == "error":
            if reply.error.code == grpc.StatusCode.UNIMPLEMENTED.value[0]:
                return  # lifecycle notices are optional for a bot, as for a served one
            raise PlayerFaultError(_error_kind(reply.error), _error_text(rpc, reply.error))
        if result != kind:
            raise PlayerFaultError(
                FaultKind.MALFORMED, f"{rpc}: the reply is {result or 'empty'}, not {kind}"
            )

    def _send(self, kind: str, message: Any, rpc: str, *, last: bool = False) -> lpb.LinkReply:
        deadline_ms = int(self.lifecycle_timeout_s * 1000)
        call = lifecycle_call(kind, message, deadline_ms)
        return self._parse(self._call(call, self.lifecycle_timeout_s, rpc, deadline_ms, last=last), rpc)

    def _call(
        self, call: bytes, timeout_s: float, rpc: str, deadline_ms: int, *, last: bool = False
    ) -> bytes:
        try:
            data = self.transport.call(self.session, call, timeout_s, last=last)
        except LinkTransportError as exc:
            if self._starting and self.offline_waits and exc.kind is FaultKind.UNREACHABLE:
                raise BotOfflineError(f"{self.name} is not connected: {exc.reason}"[:_MAX_REASON]) from None
            if exc.kind is FaultKind.UNREACHABLE and self._reached and self._relinked_in_time():
                raise BotLinkLostError(
                    f"{self.name}'s link dropped ({rpc}: {exc.reason}) and it connected again"[:_MAX_REASON],
                    self.seat,
                ) from None
            if exc.kind is FaultKind.TIMEOUT:
                raise PlayerFaultError(
                    FaultKind.TIMEOUT, f"{rpc}: no reply within {deadline_ms} ms"
                ) from None
            raise PlayerFaultError(exc.kind, f"{rpc}: {exc.reason}"[:_MAX_REASON]) from None
        self._reached = True
        return data

    def _relinked_in_time(self) -> bool:
        """Wait (once per match) up to ``relink_wait_s`` for the bot to be connected again."""
        wait_s, self.relink_wait_s = self.relink_wait_s, 0.0  # a later drop faults at once
        if self.relinked is None or wait_s <= 0:
            return False
        give_up = time.monotonic() + wait_s
        while True:
            if self.relinked():
                return True
            if time.monotonic() >= give_up:
                return False
            time.sleep(RELINK_POLL_S)

    def _parse(self, data: bytes, rpc: str) -> lpb.LinkReply:
        if len(data) > self.max_reply_bytes:
            raise PlayerFaultError(FaultKind.MALFORMED, f"{rpc}: the reply is too large ({len(data)} bytes)")
        try:
            return lpb.LinkReply.FromString(data)
        except DecodeError as exc:
            raise PlayerFaultError(FaultKind.MALFORMED, f"{rpc}: the reply is unreadable: {exc}") from None


def _status(code: int) -> grpc.StatusCode | None:
    return next((c for c in grpc.StatusCode if c.value[0] == code), None)


def _error_kind(error: lpb.LinkError) -> FaultKind:
    # As sdk.grpc_player.rpc_fault judges a served bot's status.
    if error.code == grpc.StatusCode.DEADLINE_EXCEEDED.value[0]:
        return FaultKind.TIMEOUT
    if error.code == grpc.StatusCode.UNAVAILABLE.value[0]:
        return FaultKind.UNREACHABLE
    return FaultKind.CRASH


def _error_text(rpc: str, error: lpb.LinkError) -> str:
    try:
        name = grpc.StatusCode(next(c for c in grpc.StatusCode if c.value[0] == error.code)).name
    except StopIteration:
        name = f"code {error.code}"
    return f"{rpc}: the bot answered {name}: {error.message}"[:_MAX_REASON]


# -- in a match worker: relaying through the gateway -------------------------------------------


class Routes:
    """Where connected bots are, read from the store and cached for ``ROUTE_TTL_S``, and one
    channel per gateway address. One per process (:func:`routes_for`); thread-safe."""

    def __init__(self, database_url: str, secret: str = ""):
        self.database_url = database_url
        self.secret = secret
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._cache: dict[int, tuple[float, list[Any]]] = {}
        self._channels: dict[str, grpc.Channel] = {}
        self._streams: dict[tuple[str, str], RelayStream] = {}
        self._unary_only: set[str] = set()

    def pick(self, bot_id: int) -> Any | None:
        """A live route to the bot (weighted by the capacity each gateway holds), or None."""
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(bot_id)
        if cached is None or cached[0] < now:
            from arena.link.directory import routes
            from arena.store.db import session_scope

            with session_scope(self.database_url) as session:
                found = routes(session, bot_id)
            cached = (now + ROUTE_TTL_S, found)
            with self._lock:
                self._cache[bot_id] = cached
        live = cached[1]
        if not live:
            return None
        return random.choices(live, weights=[max(r.capacity, 1) for r in live])[0]

    def forget(self, bot_id: int) -> None:
        with self._lock:
            self._cache.pop(bot_id, None)

    def _channel(self, address: str) -> grpc.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = grpc.insecure_channel(
                address,
                options=[
                    ("grpc.max_receive_message_length", 4 * DEFAULT_MAX_REPLY_BYTES),
                    ("grpc.enable_retries", 0),
                ],
            )
        return channel

    def relay(self, address: str) -> Any:
        """The unary Relay method callable on the shared channel to ``address``."""
        with self._lock:
            return self._channel(address).unary_unary(
                f"/{RELAY_SERVICE_NAME}/Relay",
                request_serializer=_serialize,
                response_deserializer=lpb.RelayResponse.FromString,
            )

    def stream(self, address: str, secret: str) -> RelayStream | None:
        """The process's RelayStream to the gateway at ``address`` (a new one once the last
        ended), or None when that gateway has no RelayStream (an older gateway: unary)."""
        with self._lock:
            if address in self._unary_only:
                return None
            key = (address, secret)
            found = self._streams.get(key)
            if found is None or found.failure is not None:
                found = self._streams[key] = RelayStream(self._channel(address), secret)
            return found

    def unary_only(self, address: str) -> None:
        with self._lock:
            self._unary_only.add(address)


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


class _Waiter:
    __slots__ = ("event", "failure", "response")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: lpb.RelayStreamResponse | None = None
        self.failure: tuple[grpc.StatusCode | None, str] | None = None


_END: Final = object()


class RelayStream:
    """One long-lived ``GatewayRelayService.RelayStream`` shared by a process's match threads:
    a call is one message each way instead of a unary RPC (the gateway's CPU per decision is
    what limits throughput through it). Requests are numbered; a reader thread hands each
    response to the thread waiting for it. When the stream ends, every waiting call fails
    with the stream's status and :meth:`Routes.stream` opens a new one for the next.

    A call that times out on a stream which has heard nothing since the call was sent finds
    the stream itself dead (a gateway whose host went quiet, a connection no RST will ever
    end): the stream is abandoned, so the next call opens a new one instead of timing out
    again. A stream still answering other calls is kept: only that one reply was lost."""

    def __init__(self, channel: grpc.Channel, secret: str):
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._waiting: dict[int, _Waiter] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        #: (status code, details) once the stream has ended.
        self.failure: tuple[grpc.StatusCode | None, str] | None = None
        self._heard = time.monotonic()  # when the last response came (or the stream opened)
        method = channel.stream_stream(
            f"/{RELAY_SERVICE_NAME}/RelayStream",
            request_serializer=_serialize,
            response_deserializer=lpb.RelayStreamResponse.FromString,
        )
        self._responses = method(iter(self._requests.get, _END), metadata=((SECRET_HEADER, secret),))
        threading.Thread(target=self._read, name="tonk-relay-stream", daemon=True).start()

    def call(self, request: lpb.RelayStreamRequest, timeout_s: float) -> lpb.RelayStreamResponse:
        """The gateway's response; raises RelayStreamError when the stream ended, TimeoutError
        when no response came within ``timeout_s``."""
        waiter = _Waiter()
        with self._lock:
            if self.failure is not None:
                raise RelayStreamError(*self.failure)
            request.id = next(self._ids)
            sent = time.monotonic()  # before any other thread can see the call waiting
            self._waiting[request.id] = waiter
        self._requests.put(request)
        if not waiter.event.wait(timeout_s):
            with self._lock:
                self._waiting.pop(request.id, None)
                silent = self._heard < sent
            if silent:
                self._abandon(f"the gateway sent nothing on the relay stream for {timeout_s:.1f} s")
            raise TimeoutError
        if waiter.response is None:
            assert waiter.failure is not None
            raise RelayStreamError(*waiter.failure)
        return waiter.response

    def _read(self) -> None:
        failure: tuple[grpc.StatusCode | None, str]
        try:
            for response in self._responses:
                with self._lock:
                    self._heard = time.monotonic()
                    waiter = self._waiting.pop(response.id, None)
                if waiter is not None:
                    waiter.response = response
                    waiter.event.set()
            failure = (grpc.StatusCode.UNAVAILABLE, "the gateway ended the relay stream")
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            failure = (code, (exc.details() if isinstance(exc, grpc.Call) else "") or "")
        self._fail(failure)

    def _abandon(self, reason: str) -> None:
        """Give up on a stream gone silent: its waiting calls fail now, and cancelling the
        call ends the reader thread (its CANCELLED does not replace this failure)."""
        self._fail((grpc.StatusCode.UNAVAILABLE, reason))
        self._responses.cancel()

    def _fail(self, failure: tuple[grpc.StatusCode | None, str]) -> None:
        with self._lock:
            if self.failure is None:  # the first cause is the one calls are told
                self.failure = failure
            failure = self.failure
            waiters = list(self._waiting.values())
            self._waiting.clear()
        for waiter in waiters:
            waiter.failure = failure
            waiter.event.set()
        self._requests.put(_END)

    def close(self) -> None:
        self._requests.put(_END)
        self._responses.cancel()


def _silent(address: str, timeout_s: float) -> GatewayLostError:
    """The gateway said nothing by the worker's own deadline, a margin past the bot's."""
    return GatewayLostError(
        f"the gateway at {address} did not answer within {timeout_s + RELAY_MARGIN_S:.1f} s"
    )


class RelayStreamError(Exception):
    """The relay stream ended (its status code and details)."""

    def __init__(self, code: grpc.StatusCode | None, details: str):
        super().__init__(details)
        self.code = code
        self.details = details


_routes: dict[str, Routes] = {}
_routes_lock = threading.Lock()


def routes_for(database_url: str) -> Routes:
    """The process's :class:`Routes` for a store (channels are reused by every match)."""
    with _routes_lock:
        found = _routes.get(database_url)
        # A forked child inherits the parent's streams without their reader threads: its own.
        if found is None or found.pid != os.getpid():
            found = _routes[database_url] = Routes(database_url, os.environ.get("TONK_GATEWAY_SECRET", ""))
        return found


class RelayTransport:
    """A match seat's calls to connected bot ``bot_id`` via the gateway holding it. The first
    call picks a gateway; the match's calls stay with it (the gateway keeps the seat on one
    connection), and move only when the bot is no longer connected there."""

    def __init__(self, bot_id: int, routes: Routes):
        self.bot_id = bot_id
        self.routes = routes
        self._route: Any | None = None
        self.last_bot_us: int | None = None
        #: The bot's connections that answered this transport (the gateway pins a match to one).
        self.used: set[str] = set()

    def call(self, session: str, call: bytes, timeout_s: float, *, last: bool = False) -> bytes:
        self.last_bot_us = None
        route = self._route or self.routes.pick(self.bot_id)
        if route is None:
            raise LinkTransportError(FaultKind.UNREACHABLE, "the bot is not connected to the arena")
        self._route = route
        secret = route.secret or self.routes.secret
        stream = self.routes.stream(route.address, secret)
        if stream is not None:
            timeout_ms = max(int(timeout_s * 1000), 1)
            streamed = lpb.RelayStreamRequest(
                bot_id=self.bot_id, session=session, call=call, last=last, timeout_ms=timeout_ms
            )
            try:
                response = stream.call(streamed, timeout_s + RELAY_MARGIN_S)
            except TimeoutError:
                # The gateway times the bot itself and answers DEADLINE_EXCEEDED at the
                # deadline: silence past the margin is the gateway failing, not the bot.
                raise _silent(route.address, timeout_s) from None
            except RelayStreamError as exc:
                if exc.code is not grpc.StatusCode.UNIMPLEMENTED:
                    raise self._failure(exc.code, exc.details, False) from None
                self.routes.unary_only(route.address)  # never delivered: safe to send again
            else:
                if response.code:
                    code = _status(response.code)
                    raise self._failure(code, response.message, response.bot_error) from None
                return self._reply(response)
        request = lpb.RelayRequest(bot_id=self.bot_id, session=session, call=call, last=last)
        started = time.monotonic()
        try:
            response = self.routes.relay(route.address)(
                request, timeout=timeout_s + RELAY_MARGIN_S, metadata=((SECRET_HEADER, secret),)
            )
        except grpc.RpcError as exc:
            if not isinstance(exc, grpc.Call):
                raise self._failure(None, "", False) from None
            code = exc.code()
            # The gateway's verdict on the bot comes at the bot's deadline; this worker's own
            # deadline expiring a margin later is the gateway silent, as on a stream.
            if code is grpc.StatusCode.DEADLINE_EXCEEDED and (
                time.monotonic() - started >= timeout_s + RELAY_MARGIN_S / 2
            ):
                raise _silent(route.address, timeout_s) from None
            bot_error = dict(exc.trailing_metadata() or ()).get(BOT_ERROR_HEADER) == "bot"
            raise self._failure(code, exc.details() or "", bot_error) from None
        return self._reply(response)

    def _reply(self, response: lpb.RelayResponse | lpb.RelayStreamResponse) -> bytes:
        self.last_bot_us = response.bot_us if response.HasField("bot_us") else None
        if response.connection_id:
            self.used.add(response.connection_id)
        data: bytes = response.reply
        return data

    def relinked(self) -> bool:
        """Whether a live connection of the bot that this transport has not used is in the
        store: the bot is back after its link dropped (the dropped connection's row may
        linger a moment after the call that found it closed; it does not count)."""
        from arena.link.directory import connection_ids
        from arena.store.db import session_scope

        with session_scope(self.routes.database_url) as session:
            live = connection_ids(session, self.bot_id)
        if live - self.used:
            self.routes.forget(self.bot_id)  # the next match looks afresh
            return True
        return False

    def _failure(self, code: grpc.StatusCode | None, details: str, bot_error: bool) -> Exception:
        where = self._route.address if self._route is not None else "?"
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return LinkTransportError(FaultKind.TIMEOUT, "no reply in time")
        self.routes.forget(self.bot_id)
        if bot_error:
            self._route = None  # not connected there (any more): the next call looks again
            return LinkTransportError(FaultKind.UNREACHABLE, details[:_MAX_REASON])
        name = code.name if code is not None else "UNKNOWN"
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
            return GatewayLostError(f"the gateway at {where} is gone: {name}: {details[:_MAX_REASON]}")
        return GatewayRelayError(f"the gateway at {where} refused the relay: {name}: {details[:_MAX_REASON]}")

    def close(self) -> None:
        pass

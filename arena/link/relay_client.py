"""A match worker's side of the relay: a connected bot's calls, from the worker's
:class:`~arena.link.player.LinkPlayer` to the gateway holding the bot (its side:
arena/link/relay_service.py).

:class:`RelayTransport` is the player's transport for one seat: the first call picks a
gateway from the store's directory (:class:`Routes`, cached for ``ROUTE_TTL_S``, one per
process) and the seat's calls stay with it. A call is one message each way on the process's
:class:`RelayStream`, shared by every match thread, or a unary ``Relay`` to a gateway without
streams. The gateway times the bot itself: its answer says whether the bot replied, timed
out (TIMEOUT) or is not connected there (UNREACHABLE); silence past the bot's deadline and
``RELAY_MARGIN_S`` is the gateway lost (:class:`~arena.link.player.GatewayLostError`, never
the bot's fault), and a refusal (a wrong secret) is :class:`GatewayRelayError`.
"""

from __future__ import annotations

import itertools
import os
import queue
import random
import threading
import time
from typing import Any, Final

import grpc

from arena.link.player import (
    BOT_ERROR_HEADER,
    MAX_REASON,
    RELAY_MARGIN_S,
    SECRET_HEADER,
    GatewayLostError,
    LinkTransportError,
)
from sdk.grpc_player import DEFAULT_MAX_REPLY_BYTES
from sdk.protocol import RELAY_SERVICE_NAME
from sdk.protocol import link_pb2 as lpb
from sdk.referee import FaultKind

#: Seconds a worker trusts what the store said about where a bot is connected.
ROUTE_TTL_S: Final = 1.0


class GatewayRelayError(RuntimeError):
    """The gateway refused a worker's relay (a wrong secret, a bug): the match fails, visibly."""


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
            return LinkTransportError(FaultKind.UNREACHABLE, details[:MAX_REASON])
        name = code.name if code is not None else "UNKNOWN"
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
            return GatewayLostError(f"the gateway at {where} is gone: {name}: {details[:MAX_REASON]}")
        return GatewayRelayError(f"the gateway at {where} refused the relay: {name}: {details[:MAX_REASON]}")

    def close(self) -> None:
        pass


def _status(code: int) -> grpc.StatusCode | None:
    return next((c for c in grpc.StatusCode if c.value[0] == code), None)

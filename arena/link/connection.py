"""One connected bot's stream, as the gateway holds it: calls out with increasing ids, replies
in matched to them, and the checks that end the stream when the bot breaks the protocol
(an unreadable frame, a second hello, a reply to a call never made, too many stray replies).
"""

from __future__ import annotations

import asyncio
import collections
import time
import uuid
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError

from arena.link.player import RELAY_MARGIN_S, LinkTransportError
from sdk.protocol import link_pb2 as lpb
from sdk.referee import FaultKind
from sdk.wire import encode_varint

#: Unanswered calls per connection; more is the arena overloading one bot: refused.
MAX_CALLS_IN_FLIGHT: Final = 256
#: Replies per minute that answer no waiting call (late, repeated) before the stream ends.
MAX_STRAY_PER_MINUTE: Final = 60

#: Put in a connection's outbox to end its stream.
CLOSE: Final = object()


class ConnectionClosedError(Exception):
    """The bot's connection is gone (or going)."""


class Connection:
    """One bot's stream: calls out, replies in, matched by call id."""

    def __init__(self, bot_name: str, owner_id: int, capacity: int, peer: str):
        self.id = uuid.uuid4().hex[:16]
        self.bot_name = bot_name
        self.bot_id = 0
        self.owner_id = owner_id
        self.capacity = capacity
        self.peer = peer
        self.sessions = 0
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()
        self.pending: dict[int, asyncio.Future[bytes]] = {}
        self.next_id = 1
        self.closed = False
        self.error: tuple[grpc.StatusCode, str] | None = None
        self._strays: collections.deque[float] = collections.deque()

    async def call(self, call: bytes, timeout_s: float) -> bytes:
        """Send a serialized LinkCall (call_id 0) and wait for the serialized LinkReply."""
        return await self.send(call, timeout_s)

    def send(self, call: bytes, timeout_s: float) -> asyncio.Future[bytes]:
        """Send a serialized LinkCall (call_id 0); the future gets the serialized LinkReply,
        TimeoutError after ``timeout_s``, or ConnectionClosedError. No task per call: the
        relay stream completes its responses from the future's callback."""
        if self.closed:
            raise ConnectionClosedError("the bot's connection has closed")
        if len(self.pending) >= MAX_CALLS_IN_FLIGHT:
            raise ConnectionClosedError(f"the connection has {MAX_CALLS_IN_FLIGHT} calls unanswered")
        call_id = self.next_id
        self.next_id += 1
        inner = b"\x08" + encode_varint(call_id) + call
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()
        self.pending[call_id] = future
        self.outbox.put_nowait(b"\x12" + encode_varint(len(inner)) + inner)  # ConnectResponse.call
        # A timer rather than asyncio.wait_for, which makes a task per call.
        timer = loop.call_later(max(timeout_s, 0.001), _expire, future)
        future.add_done_callback(lambda _: self._done(call_id, timer))
        return future

    def _done(self, call_id: int, timer: asyncio.TimerHandle) -> None:
        timer.cancel()
        self.pending.pop(call_id, None)

    def on_message(self, data: bytes, count: int) -> None:
        """One message from the bot after its hello; a protocol violation closes the stream."""
        try:
            message = lpb.ConnectRequest.FromString(data)
        except DecodeError as exc:
            raise ViolationError(
                grpc.StatusCode.INVALID_ARGUMENT, f"message {count} is not a ConnectRequest: {exc}"
            ) from None
        kind = message.WhichOneof("message")
        if kind != "reply":
            what = "a second hello" if kind == "hello" else "empty (no hello or reply set)"
            raise ViolationError(
                grpc.StatusCode.INVALID_ARGUMENT, f"message {count} is {what}; only replies may follow"
            )
        call_id = message.reply.call_id
        future = self.pending.pop(call_id, None)
        if future is not None:
            if not future.done():
                future.set_result(_reply_bytes(data, message.reply))
            return
        if call_id == 0 or call_id >= self.next_id:
            raise ViolationError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"message {count} answers call {call_id}, which was never made",
            )
        now = time.monotonic()
        self._strays.append(now)
        while self._strays and self._strays[0] < now - 60:
            self._strays.popleft()
        if len(self._strays) > MAX_STRAY_PER_MINUTE:
            raise ViolationError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"more than {MAX_STRAY_PER_MINUTE} replies a minute answer no waiting call "
                "(late or repeated)",
            )
        notice = lpb.LinkNotice(
            kind="late_reply",
            message=f"the reply to call {call_id} came after its deadline (or twice) and was not used",
        )
        self.outbox.put_nowait(lpb.ConnectResponse(notice=notice).SerializeToString())

    def close(self, error: tuple[grpc.StatusCode, str] | None = None) -> None:
        if self.closed:
            return
        self.closed = True
        if error is not None and self.error is None:
            self.error = error
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionClosedError("the bot's connection closed during the call"))
        self.pending.clear()
        self.outbox.put_nowait(CLOSE)


class ViolationError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class ConnectionTransport:
    """A LinkPlayer's transport straight over one connection (the admission check runs in a
    worker thread; the connection lives on the loop)."""

    def __init__(self, connection: Connection, loop: asyncio.AbstractEventLoop):
        self.connection = connection
        self.loop = loop
        self.last_bot_us: int | None = None

    def call(self, session: str, call: bytes, timeout_s: float, *, last: bool = False) -> bytes:
        self.last_bot_us = None
        future = asyncio.run_coroutine_threadsafe(self._timed(call, timeout_s), self.loop)
        try:
            reply, self.last_bot_us = future.result(timeout_s + RELAY_MARGIN_S)
            return reply
        except TimeoutError:
            raise LinkTransportError(FaultKind.TIMEOUT, "no reply in time") from None
        except ConnectionClosedError as exc:
            raise LinkTransportError(FaultKind.UNREACHABLE, str(exc)) from None

    async def _timed(self, call: bytes, timeout_s: float) -> tuple[bytes, int]:
        # Measured on the loop, as the relay does: not this thread's wait to be scheduled.
        started = time.perf_counter_ns()
        reply = await self.connection.call(call, timeout_s)
        return reply, (time.perf_counter_ns() - started) // 1000

    def close(self) -> None:
        pass


def _reply_bytes(data: bytes, reply: lpb.LinkReply) -> bytes:
    """The LinkReply's bytes as the bot sent them when the message is that field alone (the
    usual case: no re-serialising), else re-serialised."""
    if data[:1] == b"\x12":  # ConnectRequest.reply, length-delimited
        size, at = 0, 1
        for shift in range(0, 35, 7):
            if at >= len(data):
                break
            byte = data[at]
            at += 1
            size |= (byte & 0x7F) << shift
            if byte < 0x80:
                if at + size == len(data):
                    return data[at:]
                break
    out: bytes = reply.SerializeToString()
    return out


def _expire(future: asyncio.Future[bytes]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())



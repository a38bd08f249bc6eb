"""A seat played by a bot over gRPC: the referee's side of ``tonk.v1.BotService``.

Every call has a deadline: a decision gets the request's ``deadline_ms`` (the per-decision
deadline plus the seat's remaining time bank); lifecycle calls get a short fixed one. A failed
call becomes a :class:`~sdk.referee.PlayerFaultError` of the matching kind:

=========================================  ==============
what happened                              fault kind
=========================================  ==============
no reply within the deadline               TIMEOUT
cannot connect / connection lost           UNREACHABLE
the bot answered with an error status      CRASH
a reply that is not a DecideResponse, names
no action, is unreadable or too large      MALFORMED
=========================================  ==============

An index out of range or an illegal action is returned as is: the referee's
:func:`~sdk.referee.resolve_reply` judges it (ILLEGAL).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import grpc

from sdk.actions import Action
from sdk.bot import DealSummary, HandResult, MatchInfo, MatchSummary
from sdk.clock import charged_ns, sampler
from sdk.messages import (
    MalformedReplyError,
    deal_summary_to_proto,
    hand_result_to_proto,
    match_info_to_proto,
    match_summary_to_proto,
)
from sdk.protocol import SERVICE_NAME
from sdk.protocol import bot_pb2 as pb
from sdk.referee import DecisionRequest, FaultKind, PlayerFaultError
from sdk.wire import decode_reply, encode_decide_request

DEFAULT_LIFECYCLE_TIMEOUT_S: Final = 2.0
DEFAULT_MAX_REPLY_BYTES: Final = 64 * 1024
#: Added to a decision's gRPC deadline: the referee, not the transport, judges lateness, so
#: a worker slow to send (a busy process) does not cut an honest bot off.
TRANSPORT_SLACK_S: Final = 0.5
_MAX_REASON: Final = 300  # fault reasons end up in match logs: keep a chatty bot's error short

_UNREACHABLE_CODES: Final = frozenset({grpc.StatusCode.UNAVAILABLE})


def _default_timeout_s(deadline_ms: int) -> float:
    return max(deadline_ms, 1) / 1000 + TRANSPORT_SLACK_S


def _identity(data: bytes) -> bytes:
    return data


def bot_info(info: pb.GetInfoResponse | None, name: str) -> dict[str, str]:
    """A bot's GetInfo as ``Player.describe`` gives it; ``name`` where the bot gave none, or
    did not answer (``info`` None)."""
    if info is None:
        return {"name": name, "version": "", "author": "", "protocol_version": "", "language": ""}
    return {
        "name": info.name or name,
        "version": info.version,
        "author": info.author,
        "protocol_version": info.protocol_version,
        "language": info.language,  # stored with a connected bot's version, as a dialled one's
    }


class GrpcPlayer:
    """A :class:`~sdk.referee.Player` talking to the bot at ``address`` (``HOST:PORT``).

    One channel per player; :meth:`close` closes it. Replies larger than ``max_reply_bytes``
    are refused by gRPC itself (MALFORMED), so a runaway bot cannot exhaust the referee.
    """

    def __init__(
        self,
        address: str,
        *,
        lifecycle_timeout_s: float = DEFAULT_LIFECYCLE_TIMEOUT_S,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        authority: str | None = None,
        transport_timeout_s: Callable[[int], float] | None = None,
    ):
        # ``authority``: the HOST:PORT the bot is known by when ``address`` is the IP it was
        # resolved to (the arena pins a checked resolution; see arena.bots.addresses.resolve_for_dial).
        self.address = address if authority is None else f"{authority} ({address})"
        self.lifecycle_timeout_s = lifecycle_timeout_s
        #: Decide's hard cut-off for a deadline in ms (default: the deadline plus slack). A bot
        #: charged by another clock (the arena's CPU-time clock for the bots it hosts) is given
        #: a wall-clock ceiling of its own here.
        self.transport_timeout_s = transport_timeout_s or _default_timeout_s
        self.max_reply_bytes = max_reply_bytes
        #: While a Decide is in flight, called now and then (past ``watch_after_s``) with the
        #: seconds since it was sent; a reason it returns cuts the call as a TIMEOUT. The arena
        #: watches the bots it hosts by their CPU time and the time the host's load took.
        self.watch: Callable[[float], str | None] | None = None
        self.watch_after_s = 0.0
        self.seat = 0
        #: What the last Decide is charged, in µs: send to reply, without this process's own
        #: lag (sdk.clock); the referee charges this rather than its own wall time.
        self.last_charged_us: int | None = None
        sampler()  # measuring from before the first call
        self._info: dict[str, str] | None = None
        self._target = address
        self._options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_reply_bytes),
            # A retried Decide could reach the bot twice; the referee owns all retrying.
            ("grpc.enable_retries", 0),
        ]
        if authority is not None:
            self._options.append(("grpc.default_authority", authority))
        self._connect()

    def _connect(self) -> None:
        self._channel = grpc.insecure_channel(self._target, options=self._options)
        # Responses come back as bytes and are parsed here, so garbage is MALFORMED, not a
        # transport error.
        method = f"/{SERVICE_NAME}/"
        channel = self._channel
        self._decide = channel.unary_unary(method + "Decide", _identity, _identity)
        self._get_info = channel.unary_unary(method + "GetInfo", _serialize, _identity)
        self._start = channel.unary_unary(method + "StartMatch", _serialize, _identity)
        self._end_hand = channel.unary_unary(method + "EndHand", _serialize, _identity)
        self._end_match = channel.unary_unary(method + "EndMatch", _serialize, _identity)
        self._end_deal = channel.unary_unary(method + "EndDeal", _serialize, _identity)

    def __repr__(self) -> str:
        return f"GrpcPlayer({self.address!r})"

    # -- the Player protocol ------------------------------------------------------------------

    def describe(self) -> dict[str, str]:
        """The bot's GetInfo; a bot that does not answer is named by its address (its faults
        will show up when the match starts)."""
        if self._info is None:
            try:
                data = self._get_info(pb.GetInfoRequest(), timeout=self.lifecycle_timeout_s)
                info = pb.GetInfoResponse.FromString(data)
            except Exception:
                return bot_info(None, self.address)
            self._info = bot_info(info, self.address)
        return dict(self._info)

    def match_start(self, info: MatchInfo) -> None:
        self.seat = info.seat
        self._lifecycle(self._start, match_info_to_proto(info), "StartMatch")

    def act(self, request: DecisionRequest) -> Action | int:
        data = encode_decide_request(request)
        deadline_ms = request.deadline_ms
        self.last_charged_us = None
        # The transport's cut-off has slack for the worker's own lag before the request goes
        # out; the referee judges the deadline by what the call is charged (sdk.clock).
        timeout_s = self.transport_timeout_s(deadline_ms)
        started = time.perf_counter_ns()
        try:
            if self.watch is None:
                reply = self._decide(data, timeout=timeout_s)
            else:
                reply = self._watched(data, timeout_s)
        except grpc.RpcError as exc:
            raise rpc_fault(exc, "Decide", self.address, deadline_ms) from None
        except ValueError as exc:  # e.g. the channel was closed under us
            raise PlayerFaultError(FaultKind.UNREACHABLE, f"Decide: {exc}") from None
        finally:
            self.last_charged_us = charged_ns(started, time.perf_counter_ns()) // 1000
        try:
            return decode_reply(reply)
        except MalformedReplyError as exc:
            raise PlayerFaultError(FaultKind.MALFORMED, str(exc)[:_MAX_REASON]) from None

    def hand_end(self, result: HandResult) -> None:
        self._lifecycle(self._end_hand, hand_result_to_proto(result, self.seat), "EndHand")

    def match_end(self, summary: MatchSummary) -> None:
        self._lifecycle(self._end_match, match_summary_to_proto(summary, self.seat), "EndMatch")

    def deal_end(self, deal: DealSummary) -> None:
        """EndDeal: not part of a match (the arena sends it once a deal is over)."""
        self._lifecycle(self._end_deal, deal_summary_to_proto(deal), "EndDeal")

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> GrpcPlayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------------------------

    def _watched(self, data: bytes, timeout_s: float) -> bytes:
        """A blocking Decide that the process's watchdog looks at past ``watch_after_s``, and
        cuts off by closing this player's channel (then opened anew for the next call) when
        the watch says so. A future would do it without the watchdog, but gRPC starts a
        thread for every future on an otherwise idle channel: half a millisecond of the
        worker's CPU per decision, for a look that nearly every decision ends before."""
        assert self.watch is not None
        call = _Watched(self, self.watch, time.perf_counter(), self.watch_after_s)
        _WATCHDOG.add(call)
        failed: Exception | None = None
        reply = b""
        try:
            reply = self._decide(data, timeout=timeout_s)
        except (grpc.RpcError, ValueError) as exc:  # ValueError: a closed channel
            failed = exc
        finally:
            cut = call.finish()
        if cut is not None:
            self._connect()  # the old channel was closed to end the call
            raise PlayerFaultError(FaultKind.TIMEOUT, f"Decide: {cut}"[:_MAX_REASON])
        if failed is not None:
            raise failed
        return reply

    def _lifecycle(self, call: Any, message: Any, rpc: str) -> None:
        try:
            call(message, timeout=self.lifecycle_timeout_s)
        except grpc.RpcError as exc:
            if _code(exc) is grpc.StatusCode.UNIMPLEMENTED:
                return  # the lifecycle notices are optional for a bot (docs/protocol.md)
            raise rpc_fault(exc, rpc, self.address, int(self.lifecycle_timeout_s * 1000)) from None
        except ValueError as exc:
            raise PlayerFaultError(FaultKind.UNREACHABLE, f"{rpc}: {exc}") from None


class _Watched:
    """One watched Decide in flight (GrpcPlayer._watched)."""

    def __init__(
        self, player: GrpcPlayer, watch: Callable[[float], str | None], started: float, after_s: float
    ):
        self.player = player
        self.watch = watch
        self.started = started
        self.due = started + after_s
        self.cut: str | None = None
        self._done = False
        self._lock = threading.Lock()

    def look(self, now: float) -> None:
        """Ask the watch; cut the call off if it says so and the call is still in flight."""
        reason = self.watch(now - self.started)
        if reason is None:
            return
        with self._lock:
            if self._done or self.cut is not None:
                return
            self.cut = reason
            self.player._channel.close()  # ends the blocking call (CANCELLED)

    def finish(self) -> str | None:
        """The call is over: no more looks. The reason it was cut off, if it was."""
        with self._lock:
            self._done = True
        _WATCHDOG.remove(self)
        return self.cut


class _Watchdog:
    """One thread per process that looks at every watched Decide in flight past its
    ``watch_after_s``, each ``TICK_S`` (the first look is up to a tick late). It waits on a
    condition once no call has been watched for ``IDLE_S``."""

    TICK_S: Final = 0.02
    IDLE_S: Final = 1.0

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """Anew (also in a forked child: the thread is not there, its lock may be held)."""
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._calls: set[_Watched] = set()
        self._thread: threading.Thread | None = None
        self._idle = False

    def add(self, call: _Watched) -> None:
        with self._lock:
            self._calls.add(call)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tonk-decide-watchdog", daemon=True)
                self._thread.start()
            elif self._idle:
                self._wake.notify()

    def remove(self, call: _Watched) -> None:
        with self._lock:
            self._calls.discard(call)

    def _run(self) -> None:
        last_busy = time.perf_counter()
        while True:
            with self._lock:
                now = time.perf_counter()
                if self._calls:
                    last_busy = now
                elif now - last_busy > self.IDLE_S:
                    self._idle = True
                    while not self._calls:
                        self._wake.wait()
                    self._idle = False
                    now = last_busy = time.perf_counter()
                due = [c for c in self._calls if c.due <= now]
            for call in due:
                with contextlib.suppress(Exception):  # one failing watch must not end them all
                    call.look(now)
            time.sleep(self.TICK_S)


_WATCHDOG = _Watchdog()
os.register_at_fork(after_in_child=_WATCHDOG._reset)


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _code(exc: grpc.RpcError) -> grpc.StatusCode | None:
    code = getattr(exc, "code", None)
    return code() if callable(code) else None


def rpc_fault(exc: grpc.RpcError, rpc: str, address: str, deadline_ms: int) -> PlayerFaultError:
    """The fault a failed call is charged as."""
    code = _code(exc)
    details_fn = getattr(exc, "details", None)
    details = (details_fn() if callable(details_fn) else None) or ""
    details = details[:_MAX_REASON]
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return PlayerFaultError(FaultKind.TIMEOUT, f"{rpc}: no reply within {deadline_ms} ms")
    if code in _UNREACHABLE_CODES:
        return PlayerFaultError(FaultKind.UNREACHABLE, f"{rpc}: cannot reach the bot at {address}: {details}")
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details:
        return PlayerFaultError(FaultKind.MALFORMED, f"{rpc}: the reply is too large ({details})")
    name = code.name if code is not None else "UNKNOWN"
    return PlayerFaultError(FaultKind.CRASH, f"{rpc}: the bot answered {name}: {details}")

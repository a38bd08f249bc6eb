"""The referee's side of a connected bot: a :class:`~sdk.referee.Player` whose every call
goes through the gateway holding the bot's connection.

:class:`LinkPlayer` keeps :class:`~sdk.grpc_player.GrpcPlayer`'s contract exactly (the same
deadlines, lifecycle timeout, reply size limit and fault kinds), so the referee cannot tell
which kind of bot it plays. What carries a call is a :class:`LinkTransport`: in a match
worker, ``RelayTransport`` (arena/link/relay_client.py: a message on the process's
``GatewayRelayService.RelayStream`` to the gateway found in the store, or a unary ``Relay``
to a gateway without streams); in the gateway itself, the connection (its admission check,
arena/link/connection.py). The time charged for a decision is the gateway's measure of the
bot's (``RelayResponse.bot_us``), not this worker's wall time.

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
:class:`BotLinkLostError` and the match is handed back: replayed from its start, dealt
afresh, or scored as it stood at the drop (arena/play/cuts.py); if not,
the call faults as UNREACHABLE as before, and so does every later one at once (one wait
per match, never one per call).
"""

from __future__ import annotations

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
from sdk.protocol import bot_pb2 as pb
from sdk.protocol import link_pb2 as lpb
from sdk.referee import DecisionRequest, FaultKind, PlayerFaultError
from sdk.wire import encode_decide_request, encode_varint

#: The longest fault reason: reasons end up in match logs, so a chatty bot's error is cut.
MAX_REASON: Final = 300
#: Extra seconds a transport waits for the gateway's own verdict beyond the bot's deadline.
RELAY_MARGIN_S: Final = 1.0
#: The relay's metadata, as both its ends use it (arena/link/relay_client.py, the worker's;
#: arena/link/relay_service.py, the gateway's): the key of the gateway's secret, and the
#: trailing key the gateway sets on errors about the bot (not about itself).
SECRET_HEADER: Final = "x-tonk-gateway-secret"
BOT_ERROR_HEADER: Final = "x-tonk-link"
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
    wait: the match is handed back (arena/play/cuts.py decides whether it is replayed).
    ``seat``: whose; ``links``: the connections the seat had played on (the one that dropped),
    so one drop seen by several matches is one drop."""

    def __init__(self, reason: str, seat: int, links: frozenset[str] = frozenset()):
        super().__init__(reason)
        self.seat = seat
        self.links = links


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
            raise PlayerFaultError(FaultKind.MALFORMED, str(exc)[:MAX_REASON]) from None

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
                raise BotOfflineError(f"{self.name} is not connected: {exc.reason}"[:MAX_REASON]) from None
            if exc.kind is FaultKind.UNREACHABLE and self._reached and self._relinked_in_time():
                raise BotLinkLostError(
                    f"{self.name}'s link dropped ({rpc}: {exc.reason}) and it connected again"[:MAX_REASON],
                    self.seat,
                    frozenset(getattr(self.transport, "used", ())),
                ) from None
            if exc.kind is FaultKind.TIMEOUT:
                raise PlayerFaultError(
                    FaultKind.TIMEOUT, f"{rpc}: no reply within {deadline_ms} ms"
                ) from None
            raise PlayerFaultError(exc.kind, f"{rpc}: {exc.reason}"[:MAX_REASON]) from None
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
    return f"{rpc}: the bot answered {name}: {error.message}"[:MAX_REASON]

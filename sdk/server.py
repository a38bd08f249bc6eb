"""Serve a :class:`~sdk.bot.Bot` subclass as a ``tonk.v1.BotService`` gRPC server.

    from sdk import serve
    serve(MyBot, port=50051)              # blocks until Ctrl-C / SIGTERM

    running = start_server(MyBot, port=0)  # non-blocking; port 0 picks a free port
    server, port = running                 # unpacks as (grpc.Server, bound port)
    running.stop()

One server plays any number of matches at once, and several seats of one match: each
(match id, seat) gets a fresh bot instance at StartMatch, dropped at EndMatch or after
``idle_timeout_s`` without a call; EndDeal (a deal's matches are all over) goes to a fresh
instance's ``on_deal_end``. Calls for one seat run one at a time; different seats run
in parallel on the thread pool. A bot's exception becomes an INTERNAL status carrying its
message (the traceback is logged here), never a dead server. The server also answers the
standard health service (``grpc.health.v1.Health``) and server reflection, so ``grpcurl``
can list and call it without the .proto files.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Final, NoReturn

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sdk.bot import Bot, MatchInfo
from sdk.messages import (
    ProtocolError,
    deal_summary_from_proto,
    hand_result_from_proto,
    match_info_from_proto,
    match_summary_from_proto,
)
from sdk.protocol import PROTOCOL_VERSION, SERVICE_NAME
from sdk.protocol import bot_pb2 as pb
from sdk.referee import DecisionRequest
from sdk.wire import decode_decide_request, encode_reply

logger = logging.getLogger("tonk.server")

DEFAULT_PORT: Final = 50051
DEFAULT_MAX_WORKERS: Final = 16
DEFAULT_IDLE_TIMEOUT_S: Final = 900.0
#: The most matches at once a bot may declare (GetInfo max_concurrent_matches).
MAX_DECLARED_MATCHES: Final = 256
_MAX_DETAILS: Final = 1000  # an error message longer than this is cut (statuses travel in headers)
# A lifecycle notice for a seat whose abandoned Decide is still running is dropped after this
# wait (the seat is misbehaving; the referee must not wait out its lifecycle deadline).
_BUSY_NOTICE_WAIT_S: Final = 0.05

BotFactory = Callable[[], Bot]


@dataclass
class _SeatSlot:
    """One bot instance, playing one seat of one match."""

    bot: Bot
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)


class BotServicer:
    """The ``tonk.v1.BotService`` implementation around a bot class.

    Registered through a generic handler rather than the generated base class so that Decide
    reads and writes raw bytes through :mod:`sdk.wire`'s fast codecs.
    """

    def __init__(
        self,
        factory: BotFactory,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        claim: str | None = None,
        max_matches: int | None = None,
    ):
        self.factory = factory
        self.idle_timeout_s = idle_timeout_s
        self._slots: dict[tuple[str, int], _SeatSlot] = {}
        self._lock = threading.Lock()
        self._last_sweep = time.monotonic()
        probe = factory()  # fails fast on a bot that cannot even be built, and names the bot
        self.info = pb.GetInfoResponse(
            name=probe.name,
            version=probe.version,
            author=probe.author,
            protocol_version=PROTOCOL_VERSION,
            language="python",
            # An arena's claim code proves the bot's owner runs it (docs/protocol.md).
            claim=(os.environ.get("TONK_CLAIM", "") if claim is None else claim).strip(),
            max_concurrent_matches=probe.max_concurrent_matches if max_matches is None else max_matches,
        )

    # -- bookkeeping ------------------------------------------------------------------------

    @property
    def active_seats(self) -> int:
        """How many (match, seat) bots are alive (for tests and monitoring)."""
        return len(self._slots)

    def _new_slot(self, key: tuple[str, int], info: MatchInfo) -> _SeatSlot:
        bot = self.factory()
        bot.start_match(info)
        slot = _SeatSlot(bot)
        with self._lock:
            self._slots[key] = slot
        self._sweep()
        return slot

    def _sweep(self) -> None:
        # Matches whose referee vanished never send EndMatch; drop their bots once idle.
        now = time.monotonic()
        if now - self._last_sweep < min(60.0, self.idle_timeout_s / 4):
            return
        self._last_sweep = now
        with self._lock:
            stale = [k for k, s in self._slots.items() if now - s.last_used > self.idle_timeout_s]
            for key in stale:
                del self._slots[key]
        if stale:
            logger.info("dropped %d idle match seat(s)", len(stale))

    # -- RPCs ---------------------------------------------------------------------------------

    def get_info(self, request: pb.GetInfoRequest, context: grpc.ServicerContext) -> pb.GetInfoResponse:
        return self.info

    def start_match(
        self, request: pb.StartMatchRequest, context: grpc.ServicerContext
    ) -> pb.StartMatchResponse:
        try:
            info = match_info_from_proto(request)
        except ProtocolError as exc:
            _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        try:
            # A repeated StartMatch (a replayed match id) starts over with a fresh bot.
            self._new_slot((info.match_id, info.seat), info)
        except Exception as exc:
            _bot_error(context, "StartMatch", exc)
        return pb.StartMatchResponse()

    def decide(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            request = decode_decide_request(data)
        except ProtocolError as exc:
            _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        obs = request.observation
        key = (request.match_id, obs.seat)
        try:
            slot = self._slots.get(key) or self._new_slot(key, _info_from_request(request))
        except Exception as exc:
            _bot_error(context, "Decide", exc)
        # The referee asks one seat one thing at a time, so a busy seat means an earlier call
        # it gave up on is still running: wait only as long as this call's deadline allows,
        # or abandoned calls would pile up on the lock and starve every other match.
        if not slot.lock.acquire(timeout=_wait_budget(context)):
            _abort(context, grpc.StatusCode.DEADLINE_EXCEEDED, "the bot is busy with an earlier decision")
        try:
            slot.last_used = time.monotonic()
            reply = slot.bot.act(obs)
        except Exception as exc:
            _bot_error(context, "Decide", exc)
        finally:
            slot.lock.release()
        return encode_reply(reply)

    def end_hand(self, request: pb.EndHandRequest, context: grpc.ServicerContext) -> pb.EndHandResponse:
        slot = self._slots.get((request.match_id, request.seat))
        if slot is None:
            return pb.EndHandResponse()  # nothing to tell: the bot never started (or was dropped)
        try:
            result = hand_result_from_proto(request)
        except ProtocolError as exc:
            _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if not slot.lock.acquire(timeout=_BUSY_NOTICE_WAIT_S):
            _abort(context, grpc.StatusCode.ABORTED, "the bot is still busy with an earlier decision")
        try:
            slot.last_used = time.monotonic()
            slot.bot.on_hand_end(result)
        except Exception as exc:
            _bot_error(context, "EndHand", exc)
        finally:
            slot.lock.release()
        return pb.EndHandResponse()

    def end_match(self, request: pb.EndMatchRequest, context: grpc.ServicerContext) -> pb.EndMatchResponse:
        with self._lock:
            slot = self._slots.pop((request.match_id, request.seat), None)
        if slot is None:
            return pb.EndMatchResponse()
        if not slot.lock.acquire(timeout=_BUSY_NOTICE_WAIT_S):
            _abort(context, grpc.StatusCode.ABORTED, "the bot is still busy with an earlier decision")
        try:
            slot.bot.on_match_end(match_summary_from_proto(request))
        except Exception as exc:
            _bot_error(context, "EndMatch", exc)
        finally:
            slot.lock.release()
        return pb.EndMatchResponse()

    def end_deal(self, request: pb.EndDealRequest, context: grpc.ServicerContext) -> pb.EndDealResponse:
        # The deal's matches are over and their seat bots gone: a fresh instance hears it.
        try:
            deal = deal_summary_from_proto(request)
        except ProtocolError as exc:
            _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        try:
            self.factory().on_deal_end(deal)
        except Exception as exc:
            _bot_error(context, "EndDeal", exc)
        return pb.EndDealResponse()

    def handler(self) -> grpc.GenericRpcHandler:
        def unary(fn: Callable[[Any, Any], Any], msg: Any, out: Any) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=msg.FromString, response_serializer=out.SerializeToString
            )

        return grpc.method_handlers_generic_handler(
            SERVICE_NAME,
            {
                "GetInfo": unary(self.get_info, pb.GetInfoRequest, pb.GetInfoResponse),
                "StartMatch": unary(self.start_match, pb.StartMatchRequest, pb.StartMatchResponse),
                # bytes in, bytes out: the codecs in sdk.wire do the work
                "Decide": grpc.unary_unary_rpc_method_handler(self.decide),
                "EndHand": unary(self.end_hand, pb.EndHandRequest, pb.EndHandResponse),
                "EndMatch": unary(self.end_match, pb.EndMatchRequest, pb.EndMatchResponse),
                "EndDeal": unary(self.end_deal, pb.EndDealRequest, pb.EndDealResponse),
            },
        )


def _info_from_request(request: DecisionRequest) -> MatchInfo:
    # A Decide for a match this server never saw start (it restarted, or a hand-made
    # request from grpcurl / tonk replay-decision): start a bot from what the request says.
    obs = request.observation
    return MatchInfo(
        request.match_id, obs.seat, obs.players, obs.rules, obs.hands_in_match, 0, request.deadline_ms, 0
    )


def _wait_budget(context: grpc.ServicerContext) -> float:
    remaining = context.time_remaining()
    return 60.0 if remaining is None else max(0.0, remaining)


def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, details: str) -> NoReturn:
    context.abort(code, details[:_MAX_DETAILS])
    raise AssertionError("unreachable: context.abort raises")  # for the type checker


def _bot_error(context: grpc.ServicerContext, rpc: str, exc: Exception) -> NoReturn:
    logger.error("bot raised in %s", rpc, exc_info=exc)
    _abort(context, grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")


# -- starting and serving -------------------------------------------------------------------


class RunningServer:
    """A started bot server. Unpacks as ``(server, port)``."""

    def __init__(self, server: grpc.Server, port: int, host: str, servicer: BotServicer, health: Any):
        self.server = server
        self.port = port
        self.host = host
        self.servicer = servicer
        self._health = health

    @property
    def address(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "[::]", "::", "") else self.host
        return f"{host}:{self.port}"

    def __iter__(self) -> Iterator[Any]:
        return iter((self.server, self.port))

    def stop(self, grace: float | None = None) -> None:
        """Report NOT_SERVING to health checks, then stop (waiting ``grace`` seconds for calls)."""
        self._health.enter_graceful_shutdown()
        self.server.stop(grace).wait()


def _factory(bot: type[Bot] | BotFactory) -> BotFactory:
    return bot


def start_server(
    bot: type[Bot] | BotFactory,
    port: int = 0,
    host: str = "127.0.0.1",
    max_workers: int = DEFAULT_MAX_WORKERS,
    *,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    claim: str | None = None,
    max_matches: int | None = None,
    unix_socket: str | None = None,
) -> RunningServer:
    """Start serving ``bot`` (a Bot subclass or a zero-argument factory) without blocking.

    ``port=0`` binds a free port; the bound one is ``RunningServer.port``. ``claim``: the
    arena claim code(s) GetInfo returns (default ``$TONK_CLAIM``). ``max_matches`` is the
    capacity declared in GetInfo (default: the class's ``max_concurrent_matches``).
    ``unix_socket``: listen on this Unix socket path instead of a TCP port (a bot the arena
    hosts in its sandbox has no network, only the socket the worker gives it).
    """
    servicer = BotServicer(_factory(bot), idle_timeout_s, claim, max_matches)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="tonk-bot"),
        # Without this, a second server on a busy port would silently share it (SO_REUSEPORT).
        options=[("grpc.so_reuseport", 0)],
    )
    server.add_generic_rpc_handlers((servicer.handler(),))
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
        server,
    )
    where = f"unix:{unix_socket}" if unix_socket is not None else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(where)
    except RuntimeError:  # newer grpcio raises where older ones returned 0
        bound = 0
    if bound == 0:
        server.stop(None)
        raise OSError(f"cannot listen on {where} (in use, or not an address of this machine)")
    server.start()
    for service in ("", SERVICE_NAME):
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    return RunningServer(server, bound, host, servicer, health_servicer)


def serve(
    bot: type[Bot] | BotFactory,
    port: int = DEFAULT_PORT,
    host: str = "127.0.0.1",
    max_workers: int = DEFAULT_MAX_WORKERS,
    *,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    grace_s: float = 5.0,
    claim: str | None = None,
    max_matches: int | None = None,
) -> None:
    """Serve ``bot`` until interrupted (Ctrl-C or SIGTERM), then stop gracefully."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    running = start_server(
        bot, port, host, max_workers, idle_timeout_s=idle_timeout_s, claim=claim, max_matches=max_matches
    )
    info = running.servicer.info
    logger.info("serving %s %s (%s) on %s:%d", info.name, info.version, PROTOCOL_VERSION, host, running.port)
    stopped = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stopped.wait(0.5):  # a short wait keeps Ctrl-C responsive
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        logger.info("stopping (grace %.1f s)", grace_s)
        running.stop(grace_s)

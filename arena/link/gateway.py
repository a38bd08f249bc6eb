"""The gateway: holds connected bots' streams (``BotLinkService.Connect``) and relays match
workers' calls to them (``GatewayRelayService.RelayStream``, or ``Relay`` one call at a
time), on two ports.

One asyncio loop (grpc.aio) carries every connection and relay, so a gateway holds many
bots with a handful of threads; the store is written from worker threads: the heartbeat has
one of its own, and a new bot's admission check (arena/bots/connected.py) runs on threads of
its own too, holding one of the arena's check slots (arena/bots/check_slots.py) and cut at
``Settings.check_time_limit_s``, so a burst of slow checks cannot stall the heartbeat and make
every bot here look offline. The bots' port is
public and strict: a token connects only its owner's bots, messages are at most
``MAX_MESSAGE_BYTES``, at most ``max_connections_per_owner`` connections per owner, at most
``MAX_CALLS_IN_FLIGHT`` unanswered calls per connection, and anything wrong on a stream
(an unreadable frame, a reply to a call never made, a second hello, a flood of stray
replies) ends that stream with a status saying what, and nothing else. The relay port is
for workers only: every call carries the gateway's secret. The gateway never dials a bot.

Every heartbeat also reads the status and latest version of the bots it holds, since they
may change from anywhere (the dashboard, ``tonk retire``, another gateway): a retired bot's
connections end at once; a connection of an older version than the latest (another build
connected, arena/bots/connected.py) takes no new match seats and ends once its seats end.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hmac
import inspect
import logging
import secrets
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.bots.check_slots import TooManyChecksError, collided, give_back, new_holder, take_slot
from arena.bots.connected import (
    KnownBot,
    LinkRefusedError,
    bot_states,
    check_connected_bot,
    connected_owner,
    find_connected_bot,
    read_info,
    record_connected_version,
    register_connected_bot,
    retired_message,
    same_info,
)
from arena.config import Settings
from arena.link import directory
from arena.link.connection import (
    CLOSE,
    MAX_CALLS_IN_FLIGHT,
    MAX_STRAY_PER_MINUTE,
    Connection,
    ConnectionClosedError,
    ConnectionTransport,
    ViolationError,
)
from arena.link.player import (
    BOT_ERROR_HEADER,
    RELAY_MARGIN_S,
    SECRET_HEADER,
    LinkPlayer,
)
from arena.store.db import session_scope
from arena.store.statuses import BotStatus
from sdk.protocol import LINK_SERVICE_NAME, RELAY_SERVICE_NAME
from sdk.protocol import link_pb2 as lpb

log = logging.getLogger("tonk.gateway")

#: The largest message a bot may send (a reply is a few bytes; GetInfo a few hundred).
MAX_MESSAGE_BYTES: Final = 64 * 1024
#: The most matches one connection may declare.
MAX_CAPACITY: Final = 64
#: Seconds a bot has to say hello after connecting.
HELLO_TIMEOUT_S: Final = 10.0
#: A session (a match seat) idle this long is forgotten (its referee went away).
SESSION_IDLE_S: Final = 900.0


@dataclass
class _Session:
    connection: Connection
    used: float


class Gateway:
    """The gateway's state and both services. :meth:`start` binds, :meth:`stop` ends."""

    def __init__(
        self,
        settings: Settings,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        relay_host: str = "127.0.0.1",
        relay_port: int = 0,
        advertise: str = "",
        secret: str = "",
        max_connections_per_owner: int = 16,
    ):
        self.settings = settings
        self.host, self.port = host, port
        self.relay_host, self.relay_port = relay_host, relay_port
        self.advertise = advertise
        self.configured_secret = secret
        self.secret = secret or secrets.token_hex(32)
        self.max_connections_per_owner = max_connections_per_owner
        self.id = f"{socket.gethostname()[:32]}-{uuid.uuid4().hex[:12]}"
        self.by_bot: dict[int, list[Connection]] = {}
        self.sessions: dict[str, _Session] = {}
        #: Places taken per owner by connections being admitted, and those connections' ids.
        self.admitting: collections.Counter[int] = collections.Counter()
        self.holding: set[str] = set()
        #: Bots that have connected since this gateway started.
        self.seen: set[int] = set()
        #: The bot version each connection here plays (by connection id).
        self.versions: dict[str, int] = {}
        #: Connections of a superseded version: out of ``by_bot`` (no new seats), each
        #: closed with its message once the seats it plays end.
        self.draining: dict[str, tuple[Connection, str]] = {}
        #: Ids of the connections this gateway holds open (admitted or not yet): the store
        #: may list no others of it (see _beat).
        self.open_ids: set[str] = set()
        self._servers: list[grpc.aio.Server] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started = time.monotonic()
        #: Threads for the store (authentication, lookups, registering); the heartbeat has its
        #: own, a known bot's GetInfo its own, and admission checks theirs, so none of them
        #: waits behind another (a reconnecting bot is not held up by others' long checks).
        self.executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="tonk-gateway")
        self.beat_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tonk-gateway-beat")
        self.info_executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="tonk-gateway-info")
        self.check_executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="tonk-gateway-check")

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.started = time.monotonic()
        link = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0),
                ("grpc.keepalive_time_ms", 20_000),
                ("grpc.keepalive_timeout_ms", 10_000),
                ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                ("grpc.keepalive_permit_without_calls", 1),
            ]
        )
        link.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    LINK_SERVICE_NAME, {"Connect": grpc.stream_stream_rpc_method_handler(self.connect)}
                ),
            )
        )
        # Health on the bots' port: what container health checks ask (python -m sdk.health).
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, link)
        relay = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        relay.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    RELAY_SERVICE_NAME,
                    {
                        "Relay": grpc.unary_unary_rpc_method_handler(
                            self.relay,
                            request_deserializer=lpb.RelayRequest.FromString,
                            response_serializer=lpb.RelayResponse.SerializeToString,
                        ),
                        "RelayStream": grpc.stream_stream_rpc_method_handler(
                            self.relay_stream,
                            request_deserializer=lpb.RelayStreamRequest.FromString,
                            response_serializer=lpb.RelayStreamResponse.SerializeToString,
                        ),
                    },
                ),
            )
        )
        self.port = _bind(link, self.host, self.port, "bots")
        self.relay_port = _bind(relay, self.relay_host, self.relay_port, "relay")
        self.advertise = self.advertise or f"{_dialable(self.relay_host)}:{self.relay_port}"
        self._servers = [link, relay]
        await self._store(self._register)
        for server in self._servers:
            await server.start()
        await self._health.set("", health_pb2.HealthCheckResponse.SERVING)
        self._tasks.append(asyncio.create_task(self._beat()))
        log.info(
            "gateway %s: bots connect to %s:%d, workers relay via %s",
            self.id,
            self.host,
            self.port,
            self.advertise,
        )

    async def stop(self, grace: float = 1.0) -> None:
        for task in self._tasks:
            task.cancel()
        for connections in list(self.by_bot.values()):
            for connection in connections:
                connection.close((grpc.StatusCode.UNAVAILABLE, "the gateway is shutting down; reconnect"))
        await asyncio.gather(*(s.stop(grace) for s in self._servers), return_exceptions=True)
        try:
            await self._store(lambda s: directory.drop_gateway(s, self.id))
        except Exception:  # the store gone too: the lease ends our rows
            log.warning("gateway %s: could not remove its rows from the store", self.id)
        for executor in (self.executor, self.beat_executor, self.info_executor, self.check_executor):
            executor.shutdown(wait=False, cancel_futures=True)

    async def _store(self, work: Callable[[Any], Any], executor: ThreadPoolExecutor | None = None) -> Any:
        def run() -> Any:
            with session_scope(self.settings.database_url) as session:
                return work(session)

        assert self.loop is not None
        return await self.loop.run_in_executor(executor or self.executor, run)

    async def _beat_store(self, work: Callable[[Any], Any]) -> Any:
        """The heartbeat's store work, on its own thread: a burst of connections (each
        authenticated and looked up on ``executor``) must not make this gateway look dead."""
        return await self._store(work, self.beat_executor)

    def _register(self, session: Session) -> None:
        stored_secret = None if self.configured_secret else self.secret
        directory.register_gateway(session, self.id, self.advertise, stored_secret)
        for connections in self.by_bot.values():
            for c in connections:
                directory.add_connection(session, c.id, self.id, c.bot_id, c.owner_id, c.capacity, c.peer)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(directory.HEARTBEAT_S)
            try:
                if not await self._beat_store(lambda s: directory.heartbeat(s, self.id)):
                    await self._beat_store(self._register)  # presumed dead by someone: come back
            except Exception as exc:
                log.warning("gateway %s: heartbeat failed: %s", self.id, exc)
            try:  # a connection whose row outlived it (its removal lost in a race) goes now
                prune = functools.partial(_prune_connections, self.id, frozenset(self.open_ids))
                await self._beat_store(prune)
            except Exception as exc:
                log.warning("gateway %s: could not prune its connections in the store: %s", self.id, exc)
            try:
                await self._check_bots()
            except Exception as exc:
                log.warning("gateway %s: could not check its bots in the store: %s", self.id, exc)
            now = time.monotonic()
            for key, held in list(self.sessions.items()):
                if now - held.used > SESSION_IDLE_S:
                    self._unpin(key)

    async def _check_bots(self) -> None:
        """End the connections of bots retired since they connected, and retire connections
        of a version older than the bot's latest."""
        held = {c.bot_id for cs in self.by_bot.values() for c in cs}
        held |= {c.bot_id for c, _ in self.draining.values()}
        if held:
            states = await self._beat_store(lambda s: bot_states(s, sorted(held)))
            for bot_id, (status, latest) in states.items():
                if status != BotStatus.ACTIVE:
                    gone = list(self.by_bot.get(bot_id, ()))
                    gone += [c for c, _ in self.draining.values() if c.bot_id == bot_id]
                    for connection in gone:
                        log.info("gateway: %s was retired: closing %s", connection.bot_name, connection.id)
                        connection.close(
                            (grpc.StatusCode.FAILED_PRECONDITION, retired_message(connection.bot_name))
                        )
                else:
                    await self._supersede(bot_id, latest)
        for connection, message in list(self.draining.values()):
            if connection.sessions <= 0:
                connection.close((grpc.StatusCode.FAILED_PRECONDITION, message))

    async def _supersede(self, bot_id: int, latest: int) -> None:
        """Take the bot's connections of a version before ``latest`` out of play: no new
        seats go to them, the directory stops counting them, and each ends once idle."""
        for connection in list(self.by_bot.get(bot_id, ())):
            version = self.versions.get(connection.id, latest)
            if version >= latest:
                continue
            self.by_bot[bot_id].remove(connection)
            if not self.by_bot[bot_id]:
                del self.by_bot[bot_id]
            message = (
                f"bot {connection.bot_name!r} is now version {latest} (a connection with other GetInfo "
                f"passed the admission check); this connection played version {version} and is closed "
                "once its matches end: run only the new build"
            )
            self.draining[connection.id] = (connection, message)
            log.info("gateway: %s (%s) superseded by version %d", connection.bot_name, connection.id, latest)
            await self._store(functools.partial(_remove_connection, connection.id))
            if connection.sessions <= 0:
                connection.close((grpc.StatusCode.FAILED_PRECONDITION, message))

    # -- bots connecting -----------------------------------------------------------------------

    async def connect(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        peer = context.peer() or ""
        try:
            owner_id, hello = await self._hello(requests, context)
        except LinkRefusedError as exc:
            log.info("gateway: refused %s: %s", peer, exc.message)
            await context.abort(getattr(grpc.StatusCode, exc.status), exc.message)
            return
        capacity = min(max(hello.capacity, 1), MAX_CAPACITY)
        connection = Connection(hello.bot_name, owner_id, capacity, peer)
        self.holding.add(connection.id)  # the place _hello took
        self.open_ids.add(connection.id)
        reader = asyncio.create_task(self._read(requests, connection))
        admit = asyncio.create_task(self._admit(connection, hello))
        try:
            while True:
                item = await connection.outbox.get()
                if item is CLOSE:
                    break
                yield item
        finally:
            reader.cancel()
            admit.cancel()
            self._release(connection)  # if admission never ran to its end
            connection.close()
            await self._forget(connection)
        if connection.error is not None:
            code, message = connection.error
            log.info("gateway: closed %s (%s): %s", connection.bot_name, peer, message)
            await context.abort(code, message)

    async def _hello(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> tuple[int, lpb.LinkHello]:
        token = ""
        for key, value in context.invocation_metadata() or ():
            if key == "authorization" and isinstance(value, str):
                token = value
        from arena.bots.owners import parse_bearer

        def owner_of(session: Session) -> int:
            from arena.bots.owners import authenticate
            from arena.errors import ArenaError

            try:
                return authenticate(session, parse_bearer(token), self.settings).id
            except ArenaError as exc:
                raise LinkRefusedError(
                    "UNAUTHENTICATED", f"{exc}; send 'authorization: Bearer <token>'"
                ) from None

        owner_id = int(await self._store(owner_of))
        try:
            first = await asyncio.wait_for(requests.__anext__(), HELLO_TIMEOUT_S)
        except TimeoutError:
            raise LinkRefusedError("DEADLINE_EXCEEDED", f"no hello within {HELLO_TIMEOUT_S:.0f} s") from None
        except StopAsyncIteration:
            raise LinkRefusedError("INVALID_ARGUMENT", "the stream ended before its hello") from None
        try:
            message = lpb.ConnectRequest.FromString(first)
        except DecodeError as exc:
            raise LinkRefusedError(
                "INVALID_ARGUMENT", f"the first message is not a ConnectRequest: {exc}"
            ) from None
        if message.WhichOneof("message") != "hello":
            raise LinkRefusedError("INVALID_ARGUMENT", "the first message must be a hello (LinkHello)")
        if message.hello.capacity < 1:
            raise LinkRefusedError(
                "INVALID_ARGUMENT", f"capacity must be 1 or more, got {message.hello.capacity}"
            )
        known = await self._store(lambda s: directory.owner_connections(s, owner_id))
        # Check and take in one step (no await between them): a burst of connections, each
        # past its awaits at once, must not all see the same free places (issue 29: 40 at
        # once got 19 welcomes against 16). The place is held in ``admitting`` until the
        # connection is admitted (then it is counted in ``by_bot``) or refused.
        here = sum(1 for cs in self.by_bot.values() for c in cs if c.owner_id == owner_id)
        if max(here, known) + self.admitting[owner_id] >= self.max_connections_per_owner:
            raise LinkRefusedError(
                "RESOURCE_EXHAUSTED",
                f"the owner already has {self.max_connections_per_owner} connections, the most allowed",
            )
        self.admitting[owner_id] += 1
        return owner_id, message.hello

    async def _read(self, requests: AsyncIterator[bytes], connection: Connection) -> None:
        count = 1
        try:
            async for data in requests:
                count += 1
                connection.on_message(data, count)
        except ViolationError as exc:
            connection.close((exc.code, exc.message))
        except asyncio.CancelledError:
            raise  # the RPC ended under us (the bot gone) or connect() is done with us
        except Exception as exc:  # the transport failed (too large, reset): this stream only
            connection.close((grpc.StatusCode.INVALID_ARGUMENT, f"the stream failed: {exc}"[:300]))
        finally:
            connection.close()  # however reading ended, nothing more comes: connect() ends it

    def _release(self, connection: Connection) -> None:
        """Give back the place _hello took for ``connection`` (once)."""
        if connection.id in self.holding:
            self.holding.discard(connection.id)
            self.admitting[connection.owner_id] -= 1

    async def _admit(self, connection: Connection, hello: lpb.LinkHello) -> None:
        try:

            def lookup(session: Session) -> KnownBot | None:
                owner = connected_owner(session, connection.owner_id)
                return find_connected_bot(session, owner, hello.bot_name)

            known = await self._store(lookup)
            registered = changed = False
            assert self.loop is not None
            player = LinkPlayer(hello.bot_name, ConnectionTransport(connection, self.loop))
            if known is not None:
                # Another build (other GetInfo) is checked again and becomes a new version.
                info = await self.loop.run_in_executor(self.info_executor, read_info, player)
                if not same_info(info, known):
                    await self._check(connection, player, hello.bot_name, info)

                    def record(session: Session) -> KnownBot:
                        owner = connected_owner(session, connection.owner_id)
                        return record_connected_version(session, owner, hello.bot_name, info)

                    known = await self._store(record)
                    changed = True
            if known is None:
                info = await self._check(connection, player, hello.bot_name, None)

                def register(session: Session) -> KnownBot:
                    owner = connected_owner(session, connection.owner_id)
                    return register_connected_bot(session, owner, hello.bot_name, info)

                known = await self._store(register)
                registered = True
            connection.bot_id = known.bot_id
            version = known.version
            await self._store(
                lambda s: directory.add_connection(
                    s,
                    connection.id,
                    self.id,
                    known.bot_id,
                    connection.owner_id,
                    connection.capacity,
                    connection.peer,
                )
            )
        except LinkRefusedError as exc:
            connection.close((getattr(grpc.StatusCode, exc.status), exc.message))
            return
        except Exception as exc:
            log.exception("gateway: admitting %s failed", hello.bot_name)
            connection.close((grpc.StatusCode.INTERNAL, f"the arena could not admit the bot: {exc}"[:300]))
            return
        finally:
            if connection.closed:
                self._release(connection)
        if connection.closed:
            await self._store(lambda s: directory.remove_connection(s, connection.id))
            return
        self.by_bot.setdefault(connection.bot_id, []).append(connection)
        self._release(connection)  # counted in by_bot from now on, in the same step
        self.versions[connection.id] = version
        self.seen.add(connection.bot_id)
        welcome = lpb.LinkWelcome(
            connection_id=connection.id,
            bot_name=hello.bot_name,
            capacity=connection.capacity,
            registered=registered,
            limits=lpb.LinkLimits(
                max_message_bytes=MAX_MESSAGE_BYTES,
                max_calls_in_flight=MAX_CALLS_IN_FLIGHT,
                max_stray_replies_per_minute=MAX_STRAY_PER_MINUTE,
            ),
        )
        connection.outbox.put_nowait(lpb.ConnectResponse(welcome=welcome).SerializeToString())
        if changed:
            notice = lpb.LinkNotice(
                kind="new_version",
                message=f"this build's GetInfo differs from the last one's: recorded as version {version}",
            )
            connection.outbox.put_nowait(lpb.ConnectResponse(notice=notice).SerializeToString())
            await self._supersede(connection.bot_id, version)
        log.info(
            "gateway: %s connected (%s, capacity %d)", hello.bot_name, connection.peer, connection.capacity
        )

    async def _check(
        self, connection: Connection, player: LinkPlayer, name: str, info: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The admission check of ``connection``'s bot (check_connected_bot), holding one of
        the arena's check slots (the dashboard's too: arena/bots/check_slots.py) and cut at
        ``Settings.check_time_limit_s``, on the threads for checks. No free slot: the connection
        is refused with RESOURCE_EXHAUSTED (the SDK's client retries), and nothing is checked."""
        assert self.loop is not None
        loop = self.loop
        holder = new_holder()

        def take(session: Session) -> int:
            try:
                return take_slot(session, connection.owner_id, holder, self.settings.check_slots)
            except TooManyChecksError as exc:
                raise LinkRefusedError("RESOURCE_EXHAUSTED", str(exc)) from None
            except IntegrityError:
                raise LinkRefusedError("RESOURCE_EXHAUSTED", str(collided())) from None

        slot = await self._store(take)

        def cut(refused: LinkRefusedError) -> None:  # from the budget's timer thread
            error = (getattr(grpc.StatusCode, refused.status), refused.message)
            loop.call_soon_threadsafe(connection.close, error)

        try:
            checked: dict[str, Any] = await loop.run_in_executor(
                self.check_executor, check_connected_bot, player, name, self.settings, info, cut
            )
            return checked
        finally:
            try:
                await self._store(functools.partial(_give_back, slot, holder))
            except Exception:
                log.warning("gateway: could not give back check slot %d; it lapses on its own", slot)

    async def _forget(self, connection: Connection) -> None:
        self.open_ids.discard(connection.id)
        held = self.by_bot.get(connection.bot_id)
        if held and connection in held:
            held.remove(connection)
            if not held:
                del self.by_bot[connection.bot_id]
        self.versions.pop(connection.id, None)
        self.draining.pop(connection.id, None)
        for key, session in list(self.sessions.items()):
            if session.connection is connection:
                del self.sessions[key]
        if connection.bot_id:
            try:
                await self._store(lambda s: directory.remove_connection(s, connection.id))
            except Exception:
                log.warning("gateway: could not remove connection %s from the store", connection.id)

    # -- workers relaying -------------------------------------------------------------------------

    def _secret_ok(self, context: grpc.aio.ServicerContext) -> bool:
        given = ""
        for key, value in context.invocation_metadata() or ():
            if key == SECRET_HEADER and isinstance(value, str):
                given = value
        return hmac.compare_digest(given.encode(), self.secret.encode())

    def _route(self, bot_id: int, session: str) -> tuple[Connection | None, str, bool]:
        """The connection a session's call goes to, or None with why and whether it is
        about the bot (True) or this gateway (False)."""
        connection = self._pin(bot_id, session)
        if connection is not None:
            return connection, "", True
        fresh = time.monotonic() - self.started < directory.GATEWAY_LEASE_S
        if fresh and bot_id not in self.seen:
            # Just (re)started and the bot has not reconnected yet: not the bot's fault; the
            # worker plays the match again later (arena/link/player.GatewayLostError).
            return None, "the gateway has just started", False
        return None, "the bot is not connected to the arena", True

    async def relay(self, request: lpb.RelayRequest, context: grpc.aio.ServicerContext) -> lpb.RelayResponse:
        if not self._secret_ok(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "wrong or missing gateway secret")
        connection, why, about_bot = self._route(request.bot_id, request.session)
        if connection is None:
            if about_bot:
                context.set_trailing_metadata(((BOT_ERROR_HEADER, "bot"),))
            await context.abort(grpc.StatusCode.UNAVAILABLE, why)
            raise AssertionError("unreachable")
        remaining = context.time_remaining()
        timeout_s = 60.0 if remaining is None else remaining - RELAY_MARGIN_S
        started = time.perf_counter_ns()
        try:
            reply = await connection.call(request.call, timeout_s)
        except TimeoutError:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the bot did not reply in time")
        except ConnectionClosedError as exc:
            context.set_trailing_metadata(((BOT_ERROR_HEADER, "bot"),))
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        finally:
            if request.last:
                self._unpin(request.session)
        bot_us = (time.perf_counter_ns() - started) // 1000
        return lpb.RelayResponse(reply=reply, connection_id=connection.id, bot_us=bot_us)

    async def relay_stream(
        self, requests: AsyncIterator[lpb.RelayStreamRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[lpb.RelayStreamResponse]:
        """Relay, many calls on one stream: no RPC (and no task) per call, the point of it."""
        if not self._secret_ok(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "wrong or missing gateway secret")
        out: asyncio.Queue[lpb.RelayStreamResponse | None] = asyncio.Queue()
        open_calls = [0, 1]  # calls awaiting the bot; 1 while the worker may send more

        def finish(response: lpb.RelayStreamResponse | None) -> None:
            if response is not None:
                out.put_nowait(response)
                open_calls[0] -= 1
            if open_calls == [0, 0]:
                out.put_nowait(None)

        async def read() -> None:
            try:
                async for request in requests:
                    open_calls[0] += 1
                    self._relay_one(request, finish)
            finally:
                open_calls[1] = 0
                finish(None)

        reader = asyncio.create_task(read())
        try:
            while (item := await out.get()) is not None:
                yield item
        finally:
            reader.cancel()

    def _relay_one(
        self, request: lpb.RelayStreamRequest, finish: Callable[[lpb.RelayStreamResponse], None]
    ) -> None:
        """Send one streamed call to its bot; ``finish`` gets its response (now or later)."""
        call_id, session, last = request.id, request.session, request.last
        unavailable = grpc.StatusCode.UNAVAILABLE.value[0]
        connection, why, about_bot = self._route(request.bot_id, session)
        if connection is None:
            finish(lpb.RelayStreamResponse(id=call_id, code=unavailable, message=why, bot_error=about_bot))
            return
        timeout_s = (request.timeout_ms or 60_000) / 1000
        started = time.perf_counter_ns()
        try:
            future = connection.send(request.call, timeout_s)
        except ConnectionClosedError as exc:
            if last:
                self._unpin(session)
            finish(lpb.RelayStreamResponse(id=call_id, code=unavailable, message=str(exc), bot_error=True))
            return

        def done(future: asyncio.Future[bytes]) -> None:
            if last:
                self._unpin(session)
            error = None if future.cancelled() else future.exception()
            if future.cancelled() or isinstance(error, ConnectionClosedError):
                text = str(error) if error else "the bot's connection closed during the call"
                finish(lpb.RelayStreamResponse(id=call_id, code=unavailable, message=text, bot_error=True))
            elif isinstance(error, TimeoutError):
                finish(
                    lpb.RelayStreamResponse(
                        id=call_id,
                        code=grpc.StatusCode.DEADLINE_EXCEEDED.value[0],
                        message="the bot did not reply in time",
                    )
                )
            elif error is not None:
                internal = grpc.StatusCode.INTERNAL.value[0]
                finish(lpb.RelayStreamResponse(id=call_id, code=internal, message=str(error)[:300]))
            else:
                bot_us = (time.perf_counter_ns() - started) // 1000
                finish(
                    lpb.RelayStreamResponse(
                        id=call_id, reply=future.result(), connection_id=connection.id, bot_us=bot_us
                    )
                )

        future.add_done_callback(done)

    def _pin(self, bot_id: int, key: str) -> Connection | None:
        held = self.sessions.get(key)
        if held is not None and not held.connection.closed:
            held.used = time.monotonic()
            return held.connection
        if held is not None:
            self._unpin(key)
        live = [c for c in self.by_bot.get(bot_id, ()) if not c.closed]
        if not live:
            return None
        connection = min(live, key=lambda c: (c.sessions / c.capacity, len(c.pending)))
        connection.sessions += 1
        self.sessions[key] = _Session(connection, time.monotonic())
        return connection

    def _unpin(self, key: str) -> None:
        held = self.sessions.pop(key, None)
        if held is not None:
            held.connection.sessions -= 1


def _give_back(slot: int, holder: str, session: Session) -> None:
    give_back(session, slot, holder)


def _prune_connections(gateway_id: str, keep: frozenset[str], session: Session) -> None:
    directory.prune_connections(session, gateway_id, keep)


def _remove_connection(connection_id: str, session: Session) -> None:
    directory.remove_connection(session, connection_id)


def _bind(server: grpc.aio.Server, host: str, port: int, what: str) -> int:
    try:
        bound = int(server.add_insecure_port(f"{host}:{port}"))
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise OSError(f"the gateway cannot listen for {what} on {host}:{port} (in use?)")
    return bound


def _dialable(host: str) -> str:
    return socket.gethostname() if host in ("0.0.0.0", "::", "[::]", "") else host


class GatewayThread:
    """A gateway on its own loop in a daemon thread (``tonk dashboard``, ``tonk demo``,
    tests): ``start()`` returns once it listens; ``stop()`` ends it."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tonk-gateway", daemon=True)

    def start(self) -> Gateway:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.gateway.start(), self._loop).result(30)
        return self.gateway

    def stop(self) -> None:
        """Idempotent. Interrupted (a signal while it waits), the loop still stops, and the
        gateway's stop coroutine is closed rather than left unawaited (Python warns of that)."""
        if self._loop.is_closed():
            return
        stopping = self.gateway.stop()
        try:
            if self._thread.is_alive():
                asyncio.run_coroutine_threadsafe(stopping, self._loop).result(30)
        finally:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(10)
            if inspect.getcoroutinestate(stopping) in (inspect.CORO_CREATED, inspect.CORO_SUSPENDED):
                stopping.close()  # never started, or cut short: nothing will resume it
            if not self._loop.is_running():
                self._loop.close()

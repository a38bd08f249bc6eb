"""The gateway: holds connected bots' streams (``BotLinkService.Connect``) and relays match
workers' calls to them (``GatewayRelayService.RelayStream``, or ``Relay`` one call at a
time), on two ports. This module is the process: its ports, its threads, its row in the
store's directory and its heartbeat; each port and what it holds have a module of their own::

    bots ──Connect──▶ LinkService                      workers ──RelayStream──▶ RelayService
                      (link_service.py: hello,                                  (relay_service.py:
                       admission check, welcome,                                 the secret, the
                       the connection's row)                                     bot's time)
                          │ hold, forget                                             │ route, unpin
                          ▼                                                          ▼
                      Holdings (holdings.py): the connections, their places and their seats
                          ▲
                          │ retire, supersede, idle seats
                      Gateway (here): ports, threads; register, heartbeat, prune ──▶ the store's
                                                                                  directory

One asyncio loop (grpc.aio) carries every connection and relay, so a gateway holds many
bots with a handful of threads; the store is written from worker threads: the heartbeat has
one of its own, and a new bot's admission check runs on threads of its own too
(arena/link/link_service.py), so a burst of slow checks cannot stall the heartbeat and make
every bot here look offline. The bots' port is public and strict (a token connects only its
owner's bots; at most ``max_connections_per_owner`` connections per owner); the relay port
is for workers only: every call carries the gateway's secret. The gateway never dials a bot.

Every heartbeat also reads the status and latest version of the bots it holds, since they
may change from anywhere (the dashboard, ``tonk retire``, another gateway): a retired bot's
connections end at once; a connection of an older version than the latest (another build
connected, arena/bots/connected.py) takes no new match seats and ends once its seats end.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from sqlalchemy.orm import Session

from arena.bots.connected import bot_states, retired_message
from arena.config import Settings
from arena.link import directory
from arena.link.holdings import Holdings
from arena.link.link_service import MAX_MESSAGE_BYTES, LinkService
from arena.link.relay_service import RelayService
from arena.link.threadpool import IdleExitThreadPool
from arena.store.db import session_scope
from arena.store.statuses import BotStatus
from sdk.protocol import LINK_SERVICE_NAME, RELAY_SERVICE_NAME
from sdk.protocol import link_pb2 as lpb

log = logging.getLogger("tonk.gateway")


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
        self.id = f"{socket.gethostname()[:32]}-{uuid.uuid4().hex[:12]}"
        self.holdings = Holdings()
        self._servers: list[grpc.aio.Server] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        #: Threads for the store (authentication, lookups, registering); the heartbeat has its
        #: own, so that a burst of connections cannot make this gateway look dead. A burst
        #: starts many; they end once idle (arena/link/threadpool.py).
        self.executor = IdleExitThreadPool(32, "tonk-gateway")
        self.beat_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tonk-gateway-beat")
        self.link_service = LinkService(
            settings, self.id, self.holdings, self._store, max_connections_per_owner
        )
        self.relay_service = RelayService(self.holdings, self.secret)

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.holdings.started = time.monotonic()
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
                    LINK_SERVICE_NAME,
                    {"Connect": grpc.stream_stream_rpc_method_handler(self.link_service.connect)},
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
                            self.relay_service.relay,
                            request_deserializer=lpb.RelayRequest.FromString,
                            response_serializer=lpb.RelayResponse.SerializeToString,
                        ),
                        "RelayStream": grpc.stream_stream_rpc_method_handler(
                            self.relay_service.relay_stream,
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
        for connection in self.holdings.connections():
            connection.close((grpc.StatusCode.UNAVAILABLE, "the gateway is shutting down; reconnect"))
        await asyncio.gather(*(s.stop(grace) for s in self._servers), return_exceptions=True)
        try:
            await self._store(lambda s: directory.drop_gateway(s, self.id))
        except Exception:  # the store gone too: the lease ends our rows
            log.warning("gateway %s: could not remove its rows from the store", self.id)
        for executor in (self.executor, self.beat_executor):
            executor.shutdown(wait=False, cancel_futures=True)
        self.link_service.close()

    async def _store(self, work: Callable[[Any], Any], executor: Executor | None = None) -> Any:
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
        for c in self.holdings.connections():
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
                prune = functools.partial(_prune_connections, self.id, frozenset(self.holdings.open_ids))
                await self._beat_store(prune)
            except Exception as exc:
                log.warning("gateway %s: could not prune its connections in the store: %s", self.id, exc)
            try:
                await self._check_bots()
            except Exception as exc:
                log.warning("gateway %s: could not check its bots in the store: %s", self.id, exc)
            self.holdings.sweep(time.monotonic())

    async def _check_bots(self) -> None:
        """End the connections of bots retired since they connected, and retire connections
        of a version older than the bot's latest."""
        held = self.holdings.bot_ids()
        if held:
            states = await self._beat_store(lambda s: bot_states(s, sorted(held)))
            for bot_id, (status, latest) in states.items():
                if status != BotStatus.ACTIVE:
                    for connection in self.holdings.of_bot(bot_id):
                        log.info("gateway: %s was retired: closing %s", connection.bot_name, connection.id)
                        connection.close(
                            (grpc.StatusCode.FAILED_PRECONDITION, retired_message(connection.bot_name))
                        )
                else:
                    await self.link_service.supersede(bot_id, latest)
        for connection, message in self.holdings.drained():
            connection.close((grpc.StatusCode.FAILED_PRECONDITION, message))


def _prune_connections(gateway_id: str, keep: frozenset[str], session: Session) -> None:
    directory.prune_connections(session, gateway_id, keep)


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

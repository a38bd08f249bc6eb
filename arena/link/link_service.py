"""The gateway's bots' port: ``BotLinkService.Connect``, a connected bot's stream from its
first message to its end (the gateway's other port: arena/link/relay_service.py).

A connection is admitted in this order, refused at the first step that fails (with a status
saying why, and nothing else kept):

1. **Hello**: the token names an owner (``authorization: Bearer``), the first message is a
   ``LinkHello`` within ``HELLO_TIMEOUT_S``, and the owner has a free place: at most
   ``max_connections_per_owner`` connections, here and over every gateway
   (arena/link/holdings.py takes the place).
2. **Admission**: a known bot with the same GetInfo plays on as its latest version; other
   GetInfo, or a name nobody has, passes the admission check first (arena/bots/connected.py),
   over the connection itself, holding one of the arena's check slots
   (arena/bots/check_slots.py) and cut at ``Settings.check_time_limit_s``, on threads of its
   own, so that a burst of slow checks holds up neither a known bot's welcome nor the
   heartbeat. It is then registered, or recorded as the bot's next version.
3. **Welcome**: the connection is in the store's directory and held here; the welcome
   states the stream's limits. A new version supersedes the bot's older connections: they
   take no new seats and end once their seats end (:meth:`LinkService.supersede`).

The port is strict: messages are at most ``MAX_MESSAGE_BYTES``, a connection declares at
most ``MAX_CAPACITY`` matches, and anything wrong on a stream (arena/link/connection.py: an
unreadable frame, a second hello, a reply to a call never made, a flood of stray replies)
ends that stream, and only it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.bots.check_slots import TooManyChecksError, collided, give_back, new_holder, take_slot
from arena.bots.connected import (
    KnownBot,
    LinkRefusedError,
    check_connected_bot,
    connected_owner,
    find_connected_bot,
    read_info,
    record_connected_version,
    register_connected_bot,
    same_info,
)
from arena.config import Settings
from arena.link import directory
from arena.link.connection import (
    CLOSE,
    MAX_CALLS_IN_FLIGHT,
    MAX_STRAY_PER_MINUTE,
    Connection,
    ConnectionTransport,
    ViolationError,
)
from arena.link.holdings import Holdings
from arena.link.player import LinkPlayer
from arena.link.threadpool import IdleExitThreadPool
from sdk.protocol import link_pb2 as lpb

log = logging.getLogger("tonk.gateway")

#: The largest message a bot may send (a reply is a few bytes; GetInfo a few hundred).
MAX_MESSAGE_BYTES: Final = 64 * 1024
#: The most matches one connection may declare.
MAX_CAPACITY: Final = 64
#: Seconds a bot has to say hello after connecting.
HELLO_TIMEOUT_S: Final = 10.0

#: Runs ``work`` with a store session on one of the gateway's store threads.
StoreWork = Callable[[Callable[[Session], Any]], Awaitable[Any]]


class LinkService:
    """``BotLinkService.Connect`` for one gateway: admits bots into ``holdings``, and keeps
    the store's directory (``gateway_id``'s connections) in step, through ``store``."""

    def __init__(
        self,
        settings: Settings,
        gateway_id: str,
        holdings: Holdings,
        store: StoreWork,
        max_connections_per_owner: int,
    ):
        self.settings = settings
        self.gateway_id = gateway_id
        self.holdings = holdings
        self.store = store
        self.max_connections_per_owner = max_connections_per_owner
        #: A known bot's GetInfo has threads of its own, and admission checks theirs, so
        #: neither waits behind the other (a reconnecting bot is not held up by others' long
        #: checks), nor the store's threads behind either. A burst starts many; they end once
        #: idle (arena/link/threadpool.py).
        self.info_executor = IdleExitThreadPool(16, "tonk-gateway-info")
        self.check_executor = IdleExitThreadPool(32, "tonk-gateway-check")

    def close(self) -> None:
        for executor in (self.info_executor, self.check_executor):
            executor.shutdown(wait=False, cancel_futures=True)

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
        self.holdings.opened(connection)  # the place _hello took
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
            self.holdings.release(connection)  # if admission never ran to its end
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

        owner_id = int(await self.store(owner_of))
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
        known = await self.store(lambda s: directory.owner_connections(s, owner_id))
        if not self.holdings.take_place(owner_id, known, self.max_connections_per_owner):
            raise LinkRefusedError(
                "RESOURCE_EXHAUSTED",
                f"the owner already has {self.max_connections_per_owner} connections, the most allowed",
            )
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

    async def _admit(self, connection: Connection, hello: lpb.LinkHello) -> None:
        try:

            def lookup(session: Session) -> KnownBot | None:
                owner = connected_owner(session, connection.owner_id)
                return find_connected_bot(session, owner, hello.bot_name)

            known = await self.store(lookup)
            registered = changed = False
            loop = asyncio.get_running_loop()
            player = LinkPlayer(hello.bot_name, ConnectionTransport(connection, loop))
            if known is not None:
                # Another build (other GetInfo) is checked again and becomes a new version.
                info = await loop.run_in_executor(self.info_executor, read_info, player)
                if not same_info(info, known):
                    await self._check(connection, player, hello.bot_name, info)

                    def record(session: Session) -> KnownBot:
                        owner = connected_owner(session, connection.owner_id)
                        return record_connected_version(session, owner, hello.bot_name, info)

                    known = await self.store(record)
                    changed = True
            if known is None:
                info = await self._check(connection, player, hello.bot_name, None)

                def register(session: Session) -> KnownBot:
                    owner = connected_owner(session, connection.owner_id)
                    return register_connected_bot(session, owner, hello.bot_name, info)

                known = await self.store(register)
                registered = True
            connection.bot_id = known.bot_id
            version = known.version
            await self.store(
                lambda s: directory.add_connection(
                    s,
                    connection.id,
                    self.gateway_id,
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
                self.holdings.release(connection)
        if connection.closed:
            await self.store(lambda s: directory.remove_connection(s, connection.id))
            return
        self.holdings.hold(connection, version)
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
            await self.supersede(connection.bot_id, version)
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
        loop = asyncio.get_running_loop()
        holder = new_holder()

        def take(session: Session) -> int:
            try:
                return take_slot(session, connection.owner_id, holder, self.settings.check_slots)
            except TooManyChecksError as exc:
                raise LinkRefusedError("RESOURCE_EXHAUSTED", str(exc)) from None
            except IntegrityError:
                raise LinkRefusedError("RESOURCE_EXHAUSTED", str(collided())) from None

        slot = await self.store(take)

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
                await self.store(functools.partial(_give_back, slot, holder))
            except Exception:
                log.warning("gateway: could not give back check slot %d; it lapses on its own", slot)

    async def supersede(self, bot_id: int, latest: int) -> None:
        """Take the bot's connections of a version before ``latest`` out of play: no new
        seats go to them, the directory stops counting them, and each ends once idle."""
        for connection in self.holdings.held(bot_id):
            version = self.holdings.version(connection)
            if version is None or version >= latest:
                continue
            message = (
                f"bot {connection.bot_name!r} is now version {latest} (a connection with other GetInfo "
                f"passed the admission check); this connection played version {version} and is closed "
                "once its matches end: run only the new build"
            )
            self.holdings.drain(connection, message)
            log.info("gateway: %s (%s) superseded by version %d", connection.bot_name, connection.id, latest)
            await self.store(functools.partial(_remove_connection, connection.id))
            if connection.sessions <= 0:
                connection.close((grpc.StatusCode.FAILED_PRECONDITION, message))

    async def _forget(self, connection: Connection) -> None:
        self.holdings.forget(connection)
        if connection.bot_id:
            try:
                await self.store(lambda s: directory.remove_connection(s, connection.id))
            except Exception:
                log.warning("gateway: could not remove connection %s from the store", connection.id)


def _give_back(slot: int, holder: str, session: Session) -> None:
    give_back(session, slot, holder)


def _remove_connection(connection_id: str, session: Session) -> None:
    directory.remove_connection(session, connection_id)

"""The gateway's relay port: ``GatewayRelayService``, match workers' calls to the bots this
gateway holds (the workers' side: arena/link/relay_client.py; the gateway's other port:
arena/link/link_service.py).

The port is for workers only: every call carries the gateway's secret (``SECRET_HEADER``).
A call names its bot and its seat (the session): the seat's first call pins it to the bot's
least loaded connection here and the rest follow it (arena/link/holdings.py); the match's
last call unpins it. The gateway times the bot itself, from sending the call on the bot's
stream to its reply, and answers with that time (``bot_us``), which is what the bot is
charged. An error about the bot (not connected here, its connection gone) is marked so
(``BOT_ERROR_HEADER``, or ``bot_error`` on the stream); any other is about the gateway.

``RelayStream`` carries many calls on one stream, with no RPC and no task per call (the
gateway's CPU per decision is what limits throughput through it); ``Relay`` carries one call
an RPC.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Callable

import grpc

from arena.link.connection import ConnectionClosedError
from arena.link.holdings import Holdings
from arena.link.player import BOT_ERROR_HEADER, RELAY_MARGIN_S, SECRET_HEADER
from sdk.protocol import link_pb2 as lpb


class RelayService:
    """``GatewayRelayService`` for one gateway: relays to the connections in ``holdings``,
    for callers that know ``secret``."""

    def __init__(self, holdings: Holdings, secret: str):
        self.holdings = holdings
        self.secret = secret

    def _secret_ok(self, context: grpc.aio.ServicerContext) -> bool:
        given = ""
        for key, value in context.invocation_metadata() or ():
            if key == SECRET_HEADER and isinstance(value, str):
                given = value
        return hmac.compare_digest(given.encode(), self.secret.encode())

    async def relay(self, request: lpb.RelayRequest, context: grpc.aio.ServicerContext) -> lpb.RelayResponse:
        if not self._secret_ok(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "wrong or missing gateway secret")
        connection, why, about_bot = self.holdings.route(request.bot_id, request.session)
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
                self.holdings.unpin(request.session)
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
        connection, why, about_bot = self.holdings.route(request.bot_id, session)
        if connection is None:
            finish(lpb.RelayStreamResponse(id=call_id, code=unavailable, message=why, bot_error=about_bot))
            return
        timeout_s = (request.timeout_ms or 60_000) / 1000
        started = time.perf_counter_ns()
        try:
            future = connection.send(request.call, timeout_s)
        except ConnectionClosedError as exc:
            if last:
                self.holdings.unpin(session)
            finish(lpb.RelayStreamResponse(id=call_id, code=unavailable, message=str(exc), bot_error=True))
            return

        def done(future: asyncio.Future[bytes]) -> None:
            if last:
                self.holdings.unpin(session)
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

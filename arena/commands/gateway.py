"""``tonk gateway``: run a gateway on its own (deployments; ``tonk dashboard`` and ``tonk
demo`` run one in-process). Settings from the environment (docs/configuration.md)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from arena.config import Settings, load_settings

if TYPE_CHECKING:  # the gateway (grpc.aio) is imported when run, not for `tonk --help`
    from arena.link.gateway import Gateway, GatewayThread


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "gateway",
        help="hold connected bots' links and relay match workers' calls to them",
        description="Run a gateway: bots started with `tonk serve --connect` connect to it, and match "
        "workers on any machine reach them through it (docs/protocol.md, docs/scale-out.md).",
    )
    parser.add_argument("--host", default=None, help="address for bots (default TONK_GATEWAY_HOST)")
    parser.add_argument("--port", type=int, default=None, help="port for bots (default TONK_GATEWAY_PORT)")
    parser.add_argument(
        "--relay-port", type=int, default=None, help="port for workers (TONK_GATEWAY_RELAY_PORT)"
    )
    parser.set_defaults(func=run_gateway)


def make_gateway(settings: Settings, *, port: int | None = None) -> Gateway:
    """A gateway configured from ``settings`` (``port`` overrides the bots' port)."""
    from arena.link.gateway import Gateway

    return Gateway(
        settings,
        host=settings.gateway_host,
        port=settings.gateway_port if port is None else port,
        relay_host=settings.gateway_relay_host,
        relay_port=settings.gateway_relay_port,
        advertise=settings.gateway_advertise,
        secret=settings.gateway_secret,
        max_connections_per_owner=settings.link_max_connections,
    )


def start_in_process(settings: Settings) -> GatewayThread | None:
    """The in-process gateway of ``tonk dashboard`` / ``tonk demo`` (None with port 0)."""
    from arena.link.gateway import GatewayThread

    if settings.gateway_port == 0:
        return None
    running = GatewayThread(make_gateway(settings))
    try:
        running.start()
    except BaseException:  # it could not listen: end its loop's thread rather than leave it
        running.stop()
        raise
    return running


def run_gateway(args: argparse.Namespace) -> int:
    settings = load_settings()
    overrides: dict[str, Any] = {}
    if args.host is not None:
        overrides["gateway_host"] = args.host
    if args.relay_port is not None:
        overrides["gateway_relay_port"] = args.relay_port
    if overrides:
        import dataclasses

        settings = dataclasses.replace(settings, **overrides)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    gateway = make_gateway(settings, port=args.port)
    try:
        asyncio.run(_serve(gateway))
    except OSError as exc:
        print(f"tonk gateway: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


async def _serve(gateway: Gateway) -> None:
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    await gateway.start()
    print(
        f"gateway {gateway.id}: bots connect to {gateway.host}:{gateway.port}; "
        f"workers relay via {gateway.advertise}",
        flush=True,
    )
    await stopped.wait()
    await gateway.stop()

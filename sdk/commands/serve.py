"""``tonk serve BOT``: serve a bot (``MODULE:CLASS`` or a house bot name) over gRPC until
interrupted. The arena, ``tonk play HOST:PORT`` and ``tonk check HOST:PORT`` can then call it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sdk.players import PlayerSpecError, load_bot_class
from sdk.server import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_WORKERS, DEFAULT_PORT, serve


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve a bot over gRPC (MODULE:CLASS or a house bot name)",
        description="Serve a bot as a tonk.v1.BotService gRPC server, with health checks and "
        "reflection, until Ctrl-C or SIGTERM.",
    )
    parser.add_argument("bot", metavar="BOT", help="MODULE:CLASS of a sdk.Bot subclass, or a house bot name")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 to accept other machines)",
    )
    parser.add_argument("--max-workers", type=int, default=DEFAULT_MAX_WORKERS, help="concurrent calls")
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_S,
        help="seconds after which a match that never ended is forgotten",
    )
    parser.add_argument(
        "--claim",
        default=None,
        metavar="CODE",
        help="the arena's claim code for this bot's address, returned in GetInfo to prove you run "
        "it (default: $TONK_CLAIM; `tonk submit` prints the code)",
    )
    parser.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    try:
        bot = load_bot_class(args.bot)
    except PlayerSpecError as exc:
        print(f"tonk serve: {exc}", file=sys.stderr)
        return 2
    try:
        serve(
            bot,
            port=args.port,
            host=args.host,
            max_workers=args.max_workers,
            idle_timeout_s=args.idle_timeout,
            claim=args.claim,
        )
    except OSError as exc:
        print(f"tonk serve: {exc}", file=sys.stderr)
        return 1
    return 0

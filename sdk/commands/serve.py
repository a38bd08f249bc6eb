"""``tonk serve BOT``: serve a bot (``MODULE:CLASS`` or a house bot name) over gRPC until
interrupted. The arena, ``tonk play HOST:PORT`` and ``tonk check HOST:PORT`` can then call it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sdk.players import PlayerSpecError, load_bot_class
from sdk.server import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_WORKERS, DEFAULT_PORT, MAX_DECLARED_MATCHES, serve


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
        "--max-matches",
        type=_capacity,
        default=None,
        metavar="N",
        help="matches the bot plays at once at most, declared to the arena in GetInfo "
        "(default: the class's max_concurrent_matches; 0 leaves it to the arena)",
    )
    parser.set_defaults(func=run_serve)


def _capacity(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_DECLARED_MATCHES:
        raise argparse.ArgumentTypeError(f"--max-matches is 0 to {MAX_DECLARED_MATCHES}, got {text!r}")
    return value


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
            max_matches=args.max_matches,
        )
    except OSError as exc:
        print(f"tonk serve: {exc}", file=sys.stderr)
        return 1
    return 0

"""``tonk serve BOT``: serve a bot (``MODULE:CLASS`` or a house bot name) over gRPC until
interrupted. The arena, ``tonk play HOST:PORT`` and ``tonk check HOST:PORT`` can then call it.

``tonk serve BOT --connect [--arena URL] [--token TOKEN] [--name NAME]`` listens on nothing:
the bot connects out to the arena's gateway (sdk/link.py) and plays from there; ``TONK_ARENA``
and ``TONK_TOKEN`` (or what ``tonk login`` remembered) are read as by ``tonk submit``."""

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
        "--capacity",
        type=_capacity,
        default=None,
        metavar="N",
        help="matches the bot plays at once at most, declared to the arena in GetInfo, or with "
        "--connect the capacity of this connection (default: the class's max_concurrent_matches; "
        "0 leaves it to the arena, 4 with --connect)",
    )
    parser.add_argument(
        "--claim",
        default=None,
        metavar="CODE",
        help="the arena's claim code for this bot's address, returned in GetInfo to prove you run "
        "it (default: $TONK_CLAIM; `tonk submit` prints the code)",
    )
    link = parser.add_argument_group("connecting out (no listening port)")
    link.add_argument("--connect", action="store_true", help="connect to the arena instead of serving")
    link.add_argument("--arena", default=None,
                      help="the arena's URL (default: TONK_ARENA, else tonk login's)")
    link.add_argument("--token", default=None,
                      help="your owner token (default: TONK_TOKEN, else tonk login's)")
    link.add_argument("--name", default=None, help="the bot's name in the arena (default: its own)")
    link.add_argument("--link", default=None, help="the gateway's HOST:PORT (default: asked of the arena)")
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
    if args.connect:
        return _run_connect(args, bot)
    try:
        serve(
            bot,
            port=args.port,
            host=args.host,
            max_workers=args.max_workers,
            idle_timeout_s=args.idle_timeout,
            claim=args.claim,
            max_matches=args.max_matches,
        )
    except OSError as exc:
        print(f"tonk serve: {exc}", file=sys.stderr)
        return 1
    return 0


def _run_connect(args: argparse.Namespace, bot: Any) -> int:
    from sdk.link import ArenaDiscoveryError, LinkRefusedError, connect
    from sdk.login import LoginFileError, resolve

    try:  # as tonk submit's: flag, environment, then what tonk login remembered
        found = resolve(args.arena, args.token)
    except LoginFileError as exc:
        print(f"tonk serve --connect: {exc}", file=sys.stderr)
        return 2
    arena, token = found.arena, found.token
    if not token:
        print("tonk serve --connect: give --token, set TONK_TOKEN or remember it with tonk login "
              "(your owner token)", file=sys.stderr)  # fmt: skip
        return 2
    if not arena and not args.link:
        print("tonk serve --connect: give --arena URL, set TONK_ARENA or remember it with tonk login",
              file=sys.stderr)  # fmt: skip
        return 2
    # A connection's capacity is what the bot declares, as for a served bot; 4 when it says nothing.
    capacity = args.max_matches or int(getattr(bot, "max_concurrent_matches", 0) or 0) or 4
    name = args.name or str(bot.name)
    try:
        connect(bot, token=token, name=name, arena=arena, address=args.link or "", capacity=capacity)
    except (ArenaDiscoveryError, LinkRefusedError) as exc:
        print(f"tonk serve --connect: {exc}", file=sys.stderr)
        return 1
    return 0

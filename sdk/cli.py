"""The ``tonk`` command. Each subcommand lives in its own module under ``sdk.commands``;
server-side packages add theirs through the ``tonk.commands`` entry-point group, so the SDK
never imports them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from importlib.metadata import entry_points

# Modules that define ``register(subparsers)``; each adds its commands.
COMMAND_MODULES = (
    "sdk.commands.record",
    "sdk.commands.play",
    "sdk.commands.submit",
    "sdk.commands.new",
    "sdk.commands.serve",
    "sdk.commands.check",
    "sdk.commands.replay_decision",
    "sdk.commands.owner",
    "sdk.commands.sprt",
)
#: Commands the SDK shares with plug-ins, and the actions of each that are the SDK's own
#: (sdk.commands.owner.ACTIONS: not imported, the command modules are this one's neighbours).
SHARED = {"owner": ("join", "rotate-token")}
#: Commands the SDK runs over an arena's API when one is named (``--arena`` or ``TONK_ARENA``),
#: and a plug-in runs on the arena's store otherwise (the operator's form: sdk.commands.sprt).
REMOTE = ("sprt",)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. Plug-in commands (which import the database and web stacks, over a second
    of start-up) are loaded only when ``argv`` does not name an SDK command."""
    parser = argparse.ArgumentParser(prog="tonk", description="Tonk Arena: the engine, bots and arena.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        import_module(name).register(subparsers)
    words = [a for a in argv or () if not a.startswith("-")]
    command = words[0] if words else None
    if command in REMOTE:
        named = any(a == "--arena" or a.startswith("--arena=") for a in argv or ())
        sdk_only = named or bool(os.environ.get("TONK_ARENA", "").strip())
    else:
        sdk_only = command not in SHARED or (len(words) > 1 and words[1] in SHARED[command])
    if command is not None and command in subparsers.choices and sdk_only:
        return parser
    for entry in entry_points(group="tonk.commands"):
        try:
            register = entry.load()
        except ImportError:
            continue  # the server extras are not installed: their commands are simply absent
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments)
    args = parser.parse_args(arguments)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""The ``tonk`` command. Each subcommand lives in its own module under ``sdk.commands``;
server-side packages add theirs through the ``tonk.commands`` entry-point group, so the SDK
never imports them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module

#: Each SDK command and the module that defines ``register(subparsers)`` for it. A command
#: named on the command line imports its own module only: `tonk record` must not pay for gRPC,
#: the bot server or asyncio, which other commands import.
COMMANDS = {
    "record": "sdk.commands.record",
    "play": "sdk.commands.play",
    "submit": "sdk.commands.submit",
    "retire": "sdk.commands.submit",
    "logs": "sdk.commands.submit",
    "restore": "sdk.commands.submit",
    "new": "sdk.commands.new",
    "serve": "sdk.commands.serve",
    "check": "sdk.commands.check",
    "replay-decision": "sdk.commands.replay_decision",
    "owner": "sdk.commands.owner",
    "sprt": "sdk.commands.sprt",
    "challenge": "sdk.commands.challenge",
    "login": "sdk.commands.login",
    "logout": "sdk.commands.login",
}
#: The modules, in the order ``tonk --help`` lists their commands.
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
#: Commands the SDK shares with plug-ins, and the actions of each that are the SDK's own
#: (sdk.commands.owner.ACTIONS: not imported, the command modules are this one's neighbours).
SHARED = {"owner": ("join", "rotate-token")}
#: Commands the SDK runs over an arena's API when one is named (``--arena``, ``TONK_ARENA`` or
#: the arena ``tonk login`` remembered),
#: and a plug-in runs on the arena's store otherwise (the operator's form: sdk.commands.sprt).
REMOTE = ("sprt",)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. When ``argv`` starts with an SDK command, only that command's module is
    loaded; when it names one after an option (``tonk -h record``), every SDK command;
    otherwise every SDK command, then the plug-in commands (which import the database and web
    stacks, over a second of start-up)."""
    parser = argparse.ArgumentParser(prog="tonk", description="Tonk Arena: the engine, bots and arena.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    words = [a for a in argv or () if not a.startswith("-")]
    command = words[0] if words else None
    if command in REMOTE:
        named = any(a == "--arena" or a.startswith("--arena=") for a in argv or ())
        sdk_only = named or bool(os.environ.get("TONK_ARENA", "").strip()) or _remembered()
    else:
        sdk_only = command not in SHARED or (len(words) > 1 and words[1] in SHARED[command])
    own = command in COMMANDS and sdk_only
    if own and argv and argv[0] == command:
        import_module(COMMANDS[command]).register(subparsers)
        return parser
    for name in COMMAND_MODULES:
        import_module(name).register(subparsers)
    if own:
        return parser
    from importlib.metadata import entry_points  # tens of milliseconds: only for the plug-ins

    for entry in entry_points(group="tonk.commands"):
        try:
            register = entry.load()
        except ImportError:
            continue  # the server extras are not installed: their commands are simply absent
        register(subparsers)
    return parser


def _remembered() -> bool:
    from sdk.login import remembered_arena

    return bool(remembered_arena())


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

"""``tonk export``: every hand of a tournament or of one bot as ``tonk-hand/1`` JSON lines
(arena/queries/export.py), from the store at ``TONK_DATABASE_URL`` (or ``--database-url``)::

    tonk export --tournament 3 > spring.jsonl
    tonk export --bot greedy --output greedy.jsonl
    tonk record verify greedy.jsonl

Only hands of finished deals are written (see arena/queries/export.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from arena.config import load_settings

# The store (SQLAlchemy) is imported when the command runs: `tonk` imports this module only to
# list its commands, and `tonk --help` must not pay for the database stack.


def register(subparsers: Any) -> None:
    export = subparsers.add_parser(
        "export", help="write every hand of a tournament or a bot as tonk-hand/1 JSON lines"
    )
    which = export.add_mutually_exclusive_group(required=True)
    which.add_argument("--tournament", type=int, metavar="ID", help="every hand of this tournament")
    which.add_argument("--bot", metavar="NAME", help="every hand this bot played")
    export.add_argument("--output", "-o", metavar="FILE",
                        help="write here (a .jsonl file) instead of standard output")
    export.add_argument("--database-url", metavar="URL",
                        help="the arena's store (default: TONK_DATABASE_URL, as every arena command)")
    export.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from arena.errors import ArenaError
    from arena.queries.export import hand_lines, resolve
    from arena.store.db import session_scope

    url = args.database_url or load_settings().database_url
    try:
        with session_scope(url) as session:
            bot_id = resolve(session, tournament_id=args.tournament, bot_name=args.bot)
            if args.output:
                with open(args.output, "w", encoding="utf-8") as out:
                    count = _write(out, hand_lines(session, tournament_id=args.tournament, bot_id=bot_id))
            else:
                count = _write(sys.stdout, hand_lines(session, tournament_id=args.tournament, bot_id=bot_id))
    except ArenaError as exc:
        print(f"tonk export: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"tonk export: cannot write {args.output!r}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"tonk export: {count} hands (finished deals only)", file=sys.stderr)
    return 0


def _write(out: TextIO, lines: Any) -> int:
    count = 0
    for line in lines:
        out.write(line)
        count += 1
    out.flush()
    return count

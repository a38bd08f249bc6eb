"""``tonk bot NAME``: one bot as its page shows it, in the terminal: rating and rank (its
current version's), playing record, charged faults and (apart) slow notices, rating history,
head to head, and its versions, each with its own rating and record.

Like ``tonk leaderboard`` it reads the store (``TONK_DATABASE_URL``) directly.
Exit status: 0 shown; 1 no such bot; 2 a malformed name.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Final

from arena.config import load_settings
from arena.errors import ArenaError

#: Rows of the history and of the head-to-head table shown (the page and --json have all).
ROWS_SHOWN: Final = 8


def register(subparsers: Any) -> None:
    bot = subparsers.add_parser("bot", help="one bot: rating, record, faults, history, head to head")
    bot.add_argument("name", help="the bot's name (tonk leaderboard lists them)")
    bot.add_argument("--json", action="store_true", help="print what GET /api/v1/bots/NAME gives")
    bot.set_defaults(func=cmd_bot)


def cmd_bot(args: argparse.Namespace) -> int:
    from arena.queries.bots import bot_detail
    from arena.store.db import session_scope

    settings = load_settings()
    try:
        with session_scope(settings.database_url) as session:
            bot = bot_detail(session, settings.database_url, args.name)
    except ArenaError as exc:
        print(f"tonk bot: {exc}", file=sys.stderr)
        return 2 if exc.status == 400 else 1
    if args.json:
        print(json.dumps(bot, indent=1))
        return 0
    for line in describe(bot):
        print(line)
    print(f"page: {page_url('bots/' + bot['name'])}")
    return 0


def describe(bot: dict[str, Any]) -> list[str]:
    """The lines of ``tonk bot`` for a bot as arena.queries.bots.bot_detail gives it."""
    from arena.ratings.terms import legend

    rating, record = bot["rating"], bot["record"]
    current = bot.get("current_version")
    lines = [f"{bot['name']} ({bot['plays']}), owner {bot['owner']}, {bot['status']}"]
    if rating is None and current is not None and current["new"] and len(bot["versions"]) > 1:
        lines.append(f"rating: none yet: v{current['number']} is new (each version is rated apart)")
    elif rating is None:
        lines.append("rating: none yet (no finished match)")
    else:
        mark = f" (provisional: {rating['why_provisional']})" if rating["provisional"] else ""
        of = f" (v{current['number']})" if current is not None else ""
        lines.append(f"rating: rank {bot['rank']}, Elo {rating['text']}{mark}{of}")
    if record["matches"]:
        lines.append(
            f"record: {record['matches']} matches, {record['hands']} hands, won {_pct(record['win_rate'])}"
            f" of hands, {record['chips']:+d} chips ({record['chips_per_100']:+.1f} per 100 hands)"
        )
        mean, slowest = record["latency_ms_mean"], record["latency_ms_max"]
        lines.append(f"decision time: mean {mean} ms, slowest {slowest} ms")
    faults, notices = bot["faults"], bot["notices"]
    kinds = ", ".join(f"{kind} x {n}" for kind, n in faults["by_kind"].items())
    lines.append(f"faults (charged): {faults['total']}" + (f" ({kinds})" if kinds else ""))
    if notices["total"]:
        lines.append(f"slow lifecycle notices (not charged; a busy host can cause them): {notices['total']}")
    if bot["history"]:
        lines.append("rating after each tournament:")
        for h in bot["history"][-ROWS_SHOWN:]:
            mark = "?" if h["provisional"] else ""
            name = h["tournament"]["name"][:24]
            version = "" if h.get("version") is None else f"  v{h['version']}"
            lines.append(f"  {name:<24} {h['text'] + mark:<22} {h['matches']:>5} matches{version}")
    if bot["head_to_head"]:
        head = f"  {'head to head':<22} {'matches':>7} {'ahead':>6} {'tied':>5} {'behind':>6} {'chips':>7}"
        lines.append(head)
        for h in bot["head_to_head"][:ROWS_SHOWN]:
            lines.append(
                f"  {h['opponent'][:22]:<22} {h['matches']:>7} {h['wins']:>6} {h['draws']:>5} "
                f"{h['losses']:>6} {h['chip_difference']:>+7d}"
            )
    if bot["versions"]:
        latest = bot["versions"][0]
        info = latest["info"]
        said = f"{info.get('name', '')} {info.get('version', '')}".strip() or "no GetInfo"
        lines.append(f"version {latest['number']} of {len(bot['versions'])}: {said}")
        lines.append("versions, each rated apart (newest first):")
        lines.append(f"  {'':<4} {'Elo [95% interval]':<22} {'matches':>7} {'per 100':>8}  reported as")
        for v in bot["versions"][:ROWS_SHOWN]:
            lines.append("  " + version_line(v))
    if rating is not None:
        lines += legend()
    return lines


def version_line(version: dict[str, Any]) -> str:
    """One version's row of ``tonk bot``: its own rating, record, and what it reported."""
    rated, rec = version.get("rating"), version["record"]
    text = "new" if rated is None and not rec["matches"] else "unrated" if rated is None else rated["text"]
    mark = "?" if rated is not None and rated["provisional"] else ""
    per_100 = "-" if rec["chips_per_100"] is None else f"{rec['chips_per_100']:+.1f}"
    info = version["info"]
    said = f"{info.get('name', '')} {info.get('version', '')}".strip() or "-"
    current = " (current)" if version.get("current") else ""
    number = f"v{version['number']}"
    return f"{number:<4} {text + mark:<22} {rec['matches']:>7} {per_100:>8}  {said}{current}"


def page_url(path: str) -> str:
    """A dashboard page: its address under TONK_ARENA (the arena's URL) when set, else under
    the arena ``tonk login`` remembered; else its path, as this process cannot know where the
    dashboard of its store is served."""
    from sdk.login import remembered_arena

    base = (os.environ.get("TONK_ARENA", "").strip() or remembered_arena()).rstrip("/")
    return f"{base}/{path}" if base else f"the dashboard's /{path} (tonk login --arena URL gives its address)"


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"

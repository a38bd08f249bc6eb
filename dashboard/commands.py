"""``tonk demo`` (the main job behind ``make demo``) and ``tonk dashboard``.

The demo hosts the house bots as local gRPC servers, registers them, runs a seeded
round-robin among them on the configured backend (the embedded pool unless
``TONK_REDIS_URL`` is set), prints the leaderboard and serves the dashboard until Ctrl-C.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from typing import Any

from arena.config import Settings, load_settings


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo", help="host the house bots, run a round-robin among them, then serve the dashboard"
    )
    demo.add_argument("--tables", default="2,3", help="table sizes, comma separated (default 2,3)")
    demo.add_argument("--deals", type=int, default=2, help="deals per table, each played in duplicate")
    demo.add_argument("--hands", type=int, default=20, help="hands per match")
    demo.add_argument("--seed", type=int, default=None, help="tournament seed (default: random)")
    demo.add_argument("--bots", default="", help="house bots to enter, comma separated (default: all)")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8000)
    demo.add_argument("--no-serve", action="store_true", help="exit after printing the leaderboard")
    demo.set_defaults(func=run_demo)

    board = subparsers.add_parser("dashboard", help="serve the dashboard")
    board.add_argument("--host", default="127.0.0.1")
    board.add_argument("--port", type=int, default=8000)
    board.add_argument("--production", action="store_true", help="gunicorn with several workers")
    board.add_argument("--workers", type=int, default=2)
    board.set_defaults(func=run_dashboard)


def _sizes(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(f"tonk demo: --tables takes sizes like 2,3; got {text!r}") from None


def run_demo(args: argparse.Namespace) -> int:
    from arena.db import session_scope
    from arena.execution import make_backend, run_tournament
    from arena.hosting import HostedBots, ensure_house_bots, house_bots
    from arena.leaderboard import current_leaderboard, write_snapshot
    from arena.migrate import migrate
    from arena.store import tournament_progress
    from arena.tournaments import create_tournament, resolve_bots
    from sdk.progress import ProgressBar

    settings = load_settings()
    # The search bot thinks for 200 ms a decision by default; a demo should finish in a minute.
    os.environ.setdefault("TONK_SEARCH_BUDGET_MS", "20")
    available = house_bots()
    wanted = [b.strip() for b in args.bots.split(",") if b.strip()] or sorted(available)
    unknown = [b for b in wanted if b not in available]
    if unknown:
        print(
            f"tonk demo: unknown house bot {unknown[0]!r}; known: {', '.join(sorted(available))}",
            file=sys.stderr,
        )
        return 2
    sizes = [n for n in _sizes(args.tables) if n <= len(wanted)]
    if not sizes:
        print(f"tonk demo: no table size fits {len(wanted)} bots", file=sys.stderr)
        return 2
    print(f"store: {settings.database_url}")
    # The demo's store is usually the one an earlier demo left in var/: bring it up to date
    # (an operator's store is upgraded by `tonk db upgrade`, on purpose).
    migrate(settings.database_url)
    print(f"queue: {'RQ at ' + settings.redis_url if settings.redis_url else 'embedded process pool'}")
    bots = {name: available[name] for name in wanted}
    with HostedBots(bots) as addresses:
        for name, address in sorted(addresses.items()):
            # Say how long the search bot thinks here, or its rank would read as its strength.
            budget = os.environ["TONK_SEARCH_BUDGET_MS"]
            note = f" (searching {budget} ms a decision)" if name == "search" else ""
            print(f"bot {name:<10} serving gRPC at {address}{note}")
        with session_scope(settings.database_url) as session:
            ensure_house_bots(session, settings, bots=bots)
            stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
            tournament = create_tournament(
                session,
                name=f"demo round-robin {stamp}",
                bot_ids=resolve_bots(session, wanted),
                table_sizes=sizes,
                matches_per_table=args.deals,
                hands_per_match=args.hands,
                seed=args.seed,
                settings=settings,
            )
            tournament_id = tournament.id
        backend = make_backend(settings, hosted_addresses=addresses)
        with session_scope(settings.database_url) as session:
            total = tournament_progress(session, tournament_id).total
        print(
            f"tournament {tournament_id}: {len(wanted)} bots, tables of {sizes}, {total} matches "
            f"of {args.hands} hands"
        )
        bar = ProgressBar(total, "matches ")
        try:
            progress = run_tournament(
                settings.database_url,
                tournament_id,
                backend,
                on_progress=lambda p: bar.update(p.done, f"failed {p.failed}"),
            )
        finally:
            backend.close()
            bar.close()
    with session_scope(settings.database_url) as session:
        write_snapshot(session, tournament_id)
        board = current_leaderboard(session)
    print(f"{progress.done} matches played, {progress.failed} failed\n")
    print_leaderboard(board)
    if args.no_serve:
        return 0
    return _serve(args.host, args.port, settings)


def print_leaderboard(board: Any) -> None:
    from arena.cli import print_ratings  # the same table and words as `tonk leaderboard`

    print_ratings(board.rows)


def _serve(host: str, port: int, settings: Settings) -> int:
    from dashboard.server import serve

    serve(host, port, settings, ready=lambda url: print(f"\ndashboard at {url} (Ctrl-C to stop)", flush=True))
    return 0


def run_dashboard(args: argparse.Namespace) -> int:
    from dashboard.server import serve

    serve(
        args.host,
        args.port,
        load_settings(),
        production=args.production,
        workers=args.workers,
        ready=lambda url: print(f"dashboard at {url}", flush=True),
    )
    return 0

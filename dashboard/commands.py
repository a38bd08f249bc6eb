"""``tonk demo`` (the main job behind ``make demo``) and ``tonk dashboard``.

The demo hosts the house bots as local gRPC servers, registers them, runs a seeded
round-robin among them on the configured backend (the embedded pool unless
``TONK_REDIS_URL`` is set), prints the leaderboard and serves the dashboard until Ctrl-C.
Run again on the same store, it serves what the last run played (``--fresh``: a new
round-robin). Its dashboard accepts bots served on this machine's loopback addresses, and it
prints an operator token and the ``tonk submit`` line that enters such a bot.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import secrets
import sys
from collections.abc import Mapping
from typing import Any

from arena.config import Settings, load_settings
from arena.store.statuses import TournamentStatus


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo", help="host the house bots, run a round-robin among them, then serve the dashboard"
    )
    demo.add_argument("--tables", default="2,3", help="table sizes, comma separated (default 2,3)")
    demo.add_argument("--deals", type=int, default=2, help="deals per table, each played in duplicate")
    demo.add_argument("--hands", type=int, default=20, help="hands per match")
    demo.add_argument("--seed", type=int, default=None, help="tournament seed (default: random)")
    demo.add_argument("--bots", default="", help="house bots to enter, comma separated (default: all)")
    demo.add_argument("--host", default="127.0.0.1", help="address the dashboard listens on")
    demo.add_argument("--port", type=_demo_port, default=8000,
                      help="port the dashboard listens on (default 8000); its gateway takes the next two "
                      "(8001, 8002), unless TONK_GATEWAY_PORT and TONK_GATEWAY_RELAY_PORT name others")
    demo.add_argument("--no-serve", action="store_true", help="exit after printing the leaderboard")
    demo.add_argument("--access-log", action="store_true", help="log every HTTP request (default: 5xx only)")
    demo.add_argument("--fresh", action="store_true",
                      help="play a new round-robin even if the store holds one from an earlier demo")
    demo.set_defaults(func=run_demo)

    board = subparsers.add_parser("dashboard", help="serve the dashboard")
    board.add_argument("--host", default="127.0.0.1", help="address to listen on")
    board.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    board.add_argument("--production", action="store_true", help="gunicorn with several workers")
    board.add_argument("--workers", type=int, default=2, help="gunicorn worker processes, with --production")
    board.add_argument("--access-log", action="store_true", help="log every HTTP request (default: 5xx only)")
    board.set_defaults(func=run_dashboard)


def _sizes(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(f"tonk demo: --tables takes sizes like 2,3; got {text!r}") from None


#: Loopback networks the demo accepts bots on: IP literals only, so the worker of any other
#: process (``tonk tournament run``) dials them without its own allowance (arena/bots/addresses.py).
DEMO_ALLOWED_HOSTS = ("127.0.0.0/8", "::1")
#: The name of every tournament the demo plays (a restart looks for one to reuse).
DEMO_TOURNAMENT_PREFIX = "demo round-robin"


def _demo_port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535 - 2:  # the gateway takes the next two
        raise argparse.ArgumentTypeError(f"{port}: the demo takes this port and the next two, so 1 to 65533")
    return port


def demo_ports(settings: Settings, port: int, environ: Mapping[str, str] | None = None) -> Settings:
    """The demo's gateway listens on the two ports after its dashboard's (for bots, then for
    workers), so that one option, ``--port`` (``make demo PORT=...``), moves all three and a
    second demo on the machine need not clash with the first; ``TONK_GATEWAY_PORT`` and
    ``TONK_GATEWAY_RELAY_PORT`` still name others (0: no gateway)."""
    env = os.environ if environ is None else environ
    bots = bool(env.get("TONK_GATEWAY_PORT", "").strip())
    workers = bool(env.get("TONK_GATEWAY_RELAY_PORT", "").strip())
    return dataclasses.replace(
        settings,
        gateway_port=settings.gateway_port if bots else port + 1,
        gateway_relay_port=settings.gateway_relay_port if workers else port + 2,
    )


def demo_settings(settings: Settings) -> Settings:
    """The demo is a single-machine arena: its dashboard accepts bots on loopback addresses
    (a deployed arena refuses them unless TONK_ALLOWED_BOT_HOSTS lists them), and it has an
    operator token (TONK_OPERATOR_TOKEN, else one made for this run)."""
    hosts = tuple(dict.fromkeys((*settings.allowed_bot_hosts, *DEMO_ALLOWED_HOSTS)))
    token = settings.operator_token or "tonk_demo_" + secrets.token_urlsafe(24)
    return dataclasses.replace(settings, allowed_bot_hosts=hosts, operator_token=token)


def run_demo(args: argparse.Namespace) -> int:
    from arena.bots.hosting import house_bots
    from arena.config import describe_store
    from arena.queries.leaderboard import board
    from arena.store.db import session_scope
    from arena.store.migrate import migrate
    from sdk.players import did_you_mean

    settings = demo_ports(demo_settings(load_settings()), args.port)
    # The search bot thinks for 200 ms a decision by default; a demo should finish in a minute.
    os.environ.setdefault("TONK_SEARCH_BUDGET_MS", "20")
    available = house_bots()
    wanted = [b.strip() for b in args.bots.split(",") if b.strip()] or sorted(available)
    unknown = [b for b in wanted if b not in available]
    if unknown:
        print(
            f"tonk demo: unknown house bot {unknown[0]!r}{did_you_mean(unknown[0], available)}; "
            f"known: {', '.join(sorted(available))}",
            file=sys.stderr,
        )
        return 2
    sizes = [n for n in _sizes(args.tables) if n <= len(wanted)]
    if not sizes:
        print(f"tonk demo: no table size fits {len(wanted)} bots", file=sys.stderr)
        return 2
    print(f"store: {describe_store(settings.database_url)}", flush=True)
    # The demo's store is usually the one an earlier demo left: bring it up to date
    # (an operator's store is upgraded by `tonk db upgrade`, on purpose).
    migrate(settings.database_url)
    gateway = None
    if not args.no_serve:
        # Connected bots (tonk serve --connect) join through the gateway. It binds before
        # anything else: the round-robin's own outgoing connections take ephemeral ports,
        # and could take its port first if it were opened after them.
        try:
            gateway = _gateway(settings)
        except OSError as exc:
            print(f"tonk demo: {exc}. Stop what holds that port, or set TONK_GATEWAY_PORT and "
                  "TONK_GATEWAY_RELAY_PORT to free ones (TONK_GATEWAY_PORT=0: no gateway, no "
                  "connected bots).", file=sys.stderr)  # fmt: skip
            return 1
    try:
        earlier = None if args.fresh else _earlier_demo(settings.database_url)
        if earlier is not None:
            print(f"reusing tournament {earlier[0]} ({earlier[1]!r}) of this store; "
                  "`tonk demo --fresh` plays a new round-robin", flush=True)  # fmt: skip
        else:
            _play_round_robin(args, settings, {name: available[name] for name in wanted}, sizes)
        with session_scope(settings.database_url) as session:
            ratings = board(session, settings.database_url)
        print_leaderboard(ratings)
        if args.no_serve:
            return 0
        return _serve(args.host, args.port, settings, demo=True, connect=gateway is not None,
                      access_log=args.access_log, sit_against=_sit_against(wanted))  # fmt: skip
    finally:
        if gateway is not None:
            gateway.stop()


def _earlier_demo(url: str) -> tuple[int, str] | None:
    """(id, name) of the newest finished demo tournament in the store, if any."""
    from sqlalchemy import select

    from arena.store.db import session_scope
    from arena.store.models import Tournament

    with session_scope(url) as session:
        row = session.execute(
            select(Tournament.id, Tournament.name)
            .where(
                Tournament.name.startswith(DEMO_TOURNAMENT_PREFIX),
                Tournament.status == TournamentStatus.FINISHED,
            )
            .order_by(Tournament.id.desc())
            .limit(1)
        ).first()
    return None if row is None else (int(row[0]), str(row[1]))


def _play_round_robin(args: argparse.Namespace, settings: Settings, bots: dict[str, str],
                      sizes: list[int]) -> None:  # fmt: skip
    from arena.bots.hosting import HostedBots, ensure_house_bots
    from arena.queries.tournaments import tournament_progress
    from arena.ratings.leaderboard import write_snapshot
    from arena.runtime.backends import make_backend
    from arena.runtime.driver import run_tournament
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import create_tournament, resolve_bots
    from sdk.progress import ProgressBar

    print(f"queue: {'RQ at ' + settings.redis_url if settings.redis_url else 'embedded process pool'}")
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
                name=f"{DEMO_TOURNAMENT_PREFIX} {stamp}",
                bot_ids=resolve_bots(session, sorted(bots)),
                table_sizes=sizes,
                deals_per_table=args.deals,
                hands_per_match=args.hands,
                seed=args.seed,
                settings=settings,
            )
            tournament_id = tournament.id
        backend = make_backend(settings, hosted_addresses=addresses)
        with session_scope(settings.database_url) as session:
            total = tournament_progress(session, tournament_id).total
        print(
            f"tournament {tournament_id}: {len(bots)} bots, tables of {sizes}, {total} matches "
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
    print(f"{progress.done} matches played, {progress.failed} failed\n")


def _gateway(settings: Settings) -> Any:
    """The in-process gateway for connected bots (docs/protocol.md), or None (port 0);
    OSError when it cannot listen."""
    from arena.commands.gateway import start_in_process

    running = start_in_process(settings)
    if running is not None:
        gw = running.gateway
        print(f"gateway for connected bots at {gw.host}:{gw.port} (relay {gw.advertise})", flush=True)
    return running


def print_leaderboard(board: Any) -> None:
    from arena.commands.tournament import print_ratings  # the same table and words as `tonk leaderboard`

    print_ratings(board.rows)


#: The house bot the demo invites a visitor to play (issue #39), when it is entered.
DEMO_TABLE_BOT = "search"


def _sit_against(entered: list[str]) -> str | None:
    return DEMO_TABLE_BOT if DEMO_TABLE_BOT in entered else (entered[0] if entered else None)


def _visitor_invite(settings: Settings) -> str:
    """A fresh invite code for the demo's visitors (many uses, a week): joining from it signs
    a visitor in, so they can sit down at a table straight away."""
    from arena.bots.invites import create_invite
    from arena.bots.owners import operator_owner
    from arena.store.db import session_scope

    with session_scope(settings.database_url) as session:
        _, code = create_invite(session, operator_owner(session), uses=100, expires="7d",
                                note="tonk demo: visitors who sit down at a table")  # fmt: skip
    return code


def _serve(host: str, port: int, settings: Settings, *, demo: bool = False, connect: bool = False,
           access_log: bool = False, sit_against: str | None = None) -> int:  # fmt: skip
    from dashboard.server import serve

    def ready(url: str) -> None:
        print(f"\ndashboard at {url} (Ctrl-C to stop)")
        if demo:
            arena = url.rstrip("/")
            if sit_against is not None:
                # Join from the invite (a name is all it asks), then sit down on the bot's page.
                code = _visitor_invite(settings)
                print(f"play {sit_against} yourself: {arena}/join?code={code}&bot={sit_against}")
            print(f"operator token: {settings.operator_token}"
                  + ("" if os.environ.get("TONK_OPERATOR_TOKEN") else " (this run only; "
                     "TONK_OPERATOR_TOKEN sets a lasting one)"))  # fmt: skip
            print("bots on this machine (127.0.0.1) may join; serve yours, then enter it:")
            print("  tonk serve my_bot:MyBot --host 127.0.0.1 --port 50051 &")
            print(f"  tonk submit --name my-bot --address 127.0.0.1:50051 --arena {arena} "
                  f"--token {settings.operator_token}")  # fmt: skip
            print("  (or with your own owner's token: tonk owner create NAME, same store)")
            if connect:  # no listening port at all: the bot dials the demo's gateway
                print("or let it connect out, with no port of its own:")
                print(f"  tonk serve my_bot:MyBot --connect --name my-bot --arena {arena} "
                      f"--token {settings.operator_token}")  # fmt: skip
        sys.stdout.flush()

    serve(host, port, settings, ready=ready, access_log=access_log)
    return 0


def run_dashboard(args: argparse.Namespace) -> int:
    from arena.config import describe_store
    from dashboard.server import serve

    settings = load_settings()
    store = describe_store(settings.database_url)
    # gunicorn forks its workers: a gateway there runs on its own (`tonk gateway`).
    gateway = None
    if not args.production:
        try:
            gateway = _gateway(settings)
        except OSError as exc:  # the dashboard is still of use without connected bots
            print(f"no gateway for connected bots: {exc}", file=sys.stderr)
    try:
        serve(
            args.host,
            args.port,
            settings,
            production=args.production,
            workers=args.workers,
            ready=lambda url: print(f"dashboard at {url} (store: {store})", flush=True),
            access_log=args.access_log,
        )
    finally:
        if gateway is not None:
            gateway.stop()
    return 0

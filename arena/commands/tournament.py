"""The arena's ``tonk`` commands (the operator's tools; they talk to the store directly):

    tonk tournament create --name N --bots a,b,c --tables 2,3 --deals K --hands H [--seed S]
    tonk tournament create --name N --gauntlet BOT --vs a,b,c --tables 2,3 --deals K --hands H
    tonk sprt V2 V1 --elo0 0 --elo1 20 [--alpha 0.05 --beta 0.05] --hands H [--batch 8]
                                          # no --arena: on the store (sdk/commands/sprt.py: with one)
    tonk tournament list | status ID | run ID | pause ID | resume ID | extend ID --deals K
    tonk worker [--burst] [--fork]
    tonk leaderboard [--history]
    tonk bot NAME [--json]                # one bot (arena/commands/bot.py)

Settings come from the environment (arena/config.py): the store is ``TONK_DATABASE_URL``;
with ``TONK_REDIS_URL`` matches go to RQ workers (``tonk worker``), else they run in a local
process pool while ``run`` or ``resume`` is going. Ctrl-C during ``run`` leaves the
tournament resumable: RQ workers carry on, the local pool stops and the tournament pauses.

`tonk` imports this module to list its commands, so the database stack (SQLAlchemy, the
store, the pool) is imported by each command when it runs, not here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from arena.commands.bot import page_url
from arena.commands.bot import register as register_bot
from arena.config import Settings, describe_store, load_settings
from arena.errors import ArenaError
from arena.store.statuses import TournamentKind, TournamentStatus
from sdk.commands.sprt import sprt_parser
from sdk.progress import ProgressBar

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from arena.queries.stats import BotStats
    from arena.queries.tournaments import Progress
    from arena.ratings.leaderboard import LeaderboardRow
    from arena.store.models import Tournament


def register(subparsers: Any) -> None:
    tournament = subparsers.add_parser("tournament", help="create and run round-robin tournaments")
    sub = tournament.add_subparsers(dest="tournament_command", metavar="ACTION", required=True)

    create = sub.add_parser("create", help="create a round-robin in duplicate among registered bots")
    create.add_argument("--name", required=True, help="shown on the dashboard")
    create.add_argument("--bots", type=_names, help="bot names, comma separated (a round robin)")
    create.add_argument("--gauntlet", metavar="BOT", help="a gauntlet: every table holds BOT (with --vs)")
    create.add_argument("--vs", type=_names, help="the gauntlet's opponents, comma separated")
    create.add_argument("--tables", required=True, type=_ints, help="table sizes, e.g. 2,3")
    create.add_argument("--deals", required=True, type=int, help="deals per table (each played in duplicate)")
    create.add_argument("--hands", required=True, type=int, help="hands per match")
    create.add_argument("--seed", type=int, default=None, help="tournament seed (default: random, secret)")
    create.add_argument("--run", action="store_true", help="then run it, as 'tonk tournament run ID' does")
    create.add_argument("--deadline-ms", type=int, default=None, help="decision deadline (default: settings)")
    create.add_argument(
        "--time-bank-ms", type=int, default=None, help="extra time per bot per match (default: settings)"
    )
    create.add_argument(
        "--max-faults", type=int, default=None, help="faults that forfeit a bot's match (default: settings)"
    )
    create.add_argument(
        "--deal-mode",
        # arena.tournaments.settings.DEAL_MODES, not imported: --help stays fast
        choices=("auto", "duplicate", "independent"),
        default="auto",
        help="duplicate: every seat order of a deal is played from the same cards (card luck cancels); "
        "independent: every match gets its own cards (no deal is replayed, more variance); auto (default): "
        "duplicate at tables whose bots all run fresh per match on the arena (uploaded, or house bots), "
        "independent at tables with a bot that could remember a deal (dialled or connected)",
    )
    create.add_argument(
        "--offline-grace-s", type=int, default=None,
        help="seconds a match waits for a connected bot that is offline (default: settings)",
    )
    create.set_defaults(func=cmd_create)

    listing = sub.add_parser("list", help="tournaments, newest first")
    listing.set_defaults(func=cmd_list)

    for name, func, text in (
        ("status", cmd_status, "progress and standings"),
        ("pause", cmd_pause, "start no more matches (those being played finish)"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("id", type=int, help="tournament id (tonk tournament list)")
        p.set_defaults(func=func)

    for name, text in (
        ("run", "play every match not done, with a progress bar"),
        ("resume", "un-pause, replay abandoned and failed matches, and run"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("id", type=int, help="tournament id (tonk tournament list)")
        p.add_argument("--no-wait", action="store_true", help="with RQ: enqueue and return")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        p.set_defaults(func=cmd_run)

    extend = sub.add_parser("extend", help="add deals at every table (new matches only)")
    extend.add_argument("id", type=int, help="tournament id (tonk tournament list)")
    extend.add_argument("--deals", required=True, type=int, help="deals to add at every table")
    extend.set_defaults(func=cmd_extend)

    # One `tonk sprt`: the SDK's (over an arena's API, with --arena) gets the operator's form,
    # on the store, used when no arena is named (sdk/commands/sprt.py).
    sprt = sprt_parser(subparsers)
    sprt.add_argument("--name", default=None, help="on the store: tournament name (default: 'V2 vs V1')")
    sprt.add_argument("--seed", type=int, default=None, help="on the store: the seed (default: random)")
    sprt.add_argument("--no-wait", action="store_true", help="on the store, with RQ: enqueue, return")
    sprt.set_defaults(operator_sprt=cmd_sprt)

    worker = subparsers.add_parser("worker", help="run an RQ worker for match jobs (needs TONK_REDIS_URL)")
    worker.add_argument("--burst", action="store_true", help="quit when the queue is empty")
    worker.add_argument("--fork", action="store_true", help="fork a process per match (RQ's default)")
    worker.add_argument("--name", default=None, help="worker name (default: QUEUE.HOST.PID)")
    worker.set_defaults(func=cmd_worker)

    board = subparsers.add_parser("leaderboard", help="current ratings over every done match")
    board.add_argument("--history", action="store_true", help="the snapshots after each tournament")
    board.set_defaults(func=cmd_leaderboard)

    register_bot(subparsers)


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected bot names separated by commas, got {text!r}")
    return names


def _ints(text: str) -> list[int]:
    try:
        return [int(n) for n in text.split(",") if n.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None


def _settings() -> Settings:
    """The settings, after naming the store on standard error: the default store is the
    user's (docs/configuration.md), and a second arena made by mistake must be visible."""
    settings = load_settings()
    print(f"store: {describe_store(settings.database_url)}", file=sys.stderr)
    return settings


def _fail(command: str, exc: Exception) -> int:
    print(f"tonk {command}: {exc}", file=sys.stderr)
    return 2


def cmd_create(args: argparse.Namespace) -> int:
    from arena.queries.tournaments import get_tournament
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import create_tournament, resolve_bots

    settings = _settings()
    config = {
        key: value
        for key, value in (
            ("decision_deadline_ms", args.deadline_ms),
            ("time_bank_ms", args.time_bank_ms),
            ("max_faults", args.max_faults),
            ("offline_grace_s", args.offline_grace_s),
        )
        if value is not None
    }
    if (args.bots is None) == (args.gauntlet is None) or (args.gauntlet is None) != (args.vs is None):
        print("tonk tournament create: give --bots for a round robin, or --gauntlet BOT with --vs",
              file=sys.stderr)
        return 2
    names = args.bots if args.gauntlet is None else [args.gauntlet, *args.vs]
    try:
        with session_scope(settings.database_url) as session:
            tournament = create_tournament(
                session,
                name=args.name,
                bot_ids=resolve_bots(session, names),
                kind=TournamentKind.ROUND_ROBIN if args.gauntlet is None else TournamentKind.GAUNTLET,
                table_sizes=args.tables,
                deals_per_table=args.deals,
                hands_per_match=args.hands,
                seed=args.seed,
                settings=settings,
                config=config,
                deal_mode=args.deal_mode,
            )
            tid = tournament.id
            total = get_tournament(session, tid).progress.total
    except ArenaError as exc:
        return _fail("tournament create", exc)
    if not args.run:
        print(f"tournament {tid} created: {total} matches; play it with: tonk tournament run {tid}")
        return 0
    print(f"tournament {tid} created: {total} matches; running it")
    try:
        return drive(settings, tid)
    except ArenaError as exc:
        return _fail("tournament create", exc)


def cmd_sprt(args: argparse.Namespace) -> int:
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import create_tournament, get_tournament_row, resolve_bots
    from arena.tournaments.sprt import DEFAULT_MAX_PAIRS, sprt_params

    settings = _settings()
    try:
        max_pairs = DEFAULT_MAX_PAIRS if args.max_pairs is None else args.max_pairs
        params = sprt_params(args.elo0, args.elo1, args.alpha, args.beta, args.batch, max_pairs)
        with session_scope(settings.database_url) as session:
            tournament = create_tournament(
                session,
                name=args.name or f"{args.new} vs {args.old}",
                bot_ids=resolve_bots(session, [args.new, args.old]),
                table_sizes=[2],
                deals_per_table=args.batch,
                hands_per_match=args.hands,
                seed=args.seed,
                settings=settings,
                kind=TournamentKind.SPRT,
                sprt=params,
            )
            tid = tournament.id
        print(f"tournament {tid}: sequential test of {args.new} against {args.old}, "
              f"H0 elo <= {args.elo0:g}, H1 elo >= {args.elo1:g}, alpha {args.alpha:g}, beta {args.beta:g}")
        code = drive(settings, tid, wait=not args.no_wait, quiet=args.quiet)
    except ArenaError as exc:
        return _fail("sprt", exc)
    if args.no_wait:
        return code
    with session_scope(settings.database_url) as session:
        print(sprt_line(session, get_tournament_row(session, tid)))
    return code


def sprt_line(session: Session, tournament: Tournament) -> str:
    """The test's state in one line, as ``tonk sprt --arena`` prints it: pairs, LLR against
    its bounds, the estimate of V2 - V1 with its interval, and the verdict."""
    from arena.tournaments.sprt import sprt_state
    from sdk.commands.sprt import progress_line, verdict_text

    state = sprt_state(session, tournament).to_json()
    return f"  {progress_line('V2', 'V1', state)}: {verdict_text(state)}"


def cmd_list(args: argparse.Namespace) -> int:
    from arena.queries.tournaments import list_tournaments
    from arena.store.db import session_scope

    settings = _settings()
    with session_scope(settings.database_url) as session:
        page = list_tournaments(session, limit=100)
    print(f"{'id':>4}  {'name':<24} {'status':<9} {'done':>13}  tables")
    for t in page.items:
        done = f"{t.progress.done}/{t.progress.total}"
        print(f"{t.id:>4}  {t.name[:24]:<24} {t.status:<9} {done:>13}  {','.join(map(str, t.table_sizes))}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from arena.queries.leaderboard import board
    from arena.queries.stats import bot_stats
    from arena.queries.tournaments import get_tournament
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import get_tournament_row

    settings = _settings()
    try:
        with session_scope(settings.database_url) as session:
            t = get_tournament(session, args.id)
            stats = bot_stats(session, tournament_id=args.id)
    except ArenaError as exc:
        return _fail("tournament status", exc)
    p = t.progress
    print(f"tournament {t.id} {t.name!r}: {t.status}")
    print(
        f"  {len(t.entries)} bots, tables of {','.join(map(str, t.table_sizes))}, "
        f"{t.deals_per_table} {t.deal_mode} deals per table, {t.hands_per_match} hands per match"
    )
    print(
        f"  matches: {p.total} total, {p.done} done, {p.running} running, "
        f"{p.pending} pending, {p.failed} failed"
    )
    if t.seed is not None:
        print(f"  seed: {t.seed}")
    with session_scope(settings.database_url) as session:
        row = get_tournament_row(session, args.id)
        if row.kind == TournamentKind.SPRT:
            print(sprt_line(session, row))
        elif row.kind == TournamentKind.GAUNTLET:
            print(f"  gauntlet: every table holds bot {(row.params or {}).get('challenger')}")
    print_standings(stats)
    entrants = {e.bot_id for e in t.entries}
    with session_scope(settings.database_url) as session:
        rows = [r for r in board(session, settings.database_url).rows if r.bot_id in entrants]
    if rows:
        print("  ratings over every done match (ranks on the whole leaderboard):")
        print_ratings(rows)
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import pause_tournament

    settings = _settings()
    try:
        with session_scope(settings.database_url) as session:
            pause_tournament(session, args.id)
    except ArenaError as exc:
        return _fail("tournament pause", exc)
    print(f"tournament {args.id} paused; matches being played will finish. "
          f"Resume: tonk tournament resume {args.id}")
    return 0


def cmd_extend(args: argparse.Namespace) -> int:
    from arena.queries.tournaments import get_tournament
    from arena.runtime.backends import make_backend
    from arena.runtime.driver import run_tournament
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import extend_tournament

    settings = _settings()
    try:
        with session_scope(settings.database_url) as session:
            added = extend_tournament(session, args.id, args.deals)
            status = get_tournament(session, args.id).status
    except ArenaError as exc:
        return _fail("tournament extend", exc)
    if status == TournamentStatus.RUNNING and settings.redis_url:
        # Nobody may be watching a queued tournament: queue the new matches now.
        backend = make_backend(settings)
        run_tournament(settings.database_url, args.id, backend, wait=False)
        backend.close()
        hint = "; queued for the RQ workers"
    elif status == TournamentStatus.RUNNING:
        hint = "; the run in progress picks them up"
    else:
        hint = f"; play them with: tonk tournament resume {args.id}"
    print(f"tournament {args.id}: {added} matches added{hint}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    settings = _settings()
    command = f"tournament {args.tournament_command}"
    try:
        return drive(settings, args.id, wait=not args.no_wait, quiet=args.quiet)
    except ArenaError as exc:
        return _fail(command, exc)


def drive(settings: Settings, tournament_id: int, *, wait: bool = True, quiet: bool = False) -> int:
    """Run (or resume) a tournament with a progress bar; the exit code of ``run``."""
    from arena.queries.stats import bot_stats
    from arena.queries.tournaments import get_tournament
    from arena.runtime.backends import EmbeddedBackend, make_backend
    from arena.runtime.driver import run_tournament
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import pause_tournament

    if not wait and not settings.redis_url:
        print("tonk tournament: --no-wait needs TONK_REDIS_URL (the embedded pool lives in this process)",
              file=sys.stderr)
        return 2
    backend = make_backend(settings)
    bar: ProgressBar | None = None

    def show(progress: Progress) -> None:
        nonlocal bar
        if quiet:
            return
        if bar is None or bar.total != max(progress.total, 1):
            bar = ProgressBar(progress.total, "matches ")
        bar.update(progress.done, f"running {progress.running} failed {progress.failed} ")

    try:
        progress = run_tournament(settings.database_url, tournament_id, backend, wait=wait, on_progress=show)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        if isinstance(backend, EmbeddedBackend):
            backend.close(cancel=True)
            with session_scope(settings.database_url) as session:
                pause_tournament(session, tournament_id)
            print(f"interrupted: tournament {tournament_id} paused; continue with: "
                  f"tonk tournament resume {tournament_id}", file=sys.stderr)
        else:
            backend.close()
            print("stopped watching; the RQ workers keep playing", file=sys.stderr)
        return 130
    if bar is not None:
        bar.close()
    backend.close()
    if not wait:
        print(f"tournament {tournament_id}: {progress.pending} matches queued for the RQ workers")
        return 0
    with session_scope(settings.database_url) as session:
        status = get_tournament(session, tournament_id).status
        stats = bot_stats(session, tournament_id=tournament_id)
    print(
        f"tournament {tournament_id}: {status}; {progress.done}/{progress.total} done, "
        f"{progress.failed} failed"
    )
    print_standings(stats, limit=STANDINGS_SHOWN)
    page = page_url(f"tournaments/{tournament_id}")
    print(f"  the whole tournament: tonk tournament status {tournament_id}, or {page}")
    if progress.failed:
        print(f"failed matches are retried by: tonk tournament resume {tournament_id}", file=sys.stderr)
        return 1
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from arena.runtime.workers import run_worker

    settings = load_settings()
    if not settings.redis_url:
        print("tonk worker: set TONK_REDIS_URL (without it, matches run in the embedded pool)",
              file=sys.stderr)
        return 2
    from arena.sandbox.runner import host_problem

    # Said at the start, not at the first hosted match: served bots still play without it.
    problem = host_problem()
    if problem is not None:
        print(f"tonk worker: hosted bots cannot be sandboxed here: {problem}", file=sys.stderr)
    run_worker(settings, burst=args.burst, fork=args.fork, name=args.name)
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from arena.queries.leaderboard import board
    from arena.ratings.leaderboard import rating_history
    from arena.ratings.terms import rating_text
    from arena.store.db import session_scope

    settings = _settings()
    with session_scope(settings.database_url) as session:
        if args.history:
            for row in rating_history(session):
                mark = "?" if row.provisional else ""
                version = "" if row.version is None else f"v{row.version}"
                print(f"{row.tournament_id:>4} {row.tournament_name[:20]:<20} {row.name[:24]:<24} "
                      f"{rating_text(row.elo, row.low, row.high) + mark:<22} {row.matches:>6} {version}")
            return 0
        ratings = board(session, settings.database_url)
    print_ratings(ratings.rows)
    print(f"{ratings.done_matches} matches rated")
    return 0


#: How many of the standings ``tonk tournament run`` prints when it ends.
STANDINGS_SHOWN: Final = 5


def print_standings(stats: Sequence[BotStats], limit: int | None = None) -> None:
    """A tournament's standings by chips per 100 hands (its pages' order), the top ``limit``."""
    if not stats:
        return
    ranked = sorted(stats, key=lambda s: (-(s.chips_per_100 or 0), s.name))
    print(f"  {'bot':<24} {'matches':>7} {'chips':>8} {'per 100':>8} {'win %':>6} {'faults':>6}")
    for s in ranked[:limit]:
        print(
            f"  {s.name[:24]:<24} {s.matches:>7} {s.chips:>8} {s.chips_per_100 or 0:>8.1f} "
            f"{100 * (s.win_rate or 0):>6.1f} {s.faults:>6}"
        )
    if limit is not None and len(ranked) > limit:
        print(f"  ... and {len(ranked) - limit} more")


def print_ratings(rows: Sequence[LeaderboardRow]) -> None:
    """A rating table and what its numbers mean (arena/ratings/terms.py), as every command
    that prints ratings shows them."""
    from arena.ratings.terms import legend, los_text, rating_text

    print(f"{'#':>3}  {'bot':<24} {'ver':>4} {'Elo [95% interval]':<22} {'matches':>7}  {'LOS':>6}")
    for r in rows:  # a bot's rating is its current version's (``ver``): each is rated apart
        mark = "?" if r.provisional else ""
        print(f"{r.rank:>3}  {r.name[:24]:<24} {'v' + str(r.version):>4} "
              f"{rating_text(r.elo, r.low, r.high) + mark:<22} {r.matches:>7}  {los_text(r.los_next):>6}")
    if rows:
        for line in legend():
            print(line)

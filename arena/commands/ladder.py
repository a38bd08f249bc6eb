"""``tonk ladder``: a continuous ladder over the arena's bots (arena/ladder, docs/operator-guide.md,
"Running a public ladder").

    tonk ladder create --name N --table-size 2 --hands 20 [--bots a,b,c] [--versions-per-owner 1]
                       [--target N] [--backlog 2] [--allow-same-owner] [--placement-sd 100]
    tonk ladder list | status ID | pause ID | resume ID
    tonk ladder run [ID ...] [--lease-s 15] [--timings]

``run`` is the ladder's scheduler, meant to run as a service: it keeps every running ladder
(or those named) topped up with tables and hands their matches to the embedded pool in
this process or, with ``TONK_REDIS_URL``, to the RQ workers (``tonk worker``). Run it on two
machines for a standby: one holds each ladder's lease and schedules, the other takes over
when it dies. SIGTERM or Ctrl-C stops it cleanly (its lease is given up at once).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any

from arena.commands.tournament import _fail, _names, _settings
from arena.errors import ArenaError
from arena.runtime.stopping import StopSignals


def register(subparsers: Any) -> None:
    ladder = subparsers.add_parser("ladder", help="a continuous ladder: matches scheduled as results come in")
    sub = ladder.add_subparsers(dest="ladder_command", metavar="ACTION", required=True)

    create = sub.add_parser("create", help="create a ladder (running; its scheduler is `tonk ladder run`)")
    create.add_argument("--name", required=True, help="shown on the dashboard")
    create.add_argument("--bots", type=_names, default=None, help="a named pool (default: every active bot)")
    create.add_argument("--table-size", type=int, required=True, help="seats at each table, 2 to 6")
    create.add_argument("--hands", type=int, required=True, help="hands per match")
    create.add_argument(
        "--versions-per-owner", type=int, default=1, help="each owner's newest bots that play (default 1)"
    )
    create.add_argument(
        "--target", type=int, default=None,
        help="matches kept pending or running (default: twice the embedded pool's slots)",
    )  # fmt: skip
    create.add_argument("--backlog", type=int, default=2, help="a bot's queue: this many times its capacity")
    create.add_argument("--allow-same-owner", action="store_true", help="let one owner's bots share a table")
    create.add_argument("--placement-sd", type=float, default=None, help="placing until its sd is below this")
    create.add_argument("--seed", type=int, default=None, help="the ladder's seed (default: random, secret)")
    create.add_argument("--deadline-ms", type=int, default=None, help="decision deadline (default: settings)")
    create.add_argument("--paused", action="store_true", help="create it paused")
    create.set_defaults(func=cmd_create)

    sub.add_parser("list", help="ladders, newest first").set_defaults(func=cmd_list)
    for name, func, text in (
        ("status", cmd_status, "the ladder's board, counts and recent tables with their reasons"),
        ("pause", cmd_pause, "schedule nothing more (matches in play finish)"),
        ("resume", cmd_resume, "schedule again"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("id", type=int, help="ladder id (tonk ladder list)")
        p.set_defaults(func=func)

    run = sub.add_parser("run", help="the scheduler: keep the ladders topped up until stopped")
    run.add_argument("ids", type=int, nargs="*", help="ladder ids (default: every running ladder)")
    run.add_argument("--lease-s", type=float, default=None, help="how soon a standby takes over (default 15)")
    run.add_argument("--poll-s", type=float, default=1.0, help="seconds between ticks")
    run.add_argument("--quiet", action="store_true", help="no line per new table")
    run.add_argument("--timings", action="store_true", help="a line per tick: how long it took")
    run.set_defaults(func=cmd_run)


def cmd_create(args: argparse.Namespace) -> int:
    from arena.ladder.setup import create_ladder
    from arena.store.db import session_scope
    from arena.tournaments.lifecycle import resolve_bots

    settings = _settings()
    matchmaking: dict[str, Any] = {}
    if args.allow_same_owner:
        matchmaking["allow_same_owner"] = True
    if args.placement_sd is not None:
        matchmaking["placement_sd"] = args.placement_sd
    target = args.target
    if target is None:
        target = 2 * (settings.embedded_workers or os.cpu_count() or 1) * settings.matches_per_worker
    config = {} if args.deadline_ms is None else {"decision_deadline_ms": args.deadline_ms}
    try:
        with session_scope(settings.database_url) as session:
            pool = None if args.bots is None else resolve_bots(session, args.bots)
            raw = {
                "pool": pool, "table_size": args.table_size, "hands_per_match": args.hands,
                "versions_per_owner": args.versions_per_owner, "target": target, "backlog": args.backlog,
                "matchmaking": matchmaking,
            }  # fmt: skip
            ladder = create_ladder(
                session, name=args.name, raw=raw, settings=settings, config=config, seed=args.seed,
                start=not args.paused,
            )  # fmt: skip
            lid = ladder.id
    except ArenaError as exc:
        return _fail("ladder create", exc)
    print(f"ladder {lid} created; its scheduler: tonk ladder run {lid}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from arena.ladder.status import list_ladders
    from arena.store.db import session_scope

    settings = _settings()
    with session_scope(settings.database_url) as session:
        rows = list_ladders(session)
    print(f"{'id':>4}  {'name':<24} {'status':<9} {'seats':>5} {'done':>8} {'waiting':>8}")
    for r in rows:
        m = r["matches"]
        print(f"{r['id']:>4}  {r['name'][:24]:<24} {r['status']:<9} {r['table_size']:>5} {m['done']:>8} "
              f"{m['pending'] + m['running']:>8}")  # fmt: skip
    return 0


def _state_words(d: dict[str, Any]) -> str:
    """The ladder's state as its page's badge says it: paused is not "scheduler stopped" (no
    scheduler takes a paused ladder's lease, whether one runs or not)."""
    if d["state"] == "paused":
        return f"paused: no new tables until `tonk ladder resume {d['id']}`"
    if d["state"] == "stopped":
        return f"running, but no scheduler holds it: no new tables until `tonk ladder run {d['id']}`"
    if d["state"] == "running":
        return "running, scheduler running"
    return str(d["state"])


def cmd_status(args: argparse.Namespace) -> int:
    from arena.ladder.status import ladder_detail
    from arena.store.db import session_scope

    settings = _settings()
    try:
        with session_scope(settings.database_url) as session:
            d = ladder_detail(session, args.id, recent=10)
    except ArenaError as exc:
        return _fail("ladder status", exc)
    m = d["matches"]
    pool = "every active bot" if d["pool"] is None else ", ".join(d["pool"])
    print(f"ladder {d['id']} {d['name']!r}: {_state_words(d)}")
    print(f"  pool: {pool}; tables of {d['table_size']}, {d['hands_per_match']} hands a match, "
          f"{d['versions_per_owner']} version(s) per owner, {d['target']} matches kept queued")  # fmt: skip
    print(f"  {d['tables']} tables; matches: {m['done']} done, {m['running']} running, "
          f"{m['pending']} pending, {m['failed']} failed")  # fmt: skip
    if d["reasons"]:
        print("  tables by reason: " + ", ".join(f"{r['reason']} {r['tables']}" for r in d["reasons"]))
    if d["board"]:
        print(f"  {'#':>3}  {'bot':<24} {'Elo [95% interval]':<22} {'ladder':>7}  playing")
        for b in d["board"]:
            rank = "" if b["rank"] is None else b["rank"]
            plays = "yes" if b["playing"] else "offline" if b["offline"] else "no"
            print(f"  {rank:>3}  {b['bot'][:24]:<24} {b['rating_text']:<22} {b['ladder_matches']:>7}  "
                  f"{plays}")  # fmt: skip
    for r in d["recent"]:
        seats = " v ".join(r["seats"])
        print(f"  match {r['id']} table {r['table']} {r['status']:<8} {seats}: {r['reason']}")
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    return _set_state(args.id, pause=True)


def cmd_resume(args: argparse.Namespace) -> int:
    return _set_state(args.id, pause=False)


def _set_state(ladder_id: int, *, pause: bool) -> int:
    from arena.ladder.setup import pause_ladder, resume_ladder
    from arena.store.db import session_scope

    settings = _settings()
    try:
        with session_scope(settings.database_url) as session:
            (pause_ladder if pause else resume_ladder)(session, ladder_id)
    except ArenaError as exc:
        return _fail(f"ladder {'pause' if pause else 'resume'}", exc)
    print(f"ladder {ladder_id} {'paused: matches in play finish' if pause else 'running'}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from arena.ladder.lease import LEASE_S
    from arena.runtime.backends import make_backend
    from arena.runtime.ladder import LadderRunner

    settings = _settings()
    backend = make_backend(settings)
    runner = LadderRunner(
        settings.database_url, backend, args.ids or None, lease_s=args.lease_s or LEASE_S
    )
    stop = threading.Event()
    # SIGTERM and Ctrl-C end the loop: their handler only notes the signal and a watcher
    # thread sets ``stop`` (a handler that raised KeyboardInterrupt was lost in a weakref
    # callback, and one that set the event could deadlock on its lock; arena/runtime/stopping.py).
    signals = StopSignals()
    if signals.install():
        signals.when_requested(stop.set, name="tonk-ladder-stop")
    where = "the RQ workers" if settings.redis_url else "this process's pool"
    print(f"ladder scheduler {runner.holder}: matches go to {where}; stop with Ctrl-C", file=sys.stderr)

    def report(r: LadderRunner) -> None:
        if args.timings:  # one line a tick held: what an operator (or bench) reads a tick's cost from
            for ladder_id, tick in r.last.items():
                if tick.held:
                    print(f"ladder {ladder_id}: tick {1000 * r.last_s[ladder_id]:.1f} ms "
                          f"({1000 * r.last_cpu_s[ladder_id]:.1f} ms CPU), {len(tick.tables)} tables, "
                          f"{tick.unfinished} unfinished", flush=True)  # fmt: skip
        if args.quiet:
            return
        for ladder_id, tick in r.last.items():
            for table in tick.withdrawn:
                print(f"ladder {ladder_id}: table {table} withdrawn (a bot left)", flush=True)
            for table, bots, reason in tick.tables:
                print(f"ladder {ladder_id}: table {table} for bots {', '.join(map(str, bots))}: {reason}",
                      flush=True)  # fmt: skip
        r.last.clear()

    try:
        runner.run(stop, poll_s=args.poll_s, on_step=report)  # gives up its leases on the way out
    finally:
        try:
            backend.close(cancel=True)  # matches in play are recovered by whoever schedules next
        finally:
            signals.close()
    return 0

"""``tonk db``: the arena database's schema (arena/store/migrate.py): upgrade it, show its
revision; and ``tonk db gc``, which deletes the uploads, builds, bundles and logs no bot version
uses any more (arena/bots/collect.py)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from arena.config import load_settings
from arena.store import migrate


def register(subparsers: Any) -> None:
    db = subparsers.add_parser("db", help="the arena database's schema: upgrade it, show its revision")
    sub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = sub.add_parser(
        "upgrade", help="migrate TONK_DATABASE_URL to the newest schema, keeping the data (idempotent)"
    )
    upgrade.add_argument("--revision", default="head", help="target revision (default: head)")
    upgrade.set_defaults(func=cmd_upgrade)
    current = sub.add_parser("current", help="the database's revision; exit status 1 if behind")
    current.set_defaults(func=cmd_current)
    gc = sub.add_parser(
        "gc",
        help="delete the uploads, builds, bundles and logs no bot version uses any more (idempotent)",
        description="Delete from the store the failed builds and match logs past TONK_LOG_RETENTION_DAYS "
        "(keeping each bot version's last TONK_LOG_RETENTION_MATCHES matches' logs), and the uploads "
        "and builds no bot version uses; from this machine's data dir, what a killed build left and "
        "cached bundles whose build is gone. Nothing younger than TONK_GC_GRACE_S goes.",
    )
    gc.add_argument("--dry-run", action="store_true", help="list what it would delete, and the bytes")
    gc.set_defaults(func=cmd_gc)


def cmd_upgrade(args: argparse.Namespace) -> int:
    url = load_settings().database_url
    try:
        done = migrate.upgrade(url, args.revision)
    except migrate.MigrationError as exc:
        print(f"tonk db upgrade: {exc}", file=sys.stderr)
        return 1
    where = migrate.display_url(url)
    if done.recognised:
        print(f"{where}: made before migrations; recognised as revision {done.recognised}")
    start = done.before or done.recognised
    if start == done.after:
        print(f"{where}: at revision {done.after} (up to date)")
    else:
        print(f"{where}: upgraded from {start or 'an empty database'} to revision {done.after}")
    return 0


def cmd_current(args: argparse.Namespace) -> int:
    url = load_settings().database_url
    current, head = migrate.current_revision(url), migrate.head_revision()
    if current == head:
        print(f"{current} (head)")
        return 0
    print(f"{current or 'none'} (this code's head is {head}): run `tonk db upgrade`")
    return 1


def cmd_gc(args: argparse.Namespace) -> int:
    from arena.bots.collect import collect, summary

    settings = load_settings()
    found = collect(settings.database_url, settings, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    for item in found:
        print(f"{verb} {item.kind} {item.name} ({item.why}): {item.bytes:,} bytes")
    print(f"{migrate.display_url(settings.database_url)}: {verb} {summary(found)}")
    return 0

"""``tonk owner``: the operator's tool for owners and their API tokens (talks to the store
directly, like ``tonk tournament``: ``TONK_DATABASE_URL``, by default the per-user store of
docs/configuration.md, which it names on standard error).

    tonk owner create alice              # prints alice's token: the only time it is shown
    tonk owner create ops --operator     # an owner who may also run tournaments
    tonk owner rotate alice              # a new token; the old one stops working
    tonk owner list

The token is the only thing written to standard output, so ``TOKEN=$(tonk owner create
alice)`` captures it; what to do with it goes to standard error. The arena keeps only the
token's hash (arena/bots/owners.py): a lost token cannot be shown again, only rotated.

Exit status: 0 done; 1 refused (name taken, no such owner); 2 a malformed name.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from arena.config import describe_store, load_settings
from arena.errors import ArenaError
from arena.store.statuses import BotStatus

# The store (SQLAlchemy) is imported by each command when it runs: `tonk` imports this module
# only to list its commands.


def register(subparsers: Any) -> None:
    owner = subparsers.add_parser("owner", help="create owners and rotate their API tokens (operators)")
    sub = owner.add_subparsers(dest="owner_command", metavar="ACTION", required=True)

    create = sub.add_parser("create", help="create an owner and print its API token (shown once)")
    create.add_argument("name", help="2 to 64 letters, digits, '_', '.' or '-'")
    create.add_argument("--operator", action="store_true", help="may also create and run tournaments")
    create.set_defaults(func=cmd_create)

    rotate = sub.add_parser("rotate", help="replace an owner's token and print the new one")
    rotate.add_argument("name", help="the owner whose token is replaced")
    rotate.set_defaults(func=cmd_rotate)

    listing = sub.add_parser("list", help="owners, their role and their bots")
    listing.set_defaults(func=cmd_list)


def _fail(command: str, exc: ArenaError) -> int:
    print(f"tonk owner {command}: {exc}", file=sys.stderr)
    return 2 if exc.status == 400 else 1


def cmd_create(args: argparse.Namespace) -> int:
    from arena.bots.owners import create_owner
    from arena.store.db import session_scope

    settings = load_settings()
    try:
        with session_scope(settings.database_url) as session:
            owner, token = create_owner(session, args.name, operator=args.operator)
            role = "operator" if owner.is_operator else "owner"
    except ArenaError as exc:
        return _fail("create", exc)
    print(token)
    print(
        f"created {role} {args.name!r} in the store {describe_store(settings.database_url)}; "
        "an arena whose dashboard uses another store will not know this token.",
        file=sys.stderr,
    )
    print(
        "the token above is shown only this once. Hand it over "
        "securely: it goes in TONK_TOKEN or --token (tonk submit) and in 'Authorization: Bearer'.",
        file=sys.stderr,
    )
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    from sqlalchemy import select

    from arena.bots.owners import rotate_token
    from arena.store.db import session_scope
    from arena.store.models import Owner

    settings = load_settings()
    try:
        with session_scope(settings.database_url) as session:
            owner = session.scalars(select(Owner).where(Owner.name == args.name)).first()
            if owner is None:
                print(f"tonk owner rotate: no owner named {args.name!r}", file=sys.stderr)
                return 1
            token = rotate_token(session, owner)
    except ArenaError as exc:
        return _fail("rotate", exc)
    print(token)
    print(
        f"new token for {args.name!r} in the store {describe_store(settings.database_url)}; "
        "the old one no longer works.",
        file=sys.stderr,
    )
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from sqlalchemy import func, select

    from arena.store.db import session_scope
    from arena.store.models import Bot, Owner

    with session_scope(load_settings().database_url) as session:
        bots = func.count(Bot.id).filter(Bot.status == BotStatus.ACTIVE)
        rows = session.execute(
            select(Owner.name, Owner.is_operator, Owner.created_at, bots)
            .outerjoin(Bot, Bot.owner_id == Owner.id)
            .group_by(Owner.id)
            .order_by(Owner.name)
        ).all()
    print(f"{'owner':<24} {'role':<9} {'bots':>4}  created")
    for name, is_operator, created_at, count in rows:
        created = created_at.strftime("%Y-%m-%d %H:%M") if created_at else ""
        print(f"{name[:24]:<24} {'operator' if is_operator else 'owner':<9} {count:>4}  {created}")
    return 0

"""``tonk owner``: the operator's tool for owners and their API tokens (talks to the store
directly, like ``tonk tournament``: ``TONK_DATABASE_URL``, by default the per-user store of
docs/configuration.md, which it names on standard error).

    tonk owner create alice              # prints alice's token: the only time it is shown
    tonk owner create ops --operator     # an owner who may also run tournaments
    tonk owner rotate alice              # a new token; the old one stops working
    tonk owner list
    tonk owner invite --uses 20 --expires 7d --note "workshop"   # prints an invite code, once
    tonk owner invites                   # id, uses left, expiry, note (the codes are not kept)
    tonk owner revoke-invite 3
    tonk owner rotate-claims             # a new claim secret: every owner's claim code changes

Newcomers redeem an invite with ``tonk owner join CODE --name NAME --arena URL`` (the SDK's
side of ``tonk owner``, sdk/commands/owner.py), which prints their own token.

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
    from sdk.commands.owner import owner_actions

    sub = owner_actions(subparsers)  # the SDK's `tonk owner` (join, rotate-token) gets these too

    create = sub.add_parser("create", help="create an owner and print its API token (shown once)")
    create.add_argument("name", help="2 to 64 letters, digits, '_', '.' or '-'")
    create.add_argument("--operator", action="store_true", help="may also create and run tournaments")
    create.set_defaults(func=cmd_create)

    rotate = sub.add_parser("rotate", help="replace an owner's token and print the new one")
    rotate.add_argument("name", help="the owner whose token is replaced")
    rotate.set_defaults(func=cmd_rotate)

    listing = sub.add_parser("list", help="owners, their role and their bots")
    listing.set_defaults(func=cmd_list)

    invite = sub.add_parser("invite", help="make an invite code for newcomers (shown once)")
    invite.add_argument("--uses", type=int, default=1, help="how many owners it makes (1 to 1000; default 1)")
    invite.add_argument(
        "--expires", default=None, metavar="WHEN",
        help="a duration (30m, 12h, 7d, 2w) or an ISO date; 5 minutes to 90 days (default 7d)",
    )  # fmt: skip
    invite.add_argument("--note", default="", help="who or what it is for (shown in 'tonk owner invites')")
    invite.set_defaults(func=cmd_invite)

    invites = sub.add_parser("invites", help="invites: uses left, expiry, note (never the codes)")
    invites.set_defaults(func=cmd_invites)

    revoke = sub.add_parser("revoke-invite", help="refuse an invite's code from now on")
    revoke.add_argument("id", type=int, help="the invite's id (tonk owner invites)")
    revoke.set_defaults(func=cmd_revoke_invite)

    claims = sub.add_parser(
        "rotate-claims", help="replace the arena's claim secret: every claim code changes, leaked ones too"
    )
    claims.set_defaults(func=cmd_rotate_claims)


def _fail(command: str, exc: ArenaError) -> int:
    print(f"tonk owner {command}: {exc}", file=sys.stderr)
    return 2 if exc.status == 400 else 1


def cmd_create(args: argparse.Namespace) -> int:
    from arena.bots.owners import OPERATOR_OWNER, OwnerNameTakenError, create_owner
    from arena.store.db import session_scope

    settings = load_settings()
    try:
        with session_scope(settings.database_url) as session:
            owner, token = create_owner(session, args.name, operator=args.operator)
            role = "operator" if owner.is_operator else "owner"
    except OwnerNameTakenError as exc:
        if args.name.lower() == OPERATOR_OWNER:
            return _fail("create", exc)
        # Typically the README's `tonk login ... --token $(tonk owner create me)` run twice: the
        # token is now empty, and the one made the first time cannot be shown again, only replaced.
        print(f"tonk owner create: {exc}; nothing was printed, so a --token $(...) or TONK_TOKEN=$(...) "
              f"just given is empty. A token is shown only once: if you lost {args.name!r}'s, replace "
              f"it with `tonk login --arena URL --token $(tonk owner rotate {args.name})`",
              file=sys.stderr)  # fmt: skip
        return 1
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


def cmd_rotate_claims(args: argparse.Namespace) -> int:
    from arena.store.db import session_scope
    from arena.store.secrets import rotate_secret

    settings = load_settings()
    with session_scope(settings.database_url) as session:
        rotate_secret(session, "claim")
    print(
        f"replaced the claim secret of the store {describe_store(settings.database_url)}: every claim code "
        "is new. Registered bots keep playing; a registration or address change now needs the new code "
        "(tonk submit prints it).",
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


def cmd_invite(args: argparse.Namespace) -> int:
    from arena.bots.invites import create_invite
    from arena.bots.owners import operator_owner
    from arena.store.db import session_scope

    settings = load_settings()
    try:
        with session_scope(settings.database_url) as session:
            invite, code = create_invite(
                session, operator_owner(session), uses=args.uses, expires=args.expires, note=args.note
            )
            uses, expires = invite.uses_total, invite.expires_at.strftime("%Y-%m-%d %H:%M UTC")
            invite_id = invite.id
    except ArenaError as exc:
        return _fail("invite", exc)
    print(code)
    print(
        f"invite {invite_id} for {uses} owner{'s' if uses != 1 else ''}, until {expires}, in the store "
        f"{describe_store(settings.database_url)}.", file=sys.stderr
    )  # fmt: skip
    print(
        "the code above is shown only this once. Newcomers join with: "
        "tonk owner join CODE --name NAME --arena URL", file=sys.stderr
    )  # fmt: skip
    return 0


def cmd_invites(args: argparse.Namespace) -> int:
    from arena.bots.invites import invite_status, list_invites, redemptions
    from arena.store.db import session_scope

    with session_scope(load_settings().database_url) as session:
        joined = redemptions(session)
        rows = [
            (i.id, invite_status(i), i.uses_left, i.uses_total, joined.get(i.id, 0), i.expires_at, i.note)
            for i in list_invites(session)
        ]
    print(f"{'id':>5} {'status':<8} {'left':>5} {'of':>5} {'joined':>6}  {'expires':<16}  note")
    for invite_id, status, left, total, count, expires, note in rows:
        when = expires.strftime("%Y-%m-%d %H:%M")
        print(f"{invite_id:>5} {status:<8} {left:>5} {total:>5} {count:>6}  {when:<16}  {note[:60]}")
    return 0


def cmd_revoke_invite(args: argparse.Namespace) -> int:
    from arena.bots.invites import revoke_invite
    from arena.store.db import session_scope

    try:
        with session_scope(load_settings().database_url) as session:
            revoke_invite(session, args.id)
    except ArenaError as exc:
        return _fail("revoke-invite", exc)
    print(f"revoked invite {args.id}: its code is refused from now on", file=sys.stderr)
    return 0

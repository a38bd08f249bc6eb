"""Invite codes: how a newcomer becomes an owner without an operator at the server.

An operator makes a code (``tonk owner invite`` or ``POST /api/v1/invites``) good for a few
owners (``uses``) until it expires; a newcomer redeems it (``tonk owner join CODE``, ``POST
/api/v1/owners``) and gets an owner of their own with a fresh token. A code is ``tonki_``
plus 32 random bytes (URL-safe base64): like a token, only its SHA-256 is stored and it is
shown once.

    invite, code = create_invite(session, operator, uses=5, expires="7d", note="workshop")
    owner, token = redeem_invite(session, code, "alice")   # one use spent

Redeeming spends a use with a conditional ``UPDATE ... WHERE uses_left > 0``, so of two
redemptions racing for the last use exactly one wins (PostgreSQL re-checks the condition on
the row the winner committed; SQLite has one writer). Every refusal changes nothing, and the
caller's transaction must be rolled back on one (as ``session_scope`` and the dashboard do):
a taken name raises after the use was spent, and the rollback gives it back.

Refusals, each with its own code: ``invalid_invite`` (400: not shaped like a code at all),
``invite_not_found`` (404: unknown and forged codes alike, so a guess learns nothing),
``invite_used_up``, ``invite_expired``, ``invite_revoked`` (410).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from typing import Any, Final

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from arena.bots.owners import create_owner, validate_owner_name
from arena.errors import ArenaError, NotFoundError
from arena.store.models import Invite, InviteRedemption, Owner, utcnow
from arena.text import clean_text

INVITE_PREFIX: Final = "tonki_"
INVITE_BYTES: Final = 32
MAX_USES: Final = 1000
DEFAULT_EXPIRY: Final = dt.timedelta(days=7)
MIN_EXPIRY: Final = dt.timedelta(minutes=5)
MAX_EXPIRY: Final = dt.timedelta(days=90)
NOTE_LIMIT: Final = 200
# What a code looks like: the prefix and 43 base64url characters. Anything else is refused as
# malformed before it is hashed or looked up.
_CODE_RE: Final = re.compile(r"^tonki_[A-Za-z0-9_-]{43}$")
_DURATION_RE: Final = re.compile(r"^(\d{1,6})\s*([mhdw])$")
_UNITS: Final = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class InvalidInviteError(ArenaError):
    """Not an invite code at all (wrong prefix, length or characters)."""

    status = 400
    code = "invalid_invite"


class InvalidInviteOptionsError(ArenaError):
    """Uses, expiry or note out of bounds when making an invite."""

    status = 400
    code = "invalid_invite_options"


class InviteNotFoundError(NotFoundError):
    code = "invite_not_found"


class InviteGoneError(ArenaError):
    """The invite exists but can no longer be redeemed; subclasses say why."""

    status = 410
    code = "invite_gone"


class InviteUsedUpError(InviteGoneError):
    code = "invite_used_up"


class InviteExpiredError(InviteGoneError):
    code = "invite_expired"


class InviteRevokedError(InviteGoneError):
    code = "invite_revoked"


def new_code() -> str:
    return INVITE_PREFIX + secrets.token_urlsafe(INVITE_BYTES)


def hash_code(code: str) -> str:
    """The stored form of a code: a plain SHA-256 suffices for 256 random bits (see
    arena/bots/owners.hash_token)."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def parse_expiry(value: object, now: dt.datetime | None = None) -> dt.datetime:
    """When an invite made ``now`` expires: ``None`` for the default (7 days), a duration
    (``30m``, ``12h``, ``7d``, ``2w``), an ISO date (its midnight UTC) or date-time (UTC
    if it names no zone). Between 5 minutes and 90 days from now."""
    now = now or utcnow()
    if value is None or value == "":
        return now + DEFAULT_EXPIRY
    if not isinstance(value, str) or len(value) > 40:
        raise InvalidInviteOptionsError(
            f"expiry {value!r:.60} is not a duration (30m, 12h, 7d, 2w) or an ISO date"
        )
    text = value.strip()
    duration = _DURATION_RE.fullmatch(text.lower())
    if duration:  # bounded before it is added: 999999w would overflow the calendar
        length = dt.timedelta(**{_UNITS[duration.group(2)]: int(duration.group(1))})
        at = now + min(length, MAX_EXPIRY + dt.timedelta(days=1))
    else:
        try:
            at = dt.datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInviteOptionsError(
                f"expiry {text!r} is not a duration (30m, 12h, 7d, 2w) or an ISO date (2027-01-31)"
            ) from None
        if at.tzinfo is None:
            at = at.replace(tzinfo=dt.UTC)
    if at < now + MIN_EXPIRY or at > now + MAX_EXPIRY:
        raise InvalidInviteOptionsError(
            f"expiry {text!r} is out of bounds: an invite lasts from 5 minutes to 90 days"
        )
    return at


def create_invite(
    session: Session, creator: Owner, *, uses: int = 1, expires: object = None, note: object = ""
) -> tuple[Invite, str]:
    """A new invite good for ``uses`` owners until ``expires`` (see :func:`parse_expiry`);
    returns it with its code, which is not stored anywhere: hand it over now."""
    if isinstance(uses, bool) or not isinstance(uses, int) or not 1 <= uses <= MAX_USES:
        raise InvalidInviteOptionsError(f"uses {uses!r:.40} is out of bounds: 1 to {MAX_USES} owners")
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise InvalidInviteOptionsError("the note must be text")
    code = new_code()
    invite = Invite(
        code_hash=hash_code(code),
        uses_total=uses,
        uses_left=uses,
        expires_at=parse_expiry(expires),
        note=clean_text(note, NOTE_LIMIT) if note else "",
        created_by=creator.id,
    )
    session.add(invite)
    session.flush()
    return invite, code


def list_invites(session: Session) -> list[Invite]:
    """Every invite, newest first."""
    return list(session.scalars(select(Invite).order_by(Invite.id.desc())))


def revoke_invite(session: Session, invite_id: int) -> Invite:
    """Revoke invite ``invite_id`` (idempotent): its code is refused from now on."""
    invite = session.get(Invite, invite_id)
    if invite is None:
        raise InviteNotFoundError(f"no invite with id {invite_id!r}")
    if invite.revoked_at is None:
        invite.revoked_at = utcnow()
        session.flush()
    return invite


def check_code(code: object) -> str:
    """``code`` stripped if it is shaped like an invite code, else :class:`InvalidInviteError`
    (which does not quote it: it may be a mistyped real one)."""
    if not isinstance(code, str) or not _CODE_RE.fullmatch(code.strip()):
        raise InvalidInviteError(
            f"that is not an invite code: codes are {INVITE_PREFIX!r} followed by 43 letters, "
            "digits, '-' or '_'"
        )
    return code.strip()


def redeem_invite(session: Session, code: object, name: str) -> tuple[Owner, str]:
    """Create the owner ``name`` with invite ``code``, spending one of its uses; the owner and
    its token (shown once). Refusals are listed in the module's docstring, plus those of
    :func:`arena.bots.owners.create_owner` (a malformed or taken name, no use spent)."""
    code = check_code(code)
    validate_owner_name(name)  # before anything else: a bad name never costs a use
    invite = session.scalars(select(Invite).where(Invite.code_hash == hash_code(code))).first()
    if invite is None:
        raise InviteNotFoundError("no such invite: check the code you were given")
    now = utcnow()
    _refuse_if_spent(invite, now)
    spent = session.execute(
        update(Invite)
        .where(
            Invite.id == invite.id,
            Invite.uses_left > 0,
            Invite.revoked_at.is_(None),
            Invite.expires_at > now,
        )
        .values(uses_left=Invite.uses_left - 1)
        .execution_options(synchronize_session=False)
    )
    if getattr(spent, "rowcount", 0) != 1:  # another redemption took the last use meanwhile
        session.refresh(invite)
        _refuse_if_spent(invite, now)
        raise InviteUsedUpError(_used_up(invite))
    owner, token = create_owner(session, name)
    session.add(InviteRedemption(owner_id=owner.id, invite_id=invite.id))
    session.flush()
    session.refresh(invite)
    return owner, token


def _refuse_if_spent(invite: Invite, now: dt.datetime) -> None:
    if invite.revoked_at is not None:
        raise InviteRevokedError("this invite was revoked by the arena's operator; ask them for another")
    if invite.expires_at <= now:
        when = invite.expires_at.strftime("%Y-%m-%d %H:%M UTC")
        raise InviteExpiredError(f"this invite expired on {when}; ask the arena's operator for another")
    if invite.uses_left <= 0:
        raise InviteUsedUpError(_used_up(invite))


def _used_up(invite: Invite) -> str:
    n = invite.uses_total
    return f"this invite is used up (it was good for {n} owner{'s' if n != 1 else ''}); ask for another"


def redemptions(session: Session) -> dict[int, int]:
    """Invite id -> how many owners joined with it."""
    rows = session.execute(
        select(InviteRedemption.invite_id, func.count()).group_by(InviteRedemption.invite_id)
    ).all()
    return {int(invite_id): int(count) for invite_id, count in rows}


def invite_status(invite: Invite, now: dt.datetime | None = None) -> str:
    """``active``, ``used_up``, ``expired`` or ``revoked``."""
    now = now or utcnow()
    if invite.revoked_at is not None:
        return "revoked"
    if invite.expires_at <= now:
        return "expired"
    return "used_up" if invite.uses_left <= 0 else "active"


def invite_to_json(invite: Invite, creator: str | None = None) -> dict[str, Any]:
    """An invite as the API shows it (never the code, which is not stored)."""
    return {
        "id": invite.id,
        "status": invite_status(invite),
        "uses_left": invite.uses_left,
        "uses_total": invite.uses_total,
        "expires_at": invite.expires_at.isoformat(),
        "revoked_at": invite.revoked_at.isoformat() if invite.revoked_at else None,
        "note": invite.note,
        "created_by": creator,
        "created_at": invite.created_at.isoformat() if invite.created_at else None,
    }


__all__ = [
    "INVITE_PREFIX",
    "MAX_USES",
    "InvalidInviteError",
    "InvalidInviteOptionsError",
    "InviteExpiredError",
    "InviteGoneError",
    "InviteNotFoundError",
    "InviteRevokedError",
    "InviteUsedUpError",
    "check_code",
    "create_invite",
    "hash_code",
    "invite_status",
    "invite_to_json",
    "list_invites",
    "parse_expiry",
    "redeem_invite",
    "redemptions",
    "revoke_invite",
]

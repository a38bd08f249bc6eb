"""The arena's check slots: a bound on bot admission checks running at once, shared by every
way a bot comes in and every process sharing the store.

An admission check (arena/bots/admission.py) plays a conformance match and the protocol
check: up to ``Settings.check_time_limit_s`` of a thread and of the bot's attention. The
dashboard runs them for submitted bots (dashboard/checks.py), the gateway for connected bots
(arena/link/link_service.py); both take a slot here first, so at most ``Settings.check_slots``
checks run at once in all, and one per owner. A check past either bound is refused at once,
changing nothing: the dashboard answers ``429``, the gateway ``RESOURCE_EXHAUSTED`` (the SDK's
client retries with backoff).

The running checks are rows of ``check_leases`` (arena.store.models.CheckLease), each taken in
its own short transaction committed before the check starts and deleted when it ends, passed
or failed. A process that dies mid-check leaves its row behind; it stops counting once
``expires_at`` (``CHECK_LEASE_S`` after it was taken) has passed.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import ClassVar, Final

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from arena.errors import ArenaError
from arena.store.models import CheckLease, utcnow

#: Checks at once when the settings do not say (``Settings.check_slots``).
DEFAULT_SLOTS: Final = 2
#: Seconds a lease counts without its process. Longer than any check: a check's every call has
#: a deadline, and all of it is cut at ``Settings.check_time_limit_s``.
CHECK_LEASE_S: Final = 600.0


class TooManyChecksError(ArenaError):
    """A bot check was refused because too many are running; retry after ``retry_after`` s."""

    status = 429
    code = "too_many_requests"
    retry_after: ClassVar[int] = 5


def new_holder() -> str:
    """A fresh holder id for :func:`take_slot` / :func:`give_back`."""
    return uuid.uuid4().hex


def take_slot(
    session: Session, owner_id: int, holder: str, slots: int, lease_s: float = CHECK_LEASE_S
) -> int:
    """Take a free slot for a check of ``owner_id``'s bot and return its number, or raise
    TooManyChecksError (the owner has a check running, or ``slots`` run already). The caller
    commits at once, before the check starts; an IntegrityError on commit is a slot taken by
    another process at the same moment (:func:`collided`)."""
    if slots < 1:
        raise ValueError(f"check slots must be at least 1, got {slots!r}")
    now = utcnow()
    session.execute(delete(CheckLease).where(CheckLease.expires_at < now))
    running: dict[int, int] = dict(session.execute(select(CheckLease.slot, CheckLease.owner_id)).all())
    if owner_id in running.values():
        raise TooManyChecksError(
            "a check of one of your bots is still running: wait for it to finish, then "
            f"try again (in about {TooManyChecksError.retry_after} s)"
        )
    if len(running) >= slots:
        raise TooManyChecksError(
            f"the arena is already checking {len(running)} bots, its limit; try again "
            f"in about {TooManyChecksError.retry_after} s"
        )
    # The lowest free number: two processes admitting at once pick the same one, and the
    # primary key lets only one of them in.
    slot = min(set(range(len(running) + 1)) - set(running))
    session.add(CheckLease(slot=slot, owner_id=owner_id, holder=holder,
                           expires_at=now + dt.timedelta(seconds=lease_s)))  # fmt: skip
    session.flush()
    return slot


def collided() -> TooManyChecksError:
    """The refusal for a slot another process took at the same moment."""
    return TooManyChecksError(
        "another bot check was admitted at the same moment; try again "
        f"in about {TooManyChecksError.retry_after} s"
    )


def give_back(session: Session, slot: int, holder: str) -> None:
    """Free the slot ``holder`` took (nothing if it lapsed and someone else holds it now)."""
    session.execute(delete(CheckLease).where(CheckLease.slot == slot, CheckLease.holder == holder))

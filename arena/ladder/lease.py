"""One scheduler at a time per ladder: a row of ``scheduler_leases`` per ladder, held until
``expires_at`` by whoever took it and renewed at each of its ticks.

:func:`take` is a conditional write in the caller's transaction (an INSERT that collides on
the key, or an UPDATE of the row exactly as read), so two schedulers racing for it cannot
both win; on PostgreSQL the row stays locked until the caller commits, so a tick that
renewed the lease cannot be overtaken before its tables are written. A holder that dies
stops renewing, and the lease passes to another once it expires.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from typing import Final

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.store.models import SchedulerLease, utcnow

#: Seconds a lease lasts without renewal: a killed scheduler is replaced after this long.
LEASE_S: Final = 15.0


def lease_name(ladder_id: int) -> str:
    return f"ladder-{ladder_id}"


def holder_id() -> str:
    """This process, as ``host:pid`` (the match workers name themselves the same way)."""
    return f"{socket.gethostname()}:{os.getpid()}"[:128]


def take(
    session: Session, name: str, holder: str, *, lease_s: float = LEASE_S, now: dt.datetime | None = None
) -> bool:
    """Take or renew the lease ``name`` for ``holder`` until ``lease_s`` from now: True if
    ``holder`` holds it now (the caller's transaction must commit for it to last)."""
    now = now or utcnow()
    expires = now + dt.timedelta(seconds=lease_s)
    row = session.execute(
        select(SchedulerLease.holder, SchedulerLease.expires_at).where(SchedulerLease.name == name)
    ).first()
    if row is None:
        try:
            with session.begin_nested():
                session.execute(insert(SchedulerLease).values(name=name, holder=holder, expires_at=expires))
        except IntegrityError:  # another scheduler took it first
            return False
        return True
    if row.holder != holder and row.expires_at > now:
        return False
    taken = session.execute(
        update(SchedulerLease)
        .where(
            SchedulerLease.name == name,
            SchedulerLease.holder == row.holder,
            SchedulerLease.expires_at == row.expires_at,
        )
        .values(holder=holder, expires_at=expires)
        .execution_options(synchronize_session=False)
    )
    return bool(taken.rowcount == 1)  # type: ignore[attr-defined]


def give_up(session: Session, name: str, holder: str) -> None:
    """Release the lease if ``holder`` has it (a scheduler stopping cleanly): another takes
    over at once rather than after it expires."""
    session.execute(
        delete(SchedulerLease)
        .where(SchedulerLease.name == name, SchedulerLease.holder == holder)
        .execution_options(synchronize_session=False)
    )


def current_holder(session: Session, name: str, *, now: dt.datetime | None = None) -> str | None:
    """Who holds the lease now (None: nobody, or it expired)."""
    row = session.execute(
        select(SchedulerLease.holder, SchedulerLease.expires_at).where(SchedulerLease.name == name)
    ).first()
    if row is None or row.expires_at <= (now or utcnow()):
        return None
    return str(row.holder)

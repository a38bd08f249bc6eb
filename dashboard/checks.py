"""A bound on bot checks, which run inside the registering request.

Checking a bot dials it, asks its health service and ``GetInfo``, and plays a short
conformance match: seconds of a request thread each. Unbounded, one owner submitting in a
loop (or many at once) would hold every thread of the dashboard and starve the pages and the
API. So the dashboard admits one check at a time per owner and at most ``BOT_CHECK_SLOTS`` at
once in all; a request past either bound is refused at once with ``429 too_many_requests``
and a ``Retry-After``, and changes nothing (the registry is not called).

The running checks are rows of ``check_leases`` in the store (arena.store.models.CheckLease), so
the bounds hold across every dashboard process and machine sharing it (gunicorn workers,
replicas), not per process. A lease is taken in its own short transaction, committed before
the check starts, and deleted when the check ends, passed or failed. A process that dies
mid-check leaves its lease behind; it stops counting once ``expires_at`` (``CHECK_LEASE_S`` after
it was taken) has passed. Callers commit their writes before the slot is given back: on
SQLite the release needs the write lock their transaction would otherwise still hold.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, Final

from flask import Flask, current_app
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from arena.errors import ArenaError
from arena.store.models import CheckLease, utcnow
from dashboard.db import engine

DEFAULT_SLOTS: Final = 2
#: Seconds a lease counts without its process. Longer than any check: a check's every call has
#: a deadline, and its conformance match is a few hands at the arena's decision deadline.
CHECK_LEASE_S: Final = 600.0
_EXTENSION: Final = "tonk_check_gate"

log = logging.getLogger(__name__)


class TooManyChecksError(ArenaError):
    """A bot check was refused because too many are running; retry after ``retry_after`` s."""

    status = 429
    code = "too_many_requests"
    retry_after: ClassVar[int] = 5


class CheckGate:
    """Admits at most ``slots`` checks at once, and one per owner, among all processes that
    share the store."""

    def __init__(self, slots: int = DEFAULT_SLOTS, lease_s: float = CHECK_LEASE_S):
        if slots < 1:
            raise ValueError(f"BOT_CHECK_SLOTS must be at least 1, got {slots!r}")
        self.slots = slots
        self.lease_s = lease_s

    @contextmanager
    def admit(self, owner_id: int) -> Iterator[None]:
        """Hold a slot for ``owner_id`` for the duration, or raise TooManyChecksError."""
        holder = uuid.uuid4().hex
        slot = self._take(owner_id, holder)
        try:
            yield
        finally:
            self._give_back(slot, holder)

    def _give_back(self, slot: int, holder: str) -> None:
        # The caller has committed what the check was for, so a failure here must not turn
        # its answer into an error: the lease then lapses at its expiry instead.
        try:
            with Session(engine()) as db, db.begin():
                db.execute(delete(CheckLease).where(CheckLease.slot == slot, CheckLease.holder == holder))
        except SQLAlchemyError:
            log.warning(
                "could not give back check slot %d; it lapses in %.0f s", slot, self.lease_s, exc_info=True
            )

    def _take(self, owner_id: int, holder: str) -> int:
        now = utcnow()
        try:
            with Session(engine()) as db, db.begin():
                db.execute(delete(CheckLease).where(CheckLease.expires_at < now))
                running: dict[int, int] = dict(db.execute(select(CheckLease.slot, CheckLease.owner_id)).all())
                if owner_id in running.values():
                    raise TooManyChecksError(
                        "a check of one of your bots is still running: wait for it to finish, then "
                        f"try again (in about {TooManyChecksError.retry_after} s)"
                    )
                if len(running) >= self.slots:
                    raise TooManyChecksError(
                        f"the arena is already checking {len(running)} bots, its limit; try again "
                        f"in about {TooManyChecksError.retry_after} s"
                    )
                # The lowest free number: two processes admitting at once pick the same one,
                # and the primary key lets only one of them in.
                slot = min(set(range(len(running) + 1)) - set(running))
                expires = now + dt.timedelta(seconds=self.lease_s)
                db.add(CheckLease(slot=slot, owner_id=owner_id, holder=holder, expires_at=expires))
        except IntegrityError:
            raise TooManyChecksError(
                "another bot check was admitted at the same moment; try again "
                f"in about {TooManyChecksError.retry_after} s"
            ) from None
        return slot


def init_app(app: Flask) -> None:
    app.extensions[_EXTENSION] = CheckGate(int(app.config.get("BOT_CHECK_SLOTS", DEFAULT_SLOTS)))


def gate() -> CheckGate:
    """The current app's gate."""
    found: CheckGate = current_app.extensions[_EXTENSION]
    return found

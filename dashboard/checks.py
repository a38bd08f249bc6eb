"""A bound on bot checks, which run inside the registering request.

Checking a bot dials it, asks its health service and ``GetInfo``, and plays a short
conformance match: seconds of a request thread each. Unbounded, one owner submitting in a
loop (or many at once) would hold every thread of the dashboard and starve the pages and the
API. So the dashboard admits one check at a time per owner and at most ``BOT_CHECK_SLOTS`` at
once in all; a request past either bound is refused at once with ``429 too_many_requests``
and a ``Retry-After``, and changes nothing (the registry is not called).

The running checks are rows of ``check_leases`` in the store (arena/bots/check_slots.py), so
the bounds hold across every dashboard process and machine sharing it (gunicorn workers,
replicas) and the gateway's checks of connected bots, not per process. A lease is taken in
its own short transaction, committed before the check starts, and deleted when the check
ends, passed or failed. A process that dies mid-check leaves its lease behind; it stops
counting once ``expires_at`` (``CHECK_LEASE_S`` after it was taken) has passed. Callers commit
their writes before the slot is given back: on SQLite the release needs the write lock their
transaction would otherwise still hold.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from flask import Flask, current_app
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from arena.bots.check_slots import (
    CHECK_LEASE_S,
    DEFAULT_SLOTS,
    TooManyChecksError,
    collided,
    give_back,
    new_holder,
    take_slot,
)
from dashboard.db import engine

_EXTENSION: Final = "tonk_check_gate"

log = logging.getLogger(__name__)

__all__ = ["CHECK_LEASE_S", "DEFAULT_SLOTS", "CheckGate", "TooManyChecksError", "gate", "init_app"]


class CheckGate:
    """Admits at most ``slots`` checks at once, and one per owner, among all processes that
    share the store (the gateway's checks of connected bots included)."""

    def __init__(self, slots: int = DEFAULT_SLOTS, lease_s: float = CHECK_LEASE_S):
        if slots < 1:
            raise ValueError(f"BOT_CHECK_SLOTS must be at least 1, got {slots!r}")
        self.slots = slots
        self.lease_s = lease_s

    @contextmanager
    def admit(self, owner_id: int) -> Iterator[None]:
        """Hold a slot for ``owner_id`` for the duration, or raise TooManyChecksError."""
        holder = new_holder()
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
                give_back(db, slot, holder)
        except SQLAlchemyError:
            log.warning(
                "could not give back check slot %d; it lapses in %.0f s", slot, self.lease_s, exc_info=True
            )

    def _take(self, owner_id: int, holder: str) -> int:
        try:
            with Session(engine()) as db, db.begin():
                return take_slot(db, owner_id, holder, self.slots, self.lease_s)
        except IntegrityError:
            raise collided() from None


def init_app(app: Flask) -> None:
    app.extensions[_EXTENSION] = CheckGate(int(app.config.get("BOT_CHECK_SLOTS", DEFAULT_SLOTS)))


def gate() -> CheckGate:
    """The current app's gate."""
    found: CheckGate = current_app.extensions[_EXTENSION]
    return found

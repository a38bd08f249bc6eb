"""A bound on bot checks, which run inside the registering request.

Checking a bot dials it, asks its health service and ``GetInfo``, and plays a short
conformance match: seconds of a request thread each. Unbounded, one owner submitting in a
loop (or many at once) would hold every thread of the dashboard and starve the pages and the
API. So each dashboard process admits one check at a time per owner and at most
``BOT_CHECK_SLOTS`` at once in all; a request past either bound is refused at once with
``429 too_many_requests`` and a ``Retry-After``, and changes nothing (the registry is not
called). With several dashboard processes the bounds hold per process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from flask import Flask, current_app

from arena.errors import ArenaError

DEFAULT_SLOTS = 2
_EXTENSION = "tonk_check_gate"


class TooManyChecksError(ArenaError):
    """A bot check was refused because too many are running; retry after ``retry_after`` s."""

    status = 429
    code = "too_many_requests"
    retry_after: ClassVar[int] = 5


class CheckGate:
    """Admits at most ``slots`` checks at once, and one per owner."""

    def __init__(self, slots: int = DEFAULT_SLOTS):
        if slots < 1:
            raise ValueError(f"BOT_CHECK_SLOTS must be at least 1, got {slots!r}")
        self.slots = slots
        self._lock = threading.Lock()
        self._owners: set[int] = set()

    @contextmanager
    def admit(self, owner_id: int) -> Iterator[None]:
        """Hold a slot for ``owner_id`` for the duration, or raise TooManyChecksError."""
        with self._lock:
            if owner_id in self._owners:
                raise TooManyChecksError(
                    "a check of one of your bots is still running: wait for it to finish, then "
                    f"try again (in about {TooManyChecksError.retry_after} s)"
                )
            if len(self._owners) >= self.slots:
                raise TooManyChecksError(
                    f"the arena is already checking {len(self._owners)} bots, its limit; try again "
                    f"in about {TooManyChecksError.retry_after} s"
                )
            self._owners.add(owner_id)
        try:
            yield
        finally:
            with self._lock:
                self._owners.discard(owner_id)


def init_app(app: Flask) -> None:
    app.extensions[_EXTENSION] = CheckGate(int(app.config.get("BOT_CHECK_SLOTS", DEFAULT_SLOTS)))


def gate() -> CheckGate:
    """The current app's gate."""
    found: CheckGate = current_app.extensions[_EXTENSION]
    return found

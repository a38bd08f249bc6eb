"""The arena's read side: every query the dashboard, its API and the ``tonk`` commands make,
one module per area, straight on the arena schema. Nothing outside this package reads the
store for display (the write side lives in arena/tournaments/lifecycle.py, arena/play/lifecycle.py, ...).

Every function takes an open :class:`~sqlalchemy.orm.Session` (the caller owns the
transaction). The ``get_*``/``list_*`` functions return frozen dataclasses, never ORM objects,
so nothing lazy-loads after the session is closed; the ``*_list``/``*_detail`` ones shape those
into the plain dicts (JSON-ready) a page and its API route both show. What changes only when
matches finish is kept in :mod:`arena.queries.cache`, the one cache.

Secrets stay secret: a match's seed, its replay and the match id its bots were given are
returned only once every match of its *deal* is done (the matches of the tournament dealt from
the same seed: the seat rotations of a duplicate deal), since a rotation's records show the
cards of the rotations still to be played; a tournament's seed only once it is finished.

The arena must not import the dashboard: this package depends on arena and sdk only.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from arena.errors import InvalidQueryError

T = TypeVar("T")

#: The most rows one page may hold.
MAX_PAGE = 500


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True)
class Paging:
    """Page ``page`` (from 1) of ``per_page`` rows, as the dashboard's ``?page=&per_page=``."""

    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


def iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds")


def vars_of(row: object) -> dict[str, Any]:
    """A dataclass's fields as keyword arguments (shallow, unlike ``asdict``)."""
    return {name: getattr(row, name) for name in row.__dataclass_fields__}  # type: ignore[attr-defined]


def check_paging(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidQueryError(f"limit {limit!r} must be from 1 to {MAX_PAGE}")
    if offset < 0:
        raise InvalidQueryError(f"offset {offset!r} must not be negative")

"""Checking what a request asks for: path ids, paging and filters.

Everything a client can put in a URL is checked here and refused with a 400
(:class:`~dashboard.errors.InvalidParameterError`) naming the parameter, so no bad value
reaches SQL (where, say, an id past 2**31 would make PostgreSQL fail with a 500).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter

from arena.queries import Paging  # built here from ?page=&per_page=
from dashboard.errors import InvalidParameterError
from sdk.bot import BOT_NAME_RE

#: Largest id a row can have (the id columns are 32-bit integers).
MAX_ID = 2**31 - 1
MAX_PAGE = 1_000_000
DEFAULT_PER_PAGE = 25
MAX_PER_PAGE = 100
#: A whole number as a query parameter: an optional minus sign, then ASCII digits only.
WHOLE_NUMBER_RE = re.compile(r"-?[0-9]{1,12}")
#: ``?q=`` searching bot and owner names: a part of one, in the names' own alphabet.
MAX_SEARCH = 64
SEARCH_RE = re.compile(rf"[A-Za-z0-9_.-]{{1,{MAX_SEARCH}}}")


class InvalidPathError(HTTPException):
    """Raised while routing, so the error handlers turn it into a 400 like the others."""

    code = 400
    api_code = "invalid_id"


class IdConverter(BaseConverter):
    """``<id:name>``: a positive row id. Not a number: 400; a number no row can have: 404."""

    regex = r"[^/]+"
    part_isolating = True
    minimum = 1

    def to_python(self, value: str) -> int:
        if not value.isascii() or not value.isdigit():
            raise InvalidPathError(f"{value[:40]!r} is not a valid id: ids are whole numbers")
        number = int(value[:12]) if len(value) <= 12 else MAX_ID + 1
        if not self.minimum <= number <= MAX_ID:
            from werkzeug.exceptions import NotFound

            raise NotFound(f"there is nothing with id {value[:40]}")
        return number

    def to_url(self, value: Any) -> str:
        return str(int(value))


class IndexConverter(IdConverter):
    """``<index:name>``: a position counted from 0 (hand number, decision number)."""

    minimum = 0


def int_arg(args: Mapping[str, str], name: str, default: int | None = None, *, lo: int = 1,
            hi: int = MAX_ID) -> int | None:
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    raw = raw.strip()
    # One pattern, the same that int() will accept: "--1" or "1-" used to pass a looser test
    # and then make int() raise (a 500).
    if not WHOLE_NUMBER_RE.fullmatch(raw):
        raise InvalidParameterError(f"'{name}' must be a whole number, got {raw[:40]!r}")
    value = int(raw)
    if not lo <= value <= hi:
        raise InvalidParameterError(f"'{name}' must be between {lo} and {hi}, got {value}")
    return value


def choice_arg(args: Mapping[str, str], name: str, choices: Collection[str]) -> str | None:
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    if raw not in choices:
        raise InvalidParameterError(
            f"'{name}' must be one of {', '.join(sorted(choices))}; got {raw[:40]!r}"
        )
    return raw


def results_arg(args: Mapping[str, str]) -> bool:
    """``?results=1``: show match scores in lists. Off by default, as on a match's page, where
    results wait for "Show results": a list of scores would spoil the replays it links to."""
    return choice_arg(args, "results", {"1"}) == "1"


def name_arg(args: Mapping[str, str], name: str) -> str | None:
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    if not BOT_NAME_RE.fullmatch(raw):
        raise InvalidParameterError(f"'{name}' is not a valid bot name: {raw[:40]!r}")
    return raw


def paging(args: Mapping[str, str], default_per_page: int = DEFAULT_PER_PAGE) -> Paging:
    page = int_arg(args, "page", 1, lo=1, hi=MAX_PAGE)
    per_page = int_arg(args, "per_page", default_per_page, lo=1, hi=MAX_PER_PAGE)
    assert page is not None and per_page is not None
    return Paging(page, per_page)


def board_args(page: Paging, q: str | None, default_per_page: int) -> dict[str, Any]:
    """What a paged board's pager links (and a ladder's poll) keep in the URL besides ``page``:
    ``per_page`` when not the page's default, and the search."""
    args: dict[str, Any] = {}
    if page.per_page != default_per_page:
        args["per_page"] = page.per_page
    if q:
        args["q"] = q
    return args


def search_arg(args: Mapping[str, str], name: str = "q") -> str | None:
    """``?q=``: a part of a bot's or owner's name, matched without regard to case (returned in
    lower case; None when empty). Names are letters, digits, '_', '.' and '-', so anything
    else, or more than MAX_SEARCH characters, can match nothing and is refused by name."""
    raw = args.get(name)
    if raw is None or not raw.strip():
        return None
    raw = raw.strip()
    if not SEARCH_RE.fullmatch(raw):
        shown = raw[:40] + ("..." if len(raw) > 40 else "")
        raise InvalidParameterError(
            f"'{name}' searches bot and owner names: 1 to {MAX_SEARCH} letters, digits, '_', '.' "
            f"or '-' ({len(raw)} characters given: {shown!r})"
        )
    return raw.lower()

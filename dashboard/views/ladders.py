"""Ladder pages (the list, and one ladder updating live) and the ladder API (/api/v1/ladders):
reading is public; creating, pausing and resuming take an operator's token. The ladder's
scheduler is ``tonk ladder run`` (arena/runtime/ladder.py): these routes only change what
it reads.

The board is paged (``?page=&per_page=``, 50 rows a page on the page, 100 in the API) and
searched by bot or owner name (``?q=``). The page's poll answers 304 with no body while
nothing it shows changed (the ETag is a hash of :func:`arena.ladder.status.ladder_version`
and of what the poll asked), so an idle tab costs a few hundred bytes every few seconds."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from typing import Any, Final

from flask import Blueprint, Response, get_template_attribute, jsonify, render_template, request, url_for

from arena.bots.owners import authenticate, parse_bearer, require_operator
from arena.ladder.setup import create_ladder, pause_ladder, resume_ladder
from arena.ladder.status import board_order, ladder_detail, ladder_version, list_ladders
from arena.queries import Paging
from arena.queries.cache import cached
from arena.queries.live import now_showing
from arena.tournaments.lifecycle import resolve_bots
from dashboard.db import session
from dashboard.errors import InvalidParameterError
from dashboard.params import MAX_PER_PAGE, board_args, choice_arg, paging, search_arg
from dashboard.views.api import _body
from dashboard.views.common import db_url, settings

bp = Blueprint("ladders", __name__)

#: What POST /api/v1/ladders takes.
CREATE_FIELDS = frozenset(
    {"name", "bots", "table_size", "hands_per_match", "versions_per_owner", "target", "backlog",
     "matchmaking", "seed", "config"}
)  # fmt: skip
#: The parts of the page the poll swaps in (templates/_ladder_live.html).
LIVE_PARTS = ("counts", "board", "recent")
#: Board rows a page shows, and the API's default (``per_page`` up to MAX_PER_PAGE).
PAGE_ROWS: Final = 50
API_ROWS: Final = MAX_PER_PAGE


@bp.get("/ladders/")
def index() -> str:
    return render_template("ladders.html", ladders=list_ladders(session()))


@bp.get("/ladders/<id:ladder_id>")
def detail(ladder_id: int) -> str:
    page, q = paging(request.args, PAGE_ROWS), search_arg(request.args)
    version = ladder_version(session(), ladder_id)
    d = _detail(ladder_id, page, q, version)
    # The poll's ETag for what this page shows: its first poll is a 304 while nothing changed,
    # so an idle tab never has its board swapped for the same rows (under a reader's click).
    return render_template(
        "ladder.html", d=d, now_showing=_showing(ladder_id, version), args=board_args(page, q, PAGE_ROWS),
        etag=_etag(version, page, q, html=True),
    )


@bp.get("/api/v1/ladders")
def api_list() -> Response:
    return jsonify({"ladders": list_ladders(session())})


@bp.get("/api/v1/ladders/<id:ladder_id>")
def api_detail(ladder_id: int) -> Response:
    page, q = paging(request.args, API_ROWS), search_arg(request.args)
    return jsonify({"ladder": _detail(ladder_id, page, q, ladder_version(session(), ladder_id))})


@bp.get("/api/v1/ladders/<id:ladder_id>/live")
def api_live(ladder_id: int) -> Response:
    """The ladder as the page shows it, with its latest finished deals ("now showing"); with
    ``html=1`` also its changing parts rendered, the board at ``page`` (searched by ``q``) as
    the tab shows it. 304 and no body when ``If-None-Match`` names the current ETag."""
    page, q = paging(request.args, PAGE_ROWS), search_arg(request.args)
    html = choice_arg(request.args, "html", ("0", "1")) == "1"
    db = session()
    version = ladder_version(db, ladder_id)
    tag = _etag(version, page, q, html)
    if request.if_none_match.contains_weak(tag):
        response = Response(status=304)
    else:
        d = _detail(ladder_id, page, q, version)
        data: dict[str, Any] = {k: d[k] for k in ("id", "status", "state", "scheduler", "matches", "tables")}
        data["board_page"] = d["board_page"]
        data["now_showing"] = _showing(ladder_id, version)
        if html:
            args = {"board": (d, board_args(page, q, PAGE_ROWS))}
            data["html"] = {part: str(_macro(part)(*args.get(part, (d,)))) for part in LIVE_PARTS}
            showing: Callable[..., Any] = get_template_attribute("_now_showing.html", "now_showing")
            data["html"]["now_showing"] = str(showing(data["now_showing"]))
        response = jsonify({"live": data})
    response.set_etag(tag, weak=True)
    # Kept by the browser, but asked again every time (the page's script sends If-None-Match).
    response.headers["Cache-Control"] = "no-cache"
    return response


def _detail(ladder_id: int, page: Paging, q: str | None, version: Hashable) -> dict[str, Any]:
    """The ladder with a page of its board, kept until the ladder's version changes: the
    version is what the poll's 304 says "nothing shown changed" by, so what it answers 304 for
    the page may keep too. The board's order (every bot read: 0.2 s at 10,000) is kept once
    for every page and search; each page's rows, counts and recent matches once per page
    (a ladder page at 10,000 bots read them again each time: about a third of its time)."""
    db = session()
    order = cached(("ladder-board", db_url(), ladder_id), version, lambda: board_order(db, ladder_id))
    return cached(
        ("ladder-page", db_url(), ladder_id, page.page, page.per_page, q),
        version,
        lambda: ladder_detail(db, ladder_id, page=page.page, per_page=page.per_page, q=q, order=order),
    )


def _showing(ladder_id: int, version: Hashable) -> list[dict[str, Any]]:
    """The ladder's latest finished deals, kept until its version changes (a match done
    changes its counts)."""
    db = session()
    return cached(("ladder-showing", db_url(), ladder_id), version, lambda: now_showing(db, ladder_id))


def _etag(version: Hashable, page: Paging, q: str | None, html: bool) -> str:
    """The same for every worker and process (no ``hash()``: it is salted per process)."""
    text = repr((version, page.page, page.per_page, q, html)).encode()
    return hashlib.blake2b(text, digest_size=12).hexdigest()


@bp.post("/api/v1/ladders")
def api_create() -> tuple[Response, int, dict[str, str]]:
    _operator()
    body = _body()
    unknown = sorted(set(body) - CREATE_FIELDS)
    if unknown:
        raise InvalidParameterError(
            f"unknown field {unknown[0]!r:.60}; known fields: {', '.join(sorted(CREATE_FIELDS))}"
        )
    db = session()
    bots = body.get("bots")
    if bots is not None and (not isinstance(bots, list) or not all(isinstance(b, str) for b in bots)):
        raise InvalidParameterError(
            f"'bots' is a list of bot names or null (every active bot), got {bots!r:.80}"
        )
    keys = ("table_size", "hands_per_match", "versions_per_owner", "target", "backlog", "matchmaking")
    raw: dict[str, Any] = {k: body[k] for k in keys if k in body}
    raw["pool"] = None if bots is None else resolve_bots(db, bots)
    config = body.get("config")
    if config is not None and not isinstance(config, dict):
        raise InvalidParameterError(f"'config' is an object of referee settings, got {config!r:.80}")
    name = body.get("name")
    ladder = create_ladder(db, name=name, raw=raw, settings=settings(), config=config, seed=body.get("seed"))  # type: ignore[arg-type]
    db.commit()
    location = url_for("ladders.api_detail", ladder_id=ladder.id)
    return jsonify({"ladder": ladder_detail(db, ladder.id, per_page=API_ROWS)}), 201, {"Location": location}


@bp.post("/api/v1/ladders/<id:ladder_id>/<any(pause, resume):action>")
def api_action(ladder_id: int, action: str) -> Response:
    _operator()
    db = session()
    (pause_ladder if action == "pause" else resume_ladder)(db, ladder_id)
    db.commit()
    return jsonify({"ladder": ladder_detail(db, ladder_id, per_page=API_ROWS)})


def _operator() -> None:
    require_operator(authenticate(session(), parse_bearer(request.headers.get("Authorization")), settings()))


def _macro(name: str) -> Callable[..., Any]:
    found: Callable[..., Any] = get_template_attribute("_ladder_live.html", name)
    return found

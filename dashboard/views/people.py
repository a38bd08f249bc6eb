"""The people's board (issue #39): ``GET /people`` (a page of it, ``?page=&per_page=``,
searched by name with ``?q=``) and ``GET /api/v1/people``, the same rows as JSON. People are
rated apart from bots, against the bots' ratings held fixed (arena/ratings/people.py)."""

from __future__ import annotations

from typing import Final

from flask import Blueprint, Response, jsonify, render_template, request

from arena.queries.people import people_page
from dashboard.db import session
from dashboard.params import MAX_PER_PAGE, board_args, paging, search_arg
from dashboard.views.common import db_url

bp = Blueprint("people", __name__)

#: Rows a page of the board shows (``per_page`` up to dashboard.params.MAX_PER_PAGE).
PAGE_ROWS: Final = 50


@bp.get("/people")
def index() -> str:
    page, q = paging(request.args, PAGE_ROWS), search_arg(request.args)
    data = people_page(session(), db_url(), page, q)
    return render_template("people.html", rows=data["rows"], data=data, args=board_args(page, q, PAGE_ROWS))


@bp.get("/api/v1/people")
def api_index() -> Response:
    """A page of the people's board: ``people`` (its rows) and where it is."""
    where = paging(request.args, MAX_PER_PAGE)
    data = people_page(session(), db_url(), where, search_arg(request.args))
    return jsonify({"people": data.pop("rows"), **data})

"""The home page: the leaderboard (a page of it, ``?page=&per_page=``, searched by bot or owner
name with ``?q=``), its rating-interval chart for that page and the latest finished deals."""

from __future__ import annotations

from typing import Final

from flask import Blueprint, render_template, request

from arena.queries.leaderboard import leaderboard_page
from arena.queries.live import now_showing
from dashboard import charts
from dashboard.db import session
from dashboard.params import board_args, paging, search_arg
from dashboard.views.common import db_url

bp = Blueprint("leaderboard", __name__)

#: Rows a page of the leaderboard shows (``per_page`` up to dashboard.params.MAX_PER_PAGE).
PAGE_ROWS: Final = 50


@bp.get("/")
def index() -> str:
    page, q = paging(request.args, PAGE_ROWS), search_arg(request.args)
    db = session()
    data = leaderboard_page(db, db_url(), page, q)
    return render_template(
        "leaderboard.html", rows=data["rows"], data=data, args=board_args(page, q, PAGE_ROWS),
        chart=charts.interval_chart(data["rows"]), now_showing=now_showing(db),
    )  # fmt: skip

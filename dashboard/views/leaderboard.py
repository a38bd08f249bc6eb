"""The home page: the leaderboard, its rating-interval chart and the latest finished deals."""

from __future__ import annotations

from flask import Blueprint, render_template

from arena.queries.leaderboard import leaderboard
from arena.queries.live import now_showing
from dashboard import charts
from dashboard.db import session
from dashboard.views.common import db_url

bp = Blueprint("leaderboard", __name__)


@bp.get("/")
def index() -> str:
    db = session()
    rows = leaderboard(db, db_url())
    return render_template(
        "leaderboard.html", rows=rows, chart=charts.interval_chart(rows), now_showing=now_showing(db)
    )

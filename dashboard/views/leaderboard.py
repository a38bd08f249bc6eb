"""The home page: the leaderboard and its rating-interval chart."""

from __future__ import annotations

from flask import Blueprint, render_template

from arena.queries.leaderboard import leaderboard
from dashboard import charts
from dashboard.db import session
from dashboard.views.common import db_url

bp = Blueprint("leaderboard", __name__)


@bp.get("/")
def index() -> str:
    rows = leaderboard(session(), db_url())
    return render_template("leaderboard.html", rows=rows, chart=charts.interval_chart(rows))

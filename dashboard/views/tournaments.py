"""Tournament pages: the list, and one tournament with live progress."""

from __future__ import annotations

from flask import Blueprint, render_template

from dashboard.db import session
from dashboard.queries.tournaments import tournament_detail, tournament_list
from dashboard.views.common import db_url

bp = Blueprint("tournaments", __name__, url_prefix="/tournaments")


@bp.get("/")
def index() -> str:
    return render_template("tournaments.html", tournaments=tournament_list(session()))


@bp.get("/<id:tournament_id>")
def detail(tournament_id: int) -> str:
    t = tournament_detail(session(), db_url(), tournament_id)
    return render_template("tournament.html", t=t)

"""Tournament pages: the list, and one tournament with live progress."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from arena.queries.live import running_matches, timing
from arena.queries.tournaments import STATUSES, tournament_detail, tournament_list
from dashboard.db import session
from dashboard.params import choice_arg, paging
from dashboard.views.common import db_url

bp = Blueprint("tournaments", __name__, url_prefix="/tournaments")


@bp.get("/")
def index() -> str:
    status = choice_arg(request.args, "status", STATUSES)
    data = tournament_list(session(), status, paging(request.args, default_per_page=50))
    return render_template("tournaments.html", data=data, status=status)


@bp.get("/<id:tournament_id>")
def detail(tournament_id: int) -> str:
    db = session()
    t = tournament_detail(db, db_url(), tournament_id)
    t.update(timing=timing(db, tournament_id, t["progress"]), running=running_matches(db, tournament_id))
    return render_template("tournament.html", t=t)

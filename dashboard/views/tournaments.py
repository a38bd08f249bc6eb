"""Tournament pages: the list, and one tournament with live progress."""

from __future__ import annotations

from flask import Blueprint, redirect, render_template, request, url_for
from sqlalchemy import select
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.queries.live import now_showing, running_matches
from arena.queries.tournaments import STATUSES, tournament_detail, tournament_list
from arena.store.models import Tournament
from arena.store.statuses import TournamentKind
from dashboard import charts
from dashboard.db import session
from dashboard.params import choice_arg, paging
from dashboard.views.common import db_url, tournament_timing

bp = Blueprint("tournaments", __name__, url_prefix="/tournaments")


@bp.get("/")
def index() -> str:
    status = choice_arg(request.args, "status", STATUSES)
    data = tournament_list(session(), status, paging(request.args, default_per_page=50))
    return render_template("tournaments.html", data=data, status=status)


@bp.get("/<id:tournament_id>")
def detail(tournament_id: int) -> str | WerkzeugResponse:
    db = session()
    if db.scalar(select(Tournament.kind).where(Tournament.id == tournament_id)) == TournamentKind.LADDER:
        return redirect(url_for("ladders.detail", ladder_id=tournament_id))  # a ladder has its own page
    t = tournament_detail(db, db_url(), tournament_id)
    t.update(timing=tournament_timing(db, tournament_id, t["progress"]),
             running=running_matches(db, tournament_id))
    t.update(now_showing=now_showing(db, tournament_id))
    chart = charts.sprt_chart(t["sprt"]) if "sprt" in t else None
    return render_template("tournament.html", t=t, sprt_chart=chart)

"""Match pages: the filtered list, and one match with its replay viewer."""

from __future__ import annotations

from flask import Blueprint, render_template, request
from sqlalchemy import select

from arena.queries.matches import STATUSES, match_detail, match_list
from arena.store.models import Bot, Tournament
from dashboard.db import session
from dashboard.params import paging
from dashboard.views.common import db_url, match_filter

bp = Blueprint("matches", __name__, url_prefix="/matches")


@bp.get("/")
def index() -> str:
    db = session()
    where = match_filter(db, request.args)
    page = paging(request.args)
    data = match_list(db, db_url(), where, page)
    bots = db.scalars(select(Bot.name).where(Bot.person.is_(False)).order_by(Bot.name)).all()
    tournaments = db.execute(select(Tournament.id, Tournament.name).order_by(Tournament.id.desc())).all()
    kept = ("bot", "tournament", "status", "per_page", "results")
    args = {k: v for k, v in request.args.items() if k in kept and v}
    return render_template(
        "matches.html", data=data, bots=bots, tournaments=tournaments, statuses=STATUSES, args=args
    )


@bp.get("/<id:match_id>")
def detail(match_id: int) -> str:
    return render_template("match.html", m=match_detail(session(), match_id))

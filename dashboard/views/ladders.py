"""Ladder pages (the list, and one ladder updating live) and the ladder API (/api/v1/ladders):
reading is public; creating, pausing and resuming take an operator's token. The ladder's
scheduler is ``tonk ladder run`` (arena/runtime/ladder.py): these routes only change what
it reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, get_template_attribute, jsonify, render_template, request, url_for

from arena.bots.owners import authenticate, parse_bearer, require_operator
from arena.ladder.setup import create_ladder, pause_ladder, resume_ladder
from arena.ladder.status import ladder_detail, list_ladders
from arena.queries.live import now_showing
from arena.tournaments.lifecycle import resolve_bots
from dashboard.db import session
from dashboard.errors import InvalidParameterError
from dashboard.params import choice_arg
from dashboard.views.api import _body
from dashboard.views.common import settings

bp = Blueprint("ladders", __name__)

#: What POST /api/v1/ladders takes.
CREATE_FIELDS = frozenset(
    {"name", "bots", "table_size", "hands_per_match", "versions_per_owner", "target", "backlog",
     "matchmaking", "seed", "config"}
)  # fmt: skip
#: The parts of the page the poll swaps in (templates/_ladder_live.html).
LIVE_PARTS = ("counts", "board", "recent")


@bp.get("/ladders/")
def index() -> str:
    return render_template("ladders.html", ladders=list_ladders(session()))


@bp.get("/ladders/<id:ladder_id>")
def detail(ladder_id: int) -> str:
    d = ladder_detail(session(), ladder_id)
    return render_template("ladder.html", d=d, now_showing=now_showing(session(), ladder_id))


@bp.get("/api/v1/ladders")
def api_list() -> Response:
    return jsonify({"ladders": list_ladders(session())})


@bp.get("/api/v1/ladders/<id:ladder_id>")
def api_detail(ladder_id: int) -> Response:
    return jsonify({"ladder": ladder_detail(session(), ladder_id)})


@bp.get("/api/v1/ladders/<id:ladder_id>/live")
def api_live(ladder_id: int) -> Response:
    """The ladder as the page shows it, with its latest finished deals ("now showing"); with
    ``html=1`` also its changing parts rendered."""
    d = ladder_detail(session(), ladder_id)
    data: dict[str, Any] = {k: d[k] for k in ("id", "status", "scheduler", "matches", "tables")}
    data["now_showing"] = now_showing(session(), ladder_id)
    if choice_arg(request.args, "html", ("0", "1")) == "1":
        data["html"] = {part: str(_macro(part)(d)) for part in LIVE_PARTS}
        showing: Callable[..., Any] = get_template_attribute("_now_showing.html", "now_showing")
        data["html"]["now_showing"] = str(showing(data["now_showing"]))
    return jsonify({"live": data})


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
    return jsonify({"ladder": ladder_detail(db, ladder.id)}), 201, {"Location": location}


@bp.post("/api/v1/ladders/<id:ladder_id>/<any(pause, resume):action>")
def api_action(ladder_id: int, action: str) -> Response:
    _operator()
    db = session()
    (pause_ladder if action == "pause" else resume_ladder)(db, ladder_id)
    db.commit()
    return jsonify({"ladder": ladder_detail(db, ladder_id)})


def _operator() -> None:
    require_operator(authenticate(session(), parse_bearer(request.headers.get("Authorization")), settings()))


def _macro(name: str) -> Callable[..., Any]:
    found: Callable[..., Any] = get_template_attribute("_ladder_live.html", name)
    return found

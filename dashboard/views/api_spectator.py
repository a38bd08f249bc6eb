"""The spectator's part of the JSON API (/api/v1): a replay's steps as the engine computed
them, a tournament's live state, and exports of hands as ``tonk-hand/1`` JSON lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, get_template_attribute, jsonify, request

from dashboard.db import session
from dashboard.params import choice_arg
from dashboard.queries import replays
from dashboard.queries.cache import cached
from dashboard.queries.live import running_matches, timing
from dashboard.queries.replay_steps import match_steps
from dashboard.queries.tournaments import tournament_detail
from dashboard.views.common import db_url

bp = Blueprint("api_spectator", __name__, url_prefix="/api/v1")


@bp.get("/matches/<id:match_id>/steps")
def get_steps(match_id: int) -> Response:
    db = session()
    match = replays.get_match(db, match_id)
    hands = replays.load_hands(db, db_url(), match)  # refuses an unfinished match
    # A done match's hands never change, so neither do its steps.
    steps = cached(("steps", db_url(), match_id), "done", lambda: match_steps(hands))
    return jsonify({"match": match_id, "hands_in_match": match.hands, "hands": steps})


@bp.get("/tournaments/<id:tournament_id>/live")
def get_live(tournament_id: int) -> Response:
    """What changes while a tournament plays: progress, timing, running matches, standings,
    matrix and tables; with ``html=1`` also those parts as the page renders them (the
    tournament page's poll swaps them in, so page and poll never differ)."""
    db = session()
    t = tournament_detail(db, db_url(), tournament_id)
    t.update(timing=timing(db, tournament_id, t["progress"]), running=running_matches(db, tournament_id))
    keys = ("id", "status", "progress", "timing", "running", "standings", "matrix", "tables")
    data: dict[str, Any] = {k: t[k] for k in keys}
    if choice_arg(request.args, "html", ("0", "1")) == "1":
        data["html"] = {
            "timing": str(macro("timing")(t["timing"])),
            "running": str(macro("running")(t["running"])),
            **{part: str(macro(part)(t)) for part in ("standings", "matrix", "tables")},
        }
    return jsonify({"live": data})


def macro(name: str) -> Callable[..., Any]:
    """A macro of templates/_live.html, the page's parts that change as matches finish."""
    found: Callable[..., Any] = get_template_attribute("_live.html", name)
    return found

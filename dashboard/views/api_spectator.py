"""The spectator's part of the JSON API (/api/v1): a replay's steps as the engine computed
them, a tournament's live state, and exports of hands as ``tonk-hand/1`` JSON lines."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from dashboard.db import session
from dashboard.queries import replays
from dashboard.queries.cache import cached
from dashboard.queries.replay_steps import match_steps
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

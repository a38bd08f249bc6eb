"""The JSON API of challenges (arena/tournaments/challenges.py): start one between your bot
and any bot that accepts them, list a bot's, and turn your bot's off or on.

``POST /api/v1/challenges {bot, opponent, deals?, hands_per_match?}`` starts it at once, as
``tonk challenge`` does; its live page is the tournament's. ``GET /api/v1/challenges?bot=NAME``
lists the latest challenges a bot played either side of (public, as both bots' pages show
them). ``PUT /api/v1/bots/<name>/challenges {"accept": false}`` turns a bot's challenges off.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, request, url_for
from sqlalchemy import select

from arena.store.models import Bot
from arena.tournaments.challenges import challenges_of, set_accepting, start_challenge
from dashboard import operations
from dashboard.db import session
from dashboard.errors import InvalidParameterError
from dashboard.views.api import _body, _bot_name, _owner
from dashboard.views.common import settings

bp = Blueprint("api_challenges", __name__, url_prefix="/api/v1")


@bp.post("/challenges")
def post_challenge() -> tuple[Response, int, dict[str, str]]:
    owner = _owner()
    body = _body()
    db = session()
    tournament = start_challenge(db, owner, body, settings())
    tid = tournament.id
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    operations.run(app, db, tid, settings(), resume=False)
    db.commit()
    (answer,) = challenges_of(db, tournament_id=tid)
    page = url_for("tournaments.detail", tournament_id=tid, _external=True)
    payload = {"challenge": answer.to_json(), "page": page}
    return jsonify(payload), 201, {"Location": url_for("api.get_tournament", tournament_id=tid)}


@bp.get("/challenges")
def get_challenges() -> Response:
    db = session()
    name = request.args.get("bot", "").strip()
    bot_id = None
    if name:
        bot_id = db.scalar(select(Bot.id).where(Bot.name == _bot_name(name)))
        if bot_id is None:
            return jsonify({"challenges": []})
    return jsonify({"challenges": [c.to_json() for c in challenges_of(db, bot_id)]})


@bp.put("/bots/<name>/challenges")
def put_accepting(name: str) -> Response:
    owner = _owner()
    accept = _body().get("accept")
    if not isinstance(accept, bool):
        raise InvalidParameterError(f"'accept' must be true or false, got {accept!r:.40}")
    db = session()
    bot = set_accepting(db, owner, _bot_name(name), accept)
    db.commit()
    return jsonify({"bot": bot.name, "accepts_challenges": bot.accepts_challenges})

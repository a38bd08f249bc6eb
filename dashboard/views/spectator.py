"""The spectator's page parts: the API page (/api/), and the charts and lists the match,
bot and leaderboard pages draw through template globals (so those pages' views stay as
they are)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template
from markupsafe import Markup
from sqlalchemy import select

from arena.errors import ArenaError
from arena.queries import replays, spectator
from arena.queries.live import running_match
from arena.queries.matches import deal_finished
from arena.store.models import Bot, Match, Tournament
from dashboard import charts_spectator
from dashboard.db import session
from dashboard.views.common import db_url

bp = Blueprint("spectator", __name__)


@bp.app_template_global()
def match_chips_chart(match_id: int) -> Markup:
    """Chips per seat over the match's hands; empty while the replay may not be shown."""
    db = session()
    try:
        match = replays.get_match(db, match_id)
        hands = replays.load_hands(db, db_url(), match)
    except ArenaError:  # not done, no replay stored, or (elsewhere) its deal still playing
        return Markup("")
    players = [str(p) for p in (hands[0].get("players") or [])] if hands else []
    payoffs = [list((h.get("outcome") or {}).get("payoffs") or [0] * len(players)) for h in hands]
    return charts_spectator.match_chips_chart(players, payoffs)


@bp.app_template_global()
def match_in_play(match_id: int) -> dict[str, Any] | None:
    """Hands played so far and the running score of a match being played, else None."""
    return running_match(session(), match_id)


@bp.app_template_global()
def bot_distributions(name: str) -> Markup:
    scores, times = spectator.bot_samples(session(), name)
    return charts_spectator.bot_distributions(scores, times)


@bp.app_template_global()
def bot_recent_matches(name: str) -> list[dict[str, Any]]:
    db = session()
    bot_id = db.scalar(select(Bot.id).where(Bot.name == name))
    return [] if bot_id is None else spectator.recent_matches(db, bot_id)


@bp.app_template_global()
def ratings_over_time_chart() -> Markup:
    return charts_spectator.ratings_chart(spectator.ratings_over_time(session(), db_url()))


@bp.get("/api/")
def api_page() -> str:
    """What the JSON API offers, with examples that work on this arena."""
    db = session()
    examples = {
        "tournament": db.scalar(select(Tournament.id).order_by(Tournament.id.desc()).limit(1)),
        # A match whose whole deal is done: its replay is public under any gate.
        "match": db.scalar(select(Match.id).where(deal_finished()).order_by(Match.id.desc()).limit(1)),
        "bot": db.scalar(select(Bot.name).order_by(Bot.id).limit(1)),
    }
    return render_template("api.html", ex=examples)

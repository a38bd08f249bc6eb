"""The spectator's part of the JSON API (/api/v1): a replay's steps as the engine computed
them, a tournament's live state, the arena's latest finished deals, and exports of hands as
``tonk-hand/1`` JSON lines (arena/queries/export.py; finished deals only)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from typing import Any

from flask import Blueprint, Response, get_template_attribute, jsonify, request

from arena.queries import export, replays
from arena.queries.cache import cached
from arena.queries.live import now_showing, running_matches
from arena.queries.replay_steps import match_steps
from arena.queries.tournaments import tournament_detail
from arena.store.db import session_scope
from dashboard import charts
from dashboard.db import session
from dashboard.errors import InvalidParameterError
from dashboard.params import choice_arg
from dashboard.views.common import db_url, tournament_timing
from sdk.bot import BOT_NAME_RE

bp = Blueprint("api_spectator", __name__, url_prefix="/api/v1")


@bp.get("/matches/<id:match_id>/steps")
def get_steps(match_id: int) -> Response:
    db = session()
    match = replays.get_match(db, match_id)
    hands = replays.load_hands(db, db_url(), match)  # refuses an unfinished match
    # A done match's hands never change, so neither do its steps: they are kept serialized,
    # and gzipped too (steps repeat the table at every step: 6x the replay's JSON, 10x less
    # compressed), so a long match's replay loads quickly on a slow line.
    def encode() -> tuple[bytes, bytes]:
        body = json.dumps({"match": match_id, "hands_in_match": match.hands, "hands": match_steps(hands)},
                          separators=(",", ":")).encode()
        return body, gzip.compress(body, 6)

    body, packed = cached(("steps", db_url(), match_id), "done", encode)
    response = Response(mimetype="application/json")
    response.headers["Vary"] = "Accept-Encoding"
    if request.accept_encodings.quality("gzip") > 0:
        response.set_data(packed)
        response.headers["Content-Encoding"] = "gzip"
    else:
        response.set_data(body)
    return response


@bp.get("/tournaments/<id:tournament_id>/live")
def get_live(tournament_id: int) -> Response:
    """What changes while a tournament plays: progress, timing, running matches, the latest
    finished deals ("now showing"), standings, matrix and tables, a sequential test's state
    (``sprt``, with its LLR history) and, once finished, the headline; with ``html=1`` also those
    parts as the page renders them (the tournament page's poll swaps them in, so page and
    poll never differ)."""
    db = session()
    t = tournament_detail(db, db_url(), tournament_id)
    t.update(timing=tournament_timing(db, tournament_id, t["progress"]),
             running=running_matches(db, tournament_id))
    t.update(now_showing=now_showing(db, tournament_id))
    keys = ("id", "status", "progress", "timing", "running", "now_showing", "standings", "matrix", "tables",
            "headline")
    data: dict[str, Any] = {k: t[k] for k in keys}
    if "sprt" in t:
        data["sprt"] = t["sprt"]
    if choice_arg(request.args, "html", ("0", "1")) == "1":
        chart = charts.sprt_chart(t["sprt"]) if "sprt" in t else None
        data["html"] = {
            # The headline once finished and a sequential test's state and chart: a page left
            # open needs no reload to see either.
            "result": str(macro("result")(t)),
            "sequential": str(macro("sequential")(t, chart)),
            "timing": str(macro("timing")(t["timing"])),
            "running": str(macro("running")(t["running"], t["now_showing"])),
            "now_showing": str(macro("now_showing", "_now_showing.html")(t["now_showing"])),
            **{part: str(macro(part)(t)) for part in ("standings", "matrix", "tables")},
        }
    return jsonify({"live": data})


@bp.get("/now-showing")
def get_now_showing() -> Response:
    """The arena's latest finished deals (the home page's "now showing"); with ``html=1``
    also as the page renders them, for its poll (static/js/showing.js)."""
    deals = now_showing(session())
    data: dict[str, Any] = {"now_showing": deals}
    if choice_arg(request.args, "html", ("0", "1")) == "1":
        showing = macro("now_showing", "_now_showing.html")
        data["html"] = {"now_showing": str(showing(deals, with_tournament=True))}
    return jsonify(data)


def macro(name: str, template: str = "_live.html") -> Callable[..., Any]:
    """A macro of templates/_live.html (or ``template``), the page's parts that change as
    matches finish."""
    found: Callable[..., Any] = get_template_attribute(template, name)
    return found


def _export(filename: str, tournament_id: int | None = None, bot_name: str | None = None) -> Response:
    """JSON lines streamed from a session of their own (it outlives this request's), one
    match at a time: an export of any size is never loaded whole."""
    url = db_url()
    bot_id = export.resolve(session(), tournament_id=tournament_id, bot_name=bot_name)  # 404s first

    def lines() -> Iterator[str]:
        with session_scope(url) as db:
            yield from export.hand_lines(db, tournament_id=tournament_id, bot_id=bot_id)

    response = Response(lines(), mimetype="application/x-ndjson")
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@bp.get("/tournaments/<id:tournament_id>/hands")
def export_tournament(tournament_id: int) -> Response:
    return _export(f"tournament-{tournament_id}-hands.jsonl", tournament_id=tournament_id)


@bp.get("/bots/<name>/hands")
def export_bot(name: str) -> Response:
    if not BOT_NAME_RE.fullmatch(name):
        raise InvalidParameterError(f"{name[:80]!r} is not a valid bot name")
    return _export(f"bot-{name}-hands.jsonl", bot_name=name)

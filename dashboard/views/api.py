"""The JSON API, /api/v1: everything the pages show, plus bot submission and operator
actions. Every failure answers ``{"error": {"code", "message"}}`` with its status."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for
from sqlalchemy import select

from arena.bots.owners import authenticate, parse_bearer, require_operator
from arena.queries import replays
from arena.queries.bots import bot_detail, bot_list
from arena.queries.leaderboard import leaderboard_page
from arena.queries.matches import match_detail, match_list
from arena.queries.tournaments import STATUSES as TOURNAMENT_STATUSES
from arena.queries.tournaments import progress, tournament_detail, tournament_list
from arena.store.models import Owner
from dashboard import checks, operations, ratelimit
from dashboard.db import session
from dashboard.errors import InvalidParameterError, MalformedJSONError
from dashboard.params import MAX_PER_PAGE, choice_arg, paging, search_arg
from dashboard.views.bots import with_outage
from dashboard.views.common import db_url, match_filter, private_bot, settings
from sdk.bot import BOT_NAME_RE
from sdk.referee import plain_record

bp = Blueprint("api", __name__, url_prefix="/api/v1")


# --- reading ---------------------------------------------------------------------------


@bp.get("/")
def index() -> Response:
    return jsonify({
        "version": "v1",
        "endpoints": [
            "GET /api/v1/leaderboard?q=&page=&per_page=",
            "GET /api/v1/people?q=&page=&per_page=",
            "GET /api/v1/tournaments?status=&page=&per_page=",
            "GET /api/v1/tournaments/<id>",
            "GET /api/v1/tournaments/<id>/progress",
            "GET /api/v1/tournaments/<id>/live?html=",
            "GET /api/v1/tournaments/<id>/hands",
            "GET /api/v1/now-showing?html=",
            "GET /api/v1/matches?bot=&tournament=&status=&page=&per_page=",
            "GET /api/v1/matches/<id>",
            "GET /api/v1/matches/<id>/replay",
            "GET /api/v1/matches/<id>/steps",
            "GET /api/v1/matches/<id>/hands/<hand>",
            "GET /api/v1/matches/<id>/hands/<hand>/decisions/<decision>",
            "GET /api/v1/bots",
            "GET /api/v1/bots/<name>",
            "GET /api/v1/bots/<name>/hands",
            "POST /api/v1/claims",
            "POST /api/v1/bots",
            "PUT /api/v1/bots/<name>",
            "DELETE /api/v1/bots/<name>",
            "POST /api/v1/bots/<name>/upload",
            "PUT /api/v1/bots/<name>/upload",
            "GET /api/v1/bots/<name>/build",
            "GET /api/v1/builds/<id>",
            "GET /api/v1/bots/<name>/logs?match=",
            "POST /api/v1/tournaments",
            "POST /api/v1/tournaments/<id>/pause|resume|run",
            "POST /api/v1/sprt",
            "POST /api/v1/sprt/<id>/stop",
            "POST /api/v1/challenges",
            "GET /api/v1/challenges?bot=",
            "PUT /api/v1/bots/<name>/challenges",
            "POST /api/v1/owners",
            "POST /api/v1/owners/me/token",
            "GET /api/v1/invites",
            "POST /api/v1/invites",
            "DELETE /api/v1/invites/<id>",
            "GET /api/v1/ladders",
            "GET /api/v1/ladders/<id>?q=&page=&per_page=",
            "GET /api/v1/ladders/<id>/live?html=&q=&page=&per_page=",
            "POST /api/v1/ladders",
            "POST /api/v1/ladders/<id>/pause|resume",
        ],
        # Where bots that connect out (`tonk serve --connect`) find the gateway.
        "link": {"address": _link_address(), "protocol": "tonk.v1.BotLinkService"},
    })


def _link_address() -> str | None:
    configured = current_app.config.get("LINK_ADDRESS") or settings().gateway_public
    if configured:
        return str(configured)
    if not settings().gateway_port:
        return None
    host = request.host.rsplit(":", 1)[0] if not request.host.endswith("]") else request.host
    return f"{host}:{settings().gateway_port}"


#: Leaderboard rows an API answer holds unless ``per_page`` says fewer: a page, as the site's.
LEADERBOARD_ROWS = MAX_PER_PAGE


@bp.get("/leaderboard")
def get_leaderboard() -> Response:
    """A page of the leaderboard: ``leaderboard`` (its rows, as before) and where it is."""
    where = paging(request.args, LEADERBOARD_ROWS)
    page = leaderboard_page(session(), db_url(), where, search_arg(request.args))
    return jsonify({"leaderboard": page.pop("rows"), **page})


@bp.get("/tournaments")
def get_tournaments() -> Response:
    status = choice_arg(request.args, "status", TOURNAMENT_STATUSES)
    return jsonify(tournament_list(session(), status, paging(request.args)))


@bp.get("/tournaments/<id:tournament_id>")
def get_tournament(tournament_id: int) -> Response:
    return jsonify({"tournament": tournament_detail(session(), db_url(), tournament_id)})


@bp.get("/tournaments/<id:tournament_id>/progress")
def get_progress(tournament_id: int) -> Response:
    return jsonify({"progress": progress(session(), tournament_id)})


@bp.get("/matches")
def get_matches() -> Response:
    db = session()
    return jsonify(match_list(db, db_url(), match_filter(db, request.args), paging(request.args)))


@bp.get("/matches/<id:match_id>")
def get_match_detail(match_id: int) -> Response:
    return jsonify({"match": match_detail(session(), match_id)})


@bp.get("/matches/<id:match_id>/replay")
def get_replay(match_id: int) -> Response:
    db = session()
    match = replays.get_match(db, match_id)
    hands = replays.load_hands(db, db_url(), match)
    return jsonify({"match": match_id, "hands_in_match": match.hands, "hands": hands})


def _download(data: dict[str, Any], filename: str) -> Response:
    response = current_app.response_class(
        json.dumps(data, indent=1) + "\n", mimetype="application/json"
    )
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@bp.get("/matches/<id:match_id>/hands/<index:hand>")
def get_hand_record(match_id: int, hand: int) -> Response:
    db = session()
    match = replays.get_match(db, match_id)
    log = replays.hand_log(replays.load_hands(db, db_url(), match), match, hand)
    return _download(plain_record(log), f"match-{match_id}-hand-{hand}.json")


@bp.get("/matches/<id:match_id>/hands/<index:hand>/decisions/<index:decision>")
def get_decision(match_id: int, hand: int, decision: int) -> Response:
    db = session()
    match = replays.get_match(db, match_id)
    hands = replays.load_hands(db, db_url(), match)
    label, config = replays.referee_settings(db, match)
    data = replays.decision_request(hands, match, hand, decision, label, config)
    return _download(data, f"match-{match_id}-hand-{hand}-decision-{decision}.json")


@bp.get("/bots")
def get_bots() -> Response:
    return jsonify({"bots": bot_list(session(), db_url())})


def _bot_name(name: str) -> str:
    if not BOT_NAME_RE.fullmatch(name):
        raise InvalidParameterError(f"{name[:80]!r} is not a valid bot name")
    return name


@bp.get("/bots/<name>")
def get_bot(name: str) -> Response:
    # The address only with its owner's or an operator's token.
    detail = private_bot(session(), bot_detail(session(), db_url(), _bot_name(name)))
    return jsonify({"bot": with_outage(session(), detail)})


# --- writing ---------------------------------------------------------------------------


def _owner() -> Owner:
    return authenticate(session(), parse_bearer(request.headers.get("Authorization")), settings())


def _body() -> dict[str, Any]:
    raw = request.get_data(cache=True)  # reading enforces MAX_CONTENT_LENGTH (413)
    if not raw.strip():
        raise MalformedJSONError("the request body is empty; send a JSON object")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedJSONError(f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise MalformedJSONError("the request body is nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidParameterError("the request body must be a JSON object")
    return data


def _text_field(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(f"'{key}' is required and must be a non-empty string")
    return value.strip()


def _checks() -> dict[str, Any]:
    return {
        "check": bool(current_app.config.get("BOT_CHECKS", True)),
        "checker": current_app.config.get("BOT_CHECKER"),
    }


def _check_slot(owner: Owner) -> AbstractContextManager[None]:
    """A slot of the bot-check gate (dashboard.checks), when checks run at all."""
    if not current_app.config.get("BOT_CHECKS", True):
        return nullcontext()
    # A check takes seconds: end the request's transaction before it, so nothing is locked
    # meanwhile (SQLite has one writer) and the lease can name an owner the operator token
    # has just created (on its first use).
    session().commit()
    return checks.gate().admit(owner.id)


@bp.post("/claims")
def post_claim() -> Response:
    """The caller's claim code for an address (arena/bots/claims.py): the bot there returns it
    in GetInfo to show that its registrant runs it."""
    from arena.bots.claims import claim_for

    owner = _owner()
    address = _text_field(_body(), "address")
    return jsonify({"claim": claim_for(session(), owner, address, settings())})


@bp.post("/bots")
def post_bot() -> tuple[Response, int, dict[str, str]]:
    from arena.bots import registry

    owner = _owner()
    body = _body()
    name, address = _text_field(body, "name"), _text_field(body, "address")
    db = session()
    with _check_slot(owner):  # committed before the slot is given back (SQLite: one writer)
        bot = registry.register_bot(db, owner, name, address, settings=settings(), **_checks())
        db.commit()
    location = url_for("api.get_bot", name=bot.name)
    return jsonify({"bot": registry.bot_to_json(bot)}), 201, {"Location": location}


@bp.put("/bots/<name>")
def put_bot(name: str) -> Response:
    from arena.bots import registry

    owner = _owner()
    address = _text_field(_body(), "address")
    db = session()
    before = registry.version_number(db, _bot_name(name))
    with _check_slot(owner):
        bot = registry.update_bot(db, owner, _bot_name(name), address, settings=settings(), **_checks())
        db.commit()
    return jsonify({"bot": registry.bot_to_json(bot, before=before)})


@bp.delete("/bots/<name>")
def delete_bot(name: str) -> Response:
    from arena.bots import registry

    owner = _owner()
    db = session()
    bot = registry.retire_bot(db, owner, _bot_name(name))
    db.commit()
    return jsonify({"bot": registry.bot_to_json(bot)})


@bp.post("/bots/<name>/restore")
def restore_bot(name: str) -> Response:
    """Bring a retired bot back (a dialled one is checked again at its address first)."""
    from arena.bots import registry

    owner = _owner()
    db = session()
    checked = registry.restore_checks(registry.get_bot(db, _bot_name(name)))  # a slot first, if so
    with _check_slot(owner) if checked else nullcontext():
        bot = registry.restore_bot(db, owner, _bot_name(name), settings=settings(), **_checks())
        db.commit()
    return jsonify({"bot": registry.bot_to_json(bot)})


@bp.post("/tournaments")
def post_tournament() -> tuple[Response, int, dict[str, str]]:
    require_operator(_owner())
    body = _body()
    db = session()
    created = operations.create(db, body, settings())
    db.commit()
    location = url_for("api.get_tournament", tournament_id=created["id"])
    return jsonify({"tournament": created}), 201, {"Location": location}


@bp.post("/tournaments/<id:tournament_id>/<any(pause, resume, run):action>")
def tournament_action(tournament_id: int, action: str) -> Response:
    require_operator(_owner())
    db = session()
    if action == "pause":
        result = operations.pause(db, tournament_id)
    else:
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        result = operations.run(app, db, tournament_id, settings(), resume=action == "resume")
    db.commit()
    return jsonify({"tournament": result})


@bp.post("/sprt")
def post_sprt() -> tuple[Response, int, dict[str, str]]:
    """An owner's sequential test of two of their own bots, started at once: ``{"new": V2,
    "old": V1, "elo0"?, "elo1"?, "alpha"?, "beta"?, "batch"?, "hands_per_match"?,
    "max_pairs"?}`` within the operator's bounds (arena/tournaments/owner_sprt.py)."""
    owner = _owner()
    body = _body()
    db = session()
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    tid = operations.start_sprt(app, db, owner, body, settings())
    db.commit()
    return _sprt_answer(tid), 201, {"Location": url_for("api.get_tournament", tournament_id=tid)}


@bp.post("/sprt/<id:tournament_id>/stop")
def stop_sprt(tournament_id: int) -> Response:
    """Stop a test (its owner's, or an operator's): no more pairs start; it stays paused."""
    from arena.tournaments.owner_sprt import stop_sprt as stop

    owner = _owner()
    db = session()
    stop(db, owner, tournament_id)
    db.commit()
    return _sprt_answer(tournament_id)


def _sprt_answer(tournament_id: int) -> Response:
    test = operations.sprt_summary(session(), tournament_id)
    test["url"] = url_for("tournaments.detail", tournament_id=tournament_id, _external=True)
    return jsonify({"tournament": test})


# --- owners and invites ------------------------------------------------------------------


def _owner_json(owner: Owner) -> dict[str, Any]:
    created = owner.created_at.isoformat() if owner.created_at else None
    return {"name": owner.name, "operator": owner.is_operator, "created_at": created}


@bp.post("/owners")
def post_owner() -> tuple[Response, int]:
    """Redeem an invite: ``{"invite": CODE, "name": NAME}`` -> the new owner and its token.
    No token: the code is the credential, so attempts are bounded per client address."""
    from arena.bots.invites import redeem_invite

    ratelimit.limit_joins()
    body = _body()
    code, name = body.get("invite"), body.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InvalidParameterError(
            "'name' is required: your owner name, 2 to 64 letters, digits, '_', '.' or '-'"
        )
    db = session()
    owner, token = redeem_invite(db, code, name.strip())
    db.commit()
    return jsonify({"owner": _owner_json(owner), "token": token}), 201


@bp.post("/owners/me/token")
def post_own_token() -> Response:
    """The caller's new token; the one it authenticated with stops working."""
    from arena.bots.owners import rotate_token

    owner = _owner()
    db = session()
    token = rotate_token(db, owner)
    db.commit()
    return jsonify({"owner": _owner_json(owner), "token": token})


def _invites_json(invites: list[Any]) -> list[dict[str, Any]]:
    from arena.bots.invites import invite_to_json, redemptions

    db = session()
    names = dict(db.execute(select(Owner.id, Owner.name)).all()) if invites else {}
    joined = redemptions(db)
    return [{**invite_to_json(i, names.get(i.created_by)), "joined": joined.get(i.id, 0)} for i in invites]


@bp.get("/invites")
def get_invites() -> Response:
    from arena.bots.invites import list_invites

    require_operator(_owner())
    return jsonify({"invites": _invites_json(list_invites(session()))})


@bp.post("/invites")
def post_invite() -> tuple[Response, int]:
    """A new invite code (operators): ``{"uses": N, "expires": "7d", "note": ...}``, all optional.
    The answer carries the code, shown this once."""
    from arena.bots.invites import create_invite

    owner = require_operator(_owner())
    body = _body() if request.get_data(cache=True).strip() else {}
    db = session()
    invite, code = create_invite(
        db, owner, uses=body.get("uses", 1), expires=body.get("expires"), note=body.get("note", "")
    )
    db.commit()
    return jsonify({"invite": {**_invites_json([invite])[0], "code": code}}), 201


@bp.delete("/invites/<id:invite_id>")
def delete_invite(invite_id: int) -> Response:
    from arena.bots.invites import revoke_invite

    require_operator(_owner())
    db = session()
    invite = revoke_invite(db, invite_id)
    db.commit()
    return jsonify({"invite": _invites_json([invite])[0]})

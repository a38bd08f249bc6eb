"""A page of your own: sign in (with an owner token, or from an invite), see your bots, their
versions, builds and logs, your tests and tournaments, and upload a new version, all with
the same checks as the API (dashboard/signin.py keeps the session).

Every refusal re-renders its form with the reason and its status, and changes nothing: the
request's transaction is rolled back. Nothing of another owner's is shown: the lists are the
signed-in owner's, and a bot's build and logs stay on its page for its owner alone.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, redirect, render_template, request, url_for
from sqlalchemy import select
from werkzeug.wrappers import Response

from arena.bots.owners import authenticate
from arena.errors import ArenaError
from arena.queries.bots import bot_list
from arena.queries.people import games_as_player
from arena.store.models import Owner, Tournament
from dashboard import ratelimit, signin
from dashboard.db import session
from dashboard.errors import InvalidParameterError
from dashboard.views.common import db_url, settings
from sdk.bot import BOT_NAME_RE

bp = Blueprint("account", __name__)

UPLOAD_MODES = ("new", "version")


def _private(response: Response | str, status: int = 200) -> Response:
    """A page that names its viewer or shows a secret: never kept by a shared cache."""
    answer = response if isinstance(response, Response) else Response(response, status, mimetype="text/html")
    answer.headers["Cache-Control"] = "no-store"
    return answer


def _field(name: str, what: str) -> str:
    value = request.form.get(name, "")
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(f"{what} is required")
    if len(value) > signin.FIELD_LIMIT:
        raise InvalidParameterError(f"{what} is longer than {signin.FIELD_LIMIT} characters")
    return value.strip()


def _refused(template: str, exc: ArenaError, **context: Any) -> Response:
    session().rollback()
    page = render_template(template, error=exc.message, **context)
    return _private(page, exc.status)


@bp.get("/signin")
def signin_form() -> Response:
    if signin.signed_in(session(), settings()) is not None:
        return _private(redirect(url_for("account.me")))
    return _private(render_template("signin.html", error=None))


@bp.post("/signin")
def signin_post() -> Response:
    try:
        ratelimit.limit_joins()  # a token could be guessed at: bounded per address
        signin.check_csrf()
        owner = authenticate(session(), _field("token", "your owner token"), settings())
        session().commit()  # the operator's owner row is made on its token's first use
    except ArenaError as exc:
        return _refused("signin.html", exc)
    signin.sign_in(owner, settings())
    return _private(redirect(url_for("account.me"), 303))


def _sit_bot() -> str | None:
    """The bot a demo's invite link names (``?bot=``), carried from joining to its "Take a
    seat" form: kept only when it is a bot name (sdk.bot.BOT_NAME_RE), else dropped."""
    raw = request.values.get("bot")
    return raw if isinstance(raw, str) and BOT_NAME_RE.fullmatch(raw) else None


@bp.get("/join")
def join_form() -> Response:
    code = request.args.get("code", "")[: signin.FIELD_LIMIT]
    return _private(render_template("join.html", error=None, code=code, name="", sit=_sit_bot()))


@bp.post("/join")
def join_post() -> Response:
    from arena.bots.invites import redeem_invite

    code = request.form.get("code", "")[: signin.FIELD_LIMIT]
    name = request.form.get("name", "")[: signin.FIELD_LIMIT]
    db = session()
    try:
        ratelimit.limit_joins()
        signin.check_csrf()
        owner, token = redeem_invite(db, _field("code", "the invite code"), _field("name", "an owner name"))
        db.commit()
    except ArenaError as exc:
        return _refused("join.html", exc, code=code, name=name, sit=_sit_bot())
    signin.sign_in(owner, settings())
    # The token is shown this once (the store keeps only its hash): the CLI needs it.
    return _private(render_template("joined.html", owner=owner.name, token=token, sit=_sit_bot()))


@bp.post("/signout")
def signout_post() -> Response:
    try:
        signin.check_csrf()
    except ArenaError as exc:
        return _private(render_template("error.html", status=exc.status, title="Not signed out",
                                        message=exc.message), exc.status)  # fmt: skip
    signin.sign_out()
    return _private(redirect(url_for("leaderboard.index"), 303))


def _owned(owner: Owner) -> dict[str, Any]:
    db = session()
    bots = [bot for bot in bot_list(db, db_url()) if bot["owner"] == owner.name]
    tournaments = db.scalars(
        select(Tournament).where(Tournament.owner_id == owner.id).order_by(Tournament.id.desc()).limit(50)
    ).all()
    return {
        "owner": owner,
        "bots": bots,
        "tournaments": [
            {"id": t.id, "name": t.name, "kind": t.kind, "status": t.status,
             "created_at": t.created_at.isoformat()}
            for t in tournaments
        ],
        "upload_limit": settings().upload_max_bytes,
        "games": games_as_player(db, owner.id),  # my games as a player (issue #39)
    }


@bp.get("/me")
def me() -> Response:
    owner = signin.signed_in(session(), settings())
    if owner is None:
        return _private(redirect(url_for("account.signin_form")))
    return _private(render_template("me.html", error=None, **_owned(owner)))


@bp.post("/me/upload")
def upload_post() -> Response:
    from arena.bots import registry
    from arena.bots.builds import BuildFailedError
    from arena.bots.uploaded import submit_upload
    from dashboard.views.api import _check_slot, _checks

    db = session()
    owner = signin.signed_in(db, settings())
    if owner is None:
        return _private(redirect(url_for("account.signin_form")))
    # The archive limit, not the app's 64 KiB for JSON bodies (werkzeug answers 413 past it).
    request.max_content_length = settings().upload_max_bytes
    try:
        signin.check_csrf()
        name = _field("bot", "the bot's name")
        mode = request.form.get("mode", "")
        if mode not in UPLOAD_MODES:
            raise InvalidParameterError(f"mode must be 'new' or 'version', got {mode[:40]!r}")
        sent = request.files.get("archive")
        archive = sent.read() if sent is not None else b""
        if not archive:
            raise InvalidParameterError("choose the project's .tar.gz to upload")
        update = mode == "version"
        with _check_slot(owner):  # committed before the slot is given back (SQLite: one writer)
            try:
                bot = submit_upload(
                    db, owner, name, archive, settings=settings(), update=update, check=_checks()["check"]
                )
            except BuildFailedError:
                db.commit()  # the failed build's log stays readable on the bot's page
                raise
            db.commit()
    except ArenaError as exc:
        return _refused("me.html", exc, **_owned(owner))
    return _private(redirect(url_for("bots.detail", name=registry.bot_to_json(bot)["name"]), 303))


@bp.post("/me/challenge")
def challenge_post() -> Response:
    """A challenge from a bot's page (arena/tournaments/challenges.py), as ``tonk challenge``
    starts one; its live page follows. A refusal is shown with its reason (the error page)."""
    from flask import current_app

    from arena.tournaments.challenges import start_challenge
    from dashboard import operations

    db = session()
    owner = signin.signed_in(db, settings())
    if owner is None:
        return _private(redirect(url_for("account.signin_form")))
    signin.check_csrf()
    deals = request.form.get("deals", "2").strip()
    if not (deals.isascii() and deals.isdigit() and len(deals) < 4):
        raise InvalidParameterError(f"deals must be a whole number, got {deals[:20]!r}")
    body = {"bot": _field("bot", "your bot"), "opponent": _field("opponent", "the opponent"),
            "deals": int(deals)}  # fmt: skip
    tournament = start_challenge(db, owner, body, settings())
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    operations.run(app, db, tournament.id, settings(), resume=False)
    db.commit()
    return _private(redirect(url_for("tournaments.detail", tournament_id=tournament.id), 303))


"""The JSON API for uploaded bots (/api/v1): send a project, read its build, read what it
printed in its matches. Builds and logs are their owner's (and operators'): anyone else gets
the same 404 as for a bot with none, so nothing tells them what another owner uploaded.

``POST /api/v1/bots/<name>/upload`` (a new bot) and ``PUT /api/v1/bots/<name>/upload`` (a new
version) take the project's .tar.gz as the raw body (``Content-Type: application/gzip``),
as ``tonk submit --upload`` sends it; docs/bot-author-guide.md, "Uploading your bot".
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request, url_for

from arena.bots.builds import BuildFailedError, build_to_json
from arena.bots.uploaded import bot_build, build_for, match_logs, submit_upload
from dashboard.db import session
from dashboard.errors import InvalidParameterError
from dashboard.views.api import _bot_name, _check_slot, _checks, _owner
from dashboard.views.common import settings, viewer

bp = Blueprint("api_uploads", __name__, url_prefix="/api/v1")


def _archive() -> bytes:
    # The archive limit, not the app's 64 KiB for JSON bodies (werkzeug answers 413 past it).
    request.max_content_length = settings().upload_max_bytes
    data = request.get_data(cache=False)
    if not data:
        raise InvalidParameterError("the request body is empty; send the project as a .tar.gz")
    return data


def _upload(name: str, *, update: bool) -> tuple[Response, int]:
    from arena.bots import registry

    owner = _owner()
    name = _bot_name(name)
    archive = _archive()
    db = session()
    before = registry.version_number(db, name) if update else None
    with _check_slot(owner):  # committed before the slot is given back (SQLite: one writer)
        try:
            bot = submit_upload(
                db, owner, name, archive, settings=settings(), update=update, check=_checks()["check"]
            )
        except BuildFailedError:
            db.commit()  # the failed build's log stays readable at /api/v1/builds/ID
            raise
        db.commit()
    return jsonify({"bot": registry.bot_to_json(bot, before=before)}), 200 if update else 201


@bp.post("/bots/<name>/upload")
def post_upload(name: str) -> tuple[Response, int, dict[str, str]]:
    answer, status = _upload(name, update=False)
    return answer, status, {"Location": url_for("api.get_bot", name=name)}


@bp.put("/bots/<name>/upload")
def put_upload(name: str) -> tuple[Response, int]:
    return _upload(name, update=True)


@bp.get("/bots/<name>/build")
def get_bot_build(name: str) -> Response:
    db = session()
    return jsonify({"build": build_to_json(bot_build(db, viewer(db), _bot_name(name)))})


@bp.get("/builds/<id:build_id>")
def get_build(build_id: int) -> Response:
    db = session()
    return jsonify({"build": build_to_json(build_for(db, viewer(db), build_id))})


@bp.get("/bots/<name>/logs")
def get_logs(name: str) -> Response:
    raw = request.args.get("match", "").strip()
    if raw and not (raw.isascii() and raw.isdigit() and len(raw) < 12):
        raise InvalidParameterError(f"match must be a match id, got {raw[:40]!r}")
    db = session()
    logs = match_logs(db, viewer(db), _bot_name(name), match_id=int(raw) if raw else None)
    return jsonify({"logs": logs})

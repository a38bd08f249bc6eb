"""A person's table (issue #39): take a seat against a bot, and play it from the page.

``POST /bots/<name>/sit`` (signed in, the session's CSRF token in the form; fields ``seats``
2|3, ``with``, ``hands``) makes the table (arena/tournaments/people.py), queues its match
and answers 303 to ``/tables/<id>``. The table's own routes answer only the person sitting
there (anyone else: 404, as for a table that does not exist):

- ``GET /tables/<id>``: the page (``table.html``, its script dashboard/static/js/table.js);
- ``GET /tables/<id>/view.json``: the seat's view now; ``?after=<version>`` waits up to
  :data:`LONG_POLL_S` for a newer one (long polling);
- ``POST /tables/<id>/act`` ``{"version", "action"}`` with the ``X-CSRF-Token`` header: the
  person's move, accepted only for the view they saw (409 otherwise, nothing changed);
- ``GET /tables/<id>/events``: the views as server-sent events (``id:`` the version),
  resumed after ``Last-Event-ID``, with ``: ping`` comments, ended after :data:`STREAM_S`
  (the browser's EventSource reconnects and resumes).

Every view is built by the worker from what the seat was told (arena/play/seat_view.py); the
web process only passes it on, adding the clock's time left and the replay's address.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from sqlalchemy import select
from werkzeug.wrappers import Response as BaseResponse

from arena.errors import NotFoundError
from arena.play.seat_channel import ActionRefusedError, SeatChannel, open_channel, wait_for
from arena.play.seat_view import starting_view
from arena.store.models import Bot, Match, MatchSeat, Owner, Tournament
from arena.tournaments.people import start_table, table_of
from arena.tournaments.settings import TournamentSettings
from dashboard import operations, signin
from dashboard.db import session
from dashboard.errors import answers_json, json_error
from dashboard.ratelimit import RateLimiter, TooManyAttemptsError
from dashboard.views.common import settings

bp = Blueprint("tables", __name__)

#: Long polling waits at most this long for a newer view (under a proxy's usual 30 s).
LONG_POLL_S: Final = 25.0
#: An event stream ends after this long; the browser reconnects with Last-Event-ID.
STREAM_S: Final = 120.0
#: A comment line this often keeps proxies from closing a quiet stream.
PING_S: Final = 15.0
#: Moves one person may send: a flood past this is refused (429) and changes nothing.
ACT_LIMIT: Final = (20, 5.0)
_LIMITER: Final = "tonk_table_limiter"
#: Waits (long polls, event streams) one person may hold open at once in this process: each
#: holds a server thread, so one person must not hold them all (429 past it).
MAX_WAITS: Final = 4
_WAITS: Final = "tonk_table_waits"
_waits_lock = threading.Lock()
ACTION_LIMIT: Final = 64


def _person() -> Owner | None:
    return signin.signed_in(session(), settings())


@bp.post("/bots/<name>/sit")
def sit(name: str) -> BaseResponse:
    owner = _person()
    if owner is None:
        return redirect(url_for("account.signin_form"))
    signin.check_csrf()
    db = session()
    table = start_table(db, owner, name, request.form, settings())
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    operations.run(app, db, table.tournament_id, settings(), resume=False)
    db.commit()
    return redirect(url_for("tables.page", public_id=table.public_id), 303)


@dataclass(frozen=True, slots=True)
class Seat:
    """The signed-in person's seat at one table, read while the request is current."""

    match_id: int
    seat: int
    channel: SeatChannel
    owner_id: int


def _seat(public_id: str) -> Seat | None:
    owner = _person()
    if owner is None:
        return None
    db = session()
    row = table_of(db, owner.id, public_id)
    if row is None:
        return None
    params = db.scalar(
        select(Tournament.params)
        .join(Match, Match.tournament_id == Tournament.id)
        .where(Match.id == row.match_id)
    ) or {}
    config = settings()
    channel = open_channel(
        str(params.get("channel", "store")), config.database_url, row.match_id,
        redis_url=config.redis_url, queue_name=config.queue_name,
    )  # fmt: skip
    # The request's connection goes back to the pool before the channel takes its own (a store
    # channel's every call is a session of its own): requests that each held one while waiting
    # for a second emptied the pool, 16 of one person's at once, and waited out its 30 s.
    db.close()
    return Seat(row.match_id, row.seat, channel, row.owner_id)


def _starting(row: Seat) -> dict[str, Any]:
    """The view before the worker has taken the match up (the worker's own first view, as
    arena/play/seat_view.py makes it): who sits where, nothing dealt."""
    db = session()
    names = db.scalars(
        select(Bot.name)
        .join(MatchSeat, MatchSeat.bot_id == Bot.id)
        .where(MatchSeat.match_id == row.match_id)
        .order_by(MatchSeat.seat)
    ).all()
    hands, config = db.execute(
        select(Match.hands, Tournament.config)
        .join(Tournament, Tournament.id == Match.tournament_id)
        .where(Match.id == row.match_id)
    ).one()
    max_faults = TournamentSettings.from_column(config).referee().max_faults
    return {**starting_view(row.seat, names, hands, max_faults), "version": 0}


def _finish(view: dict[str, Any] | None, replay_url: str, starting: dict[str, Any]) -> dict[str, Any]:
    """The view as served now: the clock's time left, and the replay's address at the end
    (``replay_url``, made while the request was current: a stream's later events have none)."""
    if view is None:
        return starting
    clock = view.get("clock")
    if isinstance(clock, dict) and "ends_at" in clock:
        left = int(clock["ends_at"]) - int(time.time() * 1000)
        view = {**view, "clock": {**clock, "remaining_ms": max(0, min(left, int(clock["total_ms"])))}}
    if view.get("status") == "match_over":
        view = {**view, "replay_url": replay_url}
    return view


def _hold_wait(owner_id: int) -> None:
    """Count one more open wait of ``owner_id``, or refuse it (not counted)."""
    app = current_app
    most = int(app.config.get("TABLE_MAX_WAITS", MAX_WAITS))
    with _waits_lock:
        open_waits: dict[int, int] = app.extensions.setdefault(_WAITS, {})
        if open_waits.get(owner_id, 0) >= most:
            raise TooManyAttemptsError(
                f"you have {most} views open and waiting already: close a tab or wait", 1
            )
        open_waits[owner_id] = open_waits.get(owner_id, 0) + 1


def _drop_wait(app: Flask, owner_id: int) -> None:
    with _waits_lock:
        open_waits: dict[int, int] = app.extensions.setdefault(_WAITS, {})
        left = open_waits.get(owner_id, 0) - 1
        if left > 0:
            open_waits[owner_id] = left
        else:
            open_waits.pop(owner_id, None)


def _refused_wait(exc: TooManyAttemptsError) -> Response:
    response = json_error(429, exc.message)
    response.headers["Retry-After"] = str(exc.retry_after)
    return response


def _after(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:  # "²" is a digit to isdigit, not to int
        return -1  # unreadable: as if none was seen
    return int(raw)


@bp.get("/tables/<public_id>")
def page(public_id: str) -> BaseResponse | str:
    if _person() is None:
        return redirect(url_for("account.signin_form"))
    row = _seat(public_id)
    if row is None:
        raise NotFoundError("there is no table of yours here")
    bots = session().scalars(
        select(Bot.name).join(MatchSeat, MatchSeat.bot_id == Bot.id)
        .where(MatchSeat.match_id == row.match_id, MatchSeat.seat != row.seat).order_by(MatchSeat.seat)
    ).all()  # fmt: skip
    page: str = render_template("table.html", table_id=public_id, bot=" and ".join(bots) or None)
    return page


@bp.get("/tables/<public_id>/view.json")
@answers_json
def view_json(public_id: str) -> Response:
    row = _seat(public_id)
    if row is None:
        return json_error(404, "there is no table of yours here")
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    after = _after(request.args.get("after"))
    read = row.channel.read
    wait_s = float(app.config.get("TABLE_POLL_S", LONG_POLL_S))
    view = read()
    # Only a table the worker has not taken up yet needs its starting view (a published view
    # is never withdrawn), so polls past the start read the channel alone.
    starting = _starting(row) if view is None else {}
    replay_url = url_for("matches.detail", match_id=row.match_id)
    session().close()  # the request's connection goes back to the pool while it waits
    if after is not None:
        try:
            _hold_wait(row.owner_id)
        except TooManyAttemptsError as exc:
            return _refused_wait(exc)
        try:
            view = wait_for(read, after, wait_s)
        finally:
            _drop_wait(app, row.owner_id)
    response = jsonify(_finish(view, replay_url, starting))
    response.headers["Cache-Control"] = "no-store"
    return response


def _limiter() -> RateLimiter:
    app = current_app
    limiter: RateLimiter | None = app.extensions.get(_LIMITER)
    if limiter is None:
        attempts, window_s = app.config.get("TABLE_ACT_LIMIT", ACT_LIMIT)
        limiter = app.extensions.setdefault(_LIMITER, RateLimiter(int(attempts), float(window_s)))
    return limiter


@bp.post("/tables/<public_id>/act")
@answers_json
def act(public_id: str) -> Response:
    owner = _person()
    if owner is None:
        return json_error(404, "there is no table of yours here")
    if not signin.csrf_ok(request.headers.get("X-CSRF-Token", "")):
        stale = "this page's session token is missing or stale: reload the page"
        return json_error(403, stale, signin.CsrfError.code)
    try:
        _limiter().hit(f"owner:{owner.id}")
    except TooManyAttemptsError as exc:
        response = json_error(429, exc.message)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    row = _seat(public_id)
    if row is None:
        return json_error(404, "there is no table of yours here")
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # a deeply nested body: malformed, as any other
        body = None
    version = body.get("version") if isinstance(body, dict) else None
    action = body.get("action") if isinstance(body, dict) else None
    if type(version) is not int or not isinstance(action, str) or not 0 < len(action) <= ACTION_LIMIT:
        wanted = 'send {"version": <the view\'s version>, "action": "<a legal action\'s id>"}'
        return json_error(400, wanted, "malformed_move")
    try:
        view = row.channel.send(version, action)
    except ActionRefusedError as exc:
        return json_error(409, exc.message, exc.code)
    return jsonify(_finish(view, url_for("matches.detail", match_id=row.match_id), {}))


@bp.get("/tables/<public_id>/events")
@answers_json
def events(public_id: str) -> Response:
    row = _seat(public_id)
    if row is None:
        return json_error(404, "there is no table of yours here")
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    starting = _starting(row) if row.channel.read() is None else {}
    replay_url = url_for("matches.detail", match_id=row.match_id)
    session().close()  # the stream reads through the channel, not the request's session
    after = _after(request.headers.get("Last-Event-ID") or request.args.get("last_id"))
    stream_s = float(app.config.get("TABLE_STREAM_S", STREAM_S))
    ping_s = float(app.config.get("TABLE_PING_S", PING_S))
    try:  # taken now, while a status can still refuse it; given back once, however it ends
        _hold_wait(row.owner_id)
    except TooManyAttemptsError as exc:
        return _refused_wait(exc)
    held = [row.owner_id]  # popped once: list.pop is atomic, whichever of the two ends first

    def give_back() -> None:
        try:
            owner_id = held.pop()
        except IndexError:  # given back already
            return
        _drop_wait(app, owner_id)

    def stream() -> Iterator[str]:
        try:
            yield from _views(after, stream_s, ping_s)
        finally:
            give_back()

    def _views(after: int | None, stream_s: float, ping_s: float) -> Iterator[str]:
        seen = -1 if after is None else after
        ends = time.monotonic() + stream_s
        yield "retry: 1000\n\n"
        while time.monotonic() < ends:
            view = wait_for(row.channel.read, seen, min(ping_s, max(0.0, ends - time.monotonic())))
            version = int(view.get("version", 0)) if view is not None else 0
            if view is None and seen < 0:
                yield _event(0, starting)
                seen = 0
            elif view is not None and version > seen:
                seen = version
                served = _finish(view, replay_url, starting)
                yield _event(version, served)
                if served.get("status") == "match_over":
                    return
            else:
                yield ": ping\n\n"

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    response = Response(stream(), mimetype="text/event-stream", headers=headers)
    response.call_on_close(give_back)  # a stream the server never started
    return response


def _event(version: int, view: dict[str, Any]) -> str:
    return f"id: {version}\nevent: view\ndata: {json.dumps(view, separators=(',', ':'))}\n\n"

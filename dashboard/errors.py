"""Errors: JSON ``{"error": {"code", "message"}}`` for /api routes and for the routes marked
:func:`answers_json` (a person's table: its page's script reads them), an HTML page elsewhere.

Every refusal is an :class:`arena.errors.ArenaError` (it carries its HTTP ``status`` and a
stable ``code``), whether it comes from the registry or from the dashboard's own parameter
checks below, so one handler serves both. Werkzeug's HTTP errors (unknown route, 405, 413)
get the same JSON shape under /api, and anything unexpected is logged and answered with a
JSON 500 rather than an HTML traceback page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, Response, current_app, jsonify, make_response, render_template, request
from werkzeug.exceptions import HTTPException

from arena.errors import ArenaError, NotFoundError

__all__ = [
    "InvalidParameterError",
    "MalformedJSONError",
    "NotFoundError",
    "answers_json",
    "init_app",
    "json_error",
]

View = TypeVar("View", bound=Callable[..., Any])


class InvalidParameterError(ArenaError):
    """A query parameter, path id or body field that is not what the route accepts."""

    status = 400
    code = "invalid_parameter"


class MalformedJSONError(ArenaError):
    status = 400
    code = "malformed_json"


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


def answers_json(view: View) -> View:
    """Mark a route outside /api whose refusals are JSON too, in the API's shape."""
    view.answers_json = True  # type: ignore[attr-defined]
    return view


def _is_api() -> bool:
    if request.path.startswith("/api/"):
        return True
    view = current_app.view_functions.get(request.endpoint or "")
    return bool(getattr(view, "answers_json", False))


def _json(status: int, code: str, message: str, details: Any = None) -> tuple[Response, int]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return jsonify({"error": error}), status


def json_error(status: int, message: str, code: str | None = None) -> Response:
    """A refusal a view answers itself, in the API's shape (``code``: the status's by default)."""
    response, status = _json(status, code or _HTTP_CODES.get(status, "http_error"), message)
    response.status_code = status
    return response


def _page(status: int, title: str, message: str) -> tuple[str, int]:
    return render_template("error.html", status=status, title=title, message=message), status


def _arena_error(exc: ArenaError) -> tuple[Response | str, int] | Response:
    if _is_api():
        response, status = _json(exc.status, exc.code, exc.message, exc.details)
    else:
        page, status = _page(exc.status, exc.code.replace("_", " ").capitalize(), exc.message)
        response = make_response(page)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:  # 429 and 503 refusals say when to come back
        response.headers["Retry-After"] = str(retry_after)
    response.status_code = status
    return response


def _http_error(exc: HTTPException) -> tuple[Response | str, int] | Any:
    status = exc.code or 500
    if status < 400:  # redirects raised as exceptions (e.g. trailing slash) pass through
        return exc.get_response()
    message = exc.description or exc.name
    if status == 413:
        limit = request.max_content_length
        message = f"the request body is larger than the {limit} bytes this route accepts"
    if _is_api():
        api_code = getattr(exc, "api_code", None) or _HTTP_CODES.get(status, "http_error")
        response, code = _json(status, api_code, message)
        if status == 405 and isinstance(exc.valid_methods, list | set | tuple):  # type: ignore[attr-defined]
            response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))  # type: ignore[attr-defined]
        return response, code
    return _page(status, exc.name, message)


def _unexpected(exc: Exception) -> tuple[Response | str, int]:
    if isinstance(exc, HTTPException):  # pragma: no cover - routed to _http_error
        raise exc
    from flask import current_app

    current_app.logger.exception("unhandled error on %s %s", request.method, request.path)
    if _is_api():
        return _json(500, "internal_error", "the server failed to answer this request; it has been logged")
    return _page(500, "Internal error", "Something went wrong on our side; it has been logged.")


def init_app(app: Flask) -> None:
    app.register_error_handler(ArenaError, _arena_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)

"""The limits the HTTP servers enforce before the app sees a request, and their error answers.

A request line or headers over a limit is answered by the server itself (werkzeug's in
dashboard/server.py, gunicorn's in dashboard/gunicorn_worker.py), so the app's error
handlers (dashboard/errors.py) never see it. Both servers answer such an error under /api
the way the app does, as JSON ``{"error": {"code", "message"}}``, and elsewhere with their
HTML page. The limits are in docs/dashboard.md.
"""

from __future__ import annotations

import http.client
import json
from http import HTTPStatus
from typing import Final
from urllib.parse import urlsplit

#: The most bytes of header lines (names, values, line ends) one request may carry, on top
#: of each server's own per-line and count limits (werkzeug: 64 KiB a line, 100 headers;
#: gunicorn: 8190 bytes a line, 100 headers): 100 lines of 60 KB were 5.7 MB a request.
HEADERS_LIMIT: Final = 64 * 1024

#: How much of a request's start is kept to tell, once it failed, where it was going.
TARGET_PREFIX: Final = 256


def target_of(head: bytes) -> str:
    """The path a request's first line asks for (``""`` if it has none), from as much of
    the line as arrived: ``GET /api/v1/bots?x=... HTTP/1.1`` -> ``/api/v1/bots``."""
    line = head[:TARGET_PREFIX].split(b"\r", 1)[0].split(b"\n", 1)[0]
    parts = line.decode("latin-1").split(" ")
    return path_of(parts[1]) if len(parts) > 1 else ""


def path_of(target: str) -> str:
    """The path of a request target: ``/api/v1/bots?x=1`` or ``http://host/api/v1/bots``
    (the absolute form a proxy may send) -> ``/api/v1/bots``."""
    if target.lower().startswith(("http://", "https://")):
        target = urlsplit(target).path
    return target.split("?", 1)[0]


def is_api(path: str) -> bool:
    return path.startswith("/api/")


def error_code(status: int) -> str:
    """The error's ``code``: its HTTP phrase in snake case (414: ``request_uri_too_long``)."""
    phrase = HTTPStatus(status).phrase.lower()
    return phrase.replace(" ", "_").replace("-", "_")


def error_message(status: int, detail: str = "") -> str:
    """What a client is told: which limit it crossed, in the words of docs/dashboard.md."""
    if status == HTTPStatus.REQUEST_URI_TOO_LONG:
        text = "the request line (method, path and query string) is longer than the server accepts"
    elif status == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
        text = (f"the request's headers are larger than the server accepts ({HEADERS_LIMIT // 1024} "
                "KiB in all, 100 headers, and a limit on each line)")  # fmt: skip
    else:
        text = HTTPStatus(status).phrase.lower()
    detail = detail.strip()[:200]
    return f"{text}: {detail}" if detail else text


def json_error(status: int, detail: str = "") -> bytes:
    """The JSON body of an error the server answers itself (the app's shape)."""
    error = {"code": error_code(status), "message": error_message(status, detail)}
    return json.dumps({"error": error}).encode()


class HeadersTooLargeError(http.client.HTTPException):
    """The request's header lines add up to more than :data:`HEADERS_LIMIT` bytes (an
    ``HTTPException``: what http.server answers with a 431 while it reads headers)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"its headers take more than {HEADERS_LIMIT} bytes (at least {size})")
        self.size = size

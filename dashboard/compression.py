"""Gzip for pages and JSON: charts are drawn at every width the page may show
(dashboard/charts.py), so a crowded leaderboard carries four near-copies of each; gzipped,
the copies cost next to nothing.

Only responses to requests without credentials are compressed. A page that reflects what a
visitor sent beside a secret it shows only its owner (a bot's address, with the owner's
token) could leak that secret through its compressed size (BREACH); the pages a browser
loads never carry a token, and what the SDK fetches with one is small.
"""

from __future__ import annotations

import gzip
from typing import Final

from flask import Flask, Response, request

#: Smaller bodies gain less than gzip's header and the time cost them.
MIN_BYTES: Final = 1024
LEVEL: Final = 6
TYPES: Final = ("text/html", "application/json", "text/csv", "image/svg+xml", "text/plain")


def _compress(response: Response) -> Response:
    response.vary.add("Accept-Encoding")
    if (
        response.direct_passthrough  # files and streams: sent as they are
        or response.is_streamed
        or response.status_code != 200
        or "Content-Encoding" in response.headers
        or response.mimetype not in TYPES
        or "Authorization" in request.headers
        or request.accept_encodings.quality("gzip") <= 0
    ):
        return response
    body = response.get_data()
    if len(body) < MIN_BYTES:
        return response
    response.set_data(gzip.compress(body, LEVEL))
    response.headers["Content-Encoding"] = "gzip"
    return response


def init_app(app: Flask) -> None:
    app.after_request(_compress)

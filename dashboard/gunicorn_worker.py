"""gunicorn's threaded worker for the dashboard: ``gunicorn -k dashboard.gunicorn_worker.DashboardWorker``.

gunicorn answers the requests it refuses before the app sees them (a request line over
``--limit-request-line``: 414; a header line over ``--limit-request-field_size`` or too many
headers: 431; unparsable HTTP: 400) with its own HTML page. Under /api this worker answers
them as JSON in the app's shape instead, and it refuses headers over
:data:`~dashboard.http_limits.HEADERS_LIMIT` in all, a limit gunicorn does not have (its own
bound is count x line size, about 800 KiB). Everything else is gunicorn's ``gthread`` worker
(one thread when ``--threads`` is not given). The limits are in docs/dashboard.md.
"""

from __future__ import annotations

import socket
from typing import Any

from gunicorn import util
from gunicorn.http.errors import LimitRequestHeaders
from gunicorn.http.message import Request
from gunicorn.http.parser import RequestParser
from gunicorn.workers.gthread import ThreadWorker

from dashboard.http_limits import HEADERS_LIMIT, TARGET_PREFIX, is_api, json_error, target_of


class _Request(Request):  # type: ignore[misc]
    """gunicorn's request, which keeps the start of what it read, to tell where a request it
    refused was going, and refuses headers over HEADERS_LIMIT in all."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.start = b""  # the first bytes read: the request line, or as much of it as fits
        super().__init__(*args, **kwargs)

    def read_into(self, unreader: Any, buf: bytearray, stop: bool = False) -> None:
        super().read_into(unreader, buf, stop)
        # Until the request line ends, ``buf`` holds the request from its first byte.
        if len(self.start) < TARGET_PREFIX and b"\n" not in self.start:
            self.start = bytes(buf[:TARGET_PREFIX])

    def parse(self, unreader: Any) -> Any:
        try:
            rest = super().parse(unreader)
        except Exception as exc:  # gunicorn's ParseException or NoMoreData, answered by the worker
            exc.tonk_target = target_of(self.start)  # type: ignore[attr-defined]
            raise
        size = sum(len(name) + len(value) + 4 for name, value in self.headers)  # "Name: value\r\n"
        if size > HEADERS_LIMIT:
            refused = LimitRequestHeaders(f"its headers take {size} bytes, over {HEADERS_LIMIT}")
            refused.tonk_target = self.path or ""
            raise refused
        return rest


class _Page:
    """Takes the error page gunicorn writes instead of the socket, to answer JSON instead."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.data = b""

    def sendall(self, data: bytes) -> None:
        self.data += data

    def status(self) -> int:
        words = self.data.split(b"\r\n", 1)[0].split(b" ")
        return int(words[1]) if len(words) > 1 and words[1].isdigit() else 500

    def __getattr__(self, name: str) -> Any:  # gettimeout, setblocking, getpeername...
        return getattr(self._sock, name)


class DashboardWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker whose own 4xx answers under /api are JSON."""

    def init_process(self) -> None:
        # gunicorn makes every request of an HTTP/1 connection with RequestParser.mesg_class:
        # in this worker process (it serves only the dashboard), with ours.
        RequestParser.mesg_class = _Request
        super().init_process()

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        target = (getattr(req, "path", None) or "") if req is not None else ""
        target = target or str(getattr(exc, "tonk_target", ""))
        if not is_api(target):
            super().handle_error(req, client, addr, exc)
            return
        # gunicorn decides the status, logs and counts; only its page is replaced.
        page = _Page(client)
        super().handle_error(req, page, addr, exc)
        status = page.status()
        if not 400 <= status < 500 or not page.data:
            if page.data:
                util.write_nonblock(client, page.data)
            return
        reason = page.data.split(b"\r\n", 1)[0].split(b" ", 2)[-1].decode("latin-1")
        body = json_error(status, str(exc))
        head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n")  # fmt: skip
        try:
            util.write_nonblock(client, head.encode("latin-1") + body)
        except Exception:  # the client is gone: nothing to tell it
            self.log.debug("Failed to send error message.")

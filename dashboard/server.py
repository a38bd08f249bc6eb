"""Serving the dashboard.

``serve`` is what ``tonk demo`` calls: a single-process threaded werkzeug server, enough for
one person looking at a local arena. ``production=True`` runs gunicorn with several worker
processes instead (what the Docker image does via ``gunicorn dashboard.wsgi:app``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from flask import Flask
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from arena.config import Settings, load_settings
from arena.runtime.stopping import StopSignals
from dashboard import create_app
from dashboard.http_limits import (
    HEADERS_LIMIT,
    HeadersTooLargeError,
    is_api,
    json_error,
    path_of,
    target_of,
)
from dashboard.operations import close_backend, start_sweeper


def app_for(settings: Settings | None = None, **overrides: Any) -> Flask:
    settings = settings or load_settings()
    config: dict[str, Any] = {
        "SETTINGS": settings,
        "DATABASE_URL": settings.database_url,
        "OPERATOR_TOKEN": settings.operator_token,
    }
    if settings.secret_key:
        config["SECRET_KEY"] = settings.secret_key
    config.update(overrides)
    return create_app(config)


class _HeaderBudget:
    """The connection's input while http.server reads a request's headers: it fails once
    they pass :data:`HEADERS_LIMIT` in all (http.server checks each line and the count only)."""

    def __init__(self, rfile: Any) -> None:
        self._rfile = rfile
        self._left = HEADERS_LIMIT

    def readline(self, size: int = -1) -> bytes:
        room = self._left + 1  # a byte past the budget tells it was passed
        line: bytes = self._rfile.readline(room if size < 0 else min(size, room))
        self._left -= len(line)
        if self._left < 0:
            raise HeadersTooLargeError(HEADERS_LIMIT - self._left)
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rfile, name)


class RequestHandler(WSGIRequestHandler):
    """Werkzeug's handler, except that the errors the HTTP server answers itself, before the
    app sees the request (a request line over 64 KiB: 414; a header line over 64 KiB, over
    100 headers or over HEADERS_LIMIT of them in all: 431), are JSON under /api like every
    other API error, not an HTML page."""

    def handle_one_request(self) -> None:
        self.path = ""  # not the previous request's on a kept-alive connection
        self.raw_requestline = b""
        super().handle_one_request()

    def parse_request(self) -> bool:
        rfile = self.rfile
        self.rfile = _HeaderBudget(rfile)  # type: ignore[assignment]
        try:
            return bool(super().parse_request())
        finally:
            self.rfile = rfile

    def _target(self) -> str:
        # A request line too long is refused before it is parsed: its path is in what was read.
        path = str(getattr(self, "path", "") or "")
        return path_of(path) if path else target_of(getattr(self, "raw_requestline", b""))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if not is_api(self._target()):
            super().send_error(code, message, explain)
            return
        status = HTTPStatus(code)
        body = json_error(code, explain or message or "")
        self.close_connection = True
        self.send_response(code, status.phrase)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class QuietRequestHandler(RequestHandler):
    """RequestHandler that logs only the requests the server failed (5xx): a line per page,
    poll and asset buried what `tonk demo` prints for its user (``--access-log``: all)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        status = getattr(code, "value", code)
        if isinstance(status, int) and status >= 500:
            super().log_request(code, size)


def make(host: str, port: int, settings: Settings | None = None, **overrides: Any) -> BaseWSGIServer:
    """A threaded werkzeug server for the dashboard, bound but not yet serving (``port=0``
    picks a free port: read it back from ``server.server_port``)."""
    return _server(host, port, app_for(settings, **overrides))


def _server(host: str, port: int, app: Flask, *, access_log: bool = True) -> BaseWSGIServer:
    # Every werkzeug server of the dashboard answers with RequestHandler: the errors the HTTP
    # server sends itself (431, 414) must be JSON under /api in `tonk dashboard` too, not only
    # in the servers tests make (issue 29).
    handler = RequestHandler if access_log else QuietRequestHandler
    return make_server(host, port, app, threaded=True, request_handler=handler)


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    settings: Settings | None = None,
    *,
    production: bool = False,
    workers: int = 2,
    ready: Callable[[str], None] | None = None,
    access_log: bool = False,
) -> None:
    """Serve until interrupted. ``ready(url)`` is called once the socket is listening.
    Werkzeug logs only failed (5xx) requests unless ``access_log``; gunicorn logs them all."""
    if production:
        _gunicorn(host, port, settings, workers)
        return
    app = app_for(settings)
    server = _server(host, port, app, access_log=access_log)
    # Tournaments left running (by an earlier dashboard, say) are played on from the start.
    start_sweeper(app, app.config["SETTINGS"])
    # SIGTERM (a service manager, `kill`) and Ctrl-C stop it through the clean-up below. Their
    # handler only notes the signal and a watcher thread asks the server to stop: a handler
    # that raised KeyboardInterrupt was lost when it landed in a weakref callback, and the
    # dashboard ran on (issue 35, arena/runtime/stopping.py).
    stop = StopSignals()
    if stop.install():
        stop.when_requested(server.shutdown, name="dashboard-stop")
    if ready is not None:
        ready(f"http://{host}:{server.server_port}/")
    try:
        server.serve_forever()
    finally:
        try:
            server.server_close()
            close_backend(app)
        finally:
            stop.close()


def serve_in_thread(host: str, port: int, settings: Settings | None = None,
                    **overrides: Any) -> tuple[BaseWSGIServer, threading.Thread]:
    """Start serving in a daemon thread (tests, demos); stop with ``server.shutdown()``."""
    server = make(host, port, settings, **overrides)
    thread = threading.Thread(target=server.serve_forever, name="dashboard", daemon=True)
    thread.start()
    return server, thread


def _gunicorn(host: str, port: int, settings: Settings | None, workers: int) -> None:
    from gunicorn.app.base import BaseApplication

    app = app_for(settings)

    class _App(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            self.cfg.set("bind", f"{host}:{port}")
            self.cfg.set("workers", workers)
            # gunicorn's threaded worker, answering the errors gunicorn sends itself (414,
            # 431) in JSON under /api and limiting headers in all (dashboard/gunicorn_worker.py).
            self.cfg.set("worker_class", "dashboard.gunicorn_worker.DashboardWorker")
            # Registering a bot plays its check matches inside the request (as in compose).
            self.cfg.set("threads", 4)
            self.cfg.set("timeout", 120)
            self.cfg.set("accesslog", "-")

        def load(self) -> Flask:
            return app

    _App().run()

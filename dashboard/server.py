"""Serving the dashboard.

``serve`` is what ``tonk demo`` calls: a single-process threaded werkzeug server, enough for
one person looking at a local arena. ``production=True`` runs gunicorn with several worker
processes instead (what the Docker image does via ``gunicorn dashboard.wsgi:app``).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from flask import Flask
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from arena.config import Settings, load_settings
from dashboard import create_app
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


class RequestHandler(WSGIRequestHandler):
    """Werkzeug's handler, except that the errors the HTTP server answers itself, before the
    app sees the request (a header line over 64 KiB: 431; too many headers: 431; a request
    line too long: 414), are JSON under /api like every other API error, not an HTML page."""

    def handle_one_request(self) -> None:
        self.path = ""  # not the previous request's on a kept-alive connection
        super().handle_one_request()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if not str(getattr(self, "path", "") or "").startswith("/api/"):
            super().send_error(code, message, explain)
            return
        status = HTTPStatus(code)
        text = message or status.phrase
        if code == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
            text = f"{text}: a request header is larger than the server accepts (64 KiB a line, 100 headers)"
        body = json.dumps({"error": {"code": status.phrase.lower().replace(" ", "_").replace("-", "_"),
                                     "message": text}}).encode()
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
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (a service manager, `kill`) stops it the way Ctrl-C does, through the cleanup.
        signal.signal(signal.SIGTERM, _interrupt)
    if ready is not None:
        ready(f"http://{host}:{server.server_port}/")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        close_backend(app)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


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
            # Registering a bot plays its check matches inside the request (as in compose).
            self.cfg.set("threads", 4)
            self.cfg.set("timeout", 120)
            self.cfg.set("accesslog", "-")

        def load(self) -> Flask:
            return app

    _App().run()

"""The Tonk Arena dashboard: server-rendered pages plus the versioned JSON API (/api/v1).

``create_app`` builds the Flask app from :func:`arena.config.load_settings`, with
``test_config`` overriding any key (``DATABASE_URL``, ``OPERATOR_TOKEN``, ...). Each
integration has an ``init_app`` (database session per request, error pages, security
headers), and each area of the site is one small blueprint in :mod:`dashboard.views`.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from arena.config import load_settings

if TYPE_CHECKING:
    from flask import Flask

    from arena.queries.cache import Settings as CacheSettings

#: Request bodies are small JSON documents (a bot name and address, a tournament spec).
DEFAULT_MAX_CONTENT_LENGTH = 64 * 1024


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    # Flask is imported here, not above: `tonk` imports dashboard.commands (and so this
    # package) only to list its commands.
    from flask import Flask

    app = Flask(__name__)
    settings = load_settings()
    app.config.from_mapping(
        DATABASE_URL=settings.database_url,
        OPERATOR_TOKEN=settings.operator_token,
        # Without a configured key, sessions only need to survive this process.
        SECRET_KEY=settings.secret_key or secrets.token_hex(32),
        MAX_CONTENT_LENGTH=DEFAULT_MAX_CONTENT_LENGTH,
        JSON_SORT_KEYS=False,
        TEMPLATES_AUTO_RELOAD=False,
        # Dashboard options (docs/dashboard.md): how stale cached numbers may be, how often a
        # running tournament's page polls, and whether new bots are checked before registering.
        CACHE_REFRESH_SECONDS=1.0,
        CACHE_STALE_OK=True,
        CACHE_FRESH_WAIT_SECONDS=1.0,
        PROGRESS_POLL_MS=3000,
        BOT_CHECKS=True,
        BOT_CHECKER=None,
        BOT_CHECK_SLOTS=settings.check_slots,
        # Invite redemptions (POST /api/v1/owners) per client address: (attempts, seconds).
        JOIN_RATE_LIMIT=(20, 60.0),
        TOURNAMENT_BACKEND=None,
    )
    if test_config:
        app.config.update(test_config)
    # The arena modules take a Settings; keep it in step with the (possibly overridden) config.
    app.config["SETTINGS"] = dataclasses.replace(
        app.config.get("SETTINGS") or settings,
        database_url=app.config["DATABASE_URL"],
        operator_token=app.config["OPERATOR_TOKEN"],
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]

    from arena.queries import cache
    from dashboard import checks, compression, db, errors, ratelimit, security, signin, templating
    from dashboard.views import register_blueprints

    cache.configure(cache_settings)

    checks.init_app(app)
    compression.init_app(app)
    db.init_app(app)
    errors.init_app(app)
    ratelimit.init_app(app)
    security.init_app(app)
    signin.init_app(app)
    templating.init_app(app)
    register_blueprints(app)
    return app


def cache_settings() -> CacheSettings:
    """The query cache's settings (arena/queries/cache.py) from the current app's config."""
    from flask import current_app, has_app_context

    from arena.queries.cache import FRESH_WAIT_SECONDS, REFRESH_SECONDS, Settings

    if not has_app_context():
        return Settings()
    config = current_app.config
    return Settings(
        refresh_seconds=float(config.get("CACHE_REFRESH_SECONDS", REFRESH_SECONDS)),
        stale_ok=bool(config.get("CACHE_STALE_OK", True)),
        fresh_wait_seconds=float(config.get("CACHE_FRESH_WAIT_SECONDS", FRESH_WAIT_SECONDS)),
    )


__all__ = ["cache_settings", "create_app"]

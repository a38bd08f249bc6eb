"""The dashboard's blueprints: one per area, plus the JSON API."""

from __future__ import annotations

from flask import Flask

from dashboard.params import IdConverter, IndexConverter


def register_blueprints(app: Flask) -> None:
    from dashboard.views import (
        api,
        api_spectator,
        api_uploads,
        bots,
        health,
        ladders,
        leaderboard,
        matches,
        spectator,
        tournaments,
    )

    app.url_map.converters["id"] = IdConverter
    app.url_map.converters["index"] = IndexConverter
    for module in (health, leaderboard, tournaments, ladders, matches, bots, api, api_spectator, spectator):
        app.register_blueprint(module.bp)
    app.register_blueprint(api_uploads.bp)

"""The dashboard's blueprints: one per area, plus the JSON API."""

from __future__ import annotations

from flask import Flask

from dashboard.params import IdConverter, IndexConverter


def register_blueprints(app: Flask) -> None:
    from dashboard.views import (
        account,
        api,
        api_challenges,
        api_spectator,
        api_uploads,
        bots,
        health,
        ladders,
        leaderboard,
        matches,
        people,
        spectator,
        tables,
        tournaments,
    )

    app.url_map.converters["id"] = IdConverter
    app.url_map.converters["index"] = IndexConverter
    pages = (health, leaderboard, people, tournaments, ladders, matches, bots, account, tables)
    for module in (*pages, api, api_spectator, spectator, api_uploads, api_challenges):
        app.register_blueprint(module.bp)

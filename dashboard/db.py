"""One SQLAlchemy session per request, opened on first use and closed at teardown.

Engines come from :func:`arena.store.db.get_engine` (one per URL per process, schema created on
first use), so the dashboard and the workers share the arena's connection settings.
"""

from __future__ import annotations

from flask import Flask, current_app, g
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from arena.store.db import get_engine


def engine() -> Engine:
    return get_engine(current_app.config["DATABASE_URL"])


def session() -> Session:
    """The request's session (read-mostly: writers call ``commit`` themselves)."""
    db: Session | None = g.get("db_session")
    if db is None:
        db = Session(engine(), expire_on_commit=False)
        g.db_session = db
    return db


def _close(exc: BaseException | None) -> None:
    db: Session | None = g.pop("db_session", None)
    if db is not None:
        if exc is not None:
            db.rollback()
        db.close()


def init_app(app: Flask) -> None:
    app.teardown_appcontext(_close)

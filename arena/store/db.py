"""Engines and sessions. One engine per URL per process. A new database gets the current
schema stamped at the newest migration on first use; upgrades are ``tonk db upgrade``
(arena/store/migrate.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, update
from sqlalchemy.orm import Session, sessionmaker

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def get_engine(url: str) -> Engine:
    """The process's engine for ``url``, creating the schema the first time."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _make_engine(url)
            from arena.store.migrate import ensure_schema  # imports Alembic only for a new database

            ensure_schema(engine)
            _engines[url] = engine
        return engine


def _make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            # WAL lets the dashboard read while workers write; foreign keys are off by default.
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def dispose_engines(*, close: bool = True) -> None:
    """Forget every engine. In a child process after a fork pass ``close=False``: the
    parent's pooled connections must be neither used nor closed (closing would end the
    parent's sessions), only dropped."""
    with _lock:
        for engine in _engines.values():
            engine.dispose(close=close)
        _engines.clear()


def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(get_engine(url), expire_on_commit=False)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error."""
    session = session_factory(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def lock_row(session: Session, table: Any, row_id: int, key: Any = None) -> None:
    """Take the write lock on one row for the rest of the transaction, before anything is
    read: a no-op UPDATE. SQLite ignores FOR UPDATE, and a transaction there that read first
    and wrote later would act on what it read before another's commit; on PostgreSQL it is
    the same row lock FOR UPDATE takes. Two requests counted against one bound (an owner's
    tests, a bot's challenges, a seat's moves) are so counted one after the other. ``key``:
    the row's key column, when it is not ``table.id``."""
    column = table.id if key is None else key
    same = update(table).where(column == row_id).values({column.key: column})
    session.execute(same.execution_options(synchronize_session=False))

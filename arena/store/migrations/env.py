"""Alembic's environment for the arena's schema.

Run programmatically by arena/store/migrate.py (``tonk db upgrade``), which hands over an open
connection in ``config.attributes["connection"]``; or by the ``alembic`` command from a
checkout (alembic.ini), which connects to ``sqlalchemy.url`` or else ``TONK_DATABASE_URL``.
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import Connection, create_engine, pool

from arena.config import load_settings
from arena.store.models import Base, Seed

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or load_settings().database_url


def _render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | Literal[False]:
    # New revisions spell a Seed column as the plain column it is, so that they never import
    # arena.store.models (whose types may change after the revision is written).
    if type_ == "type" and isinstance(obj, Seed):
        return 'sa.BigInteger().with_variant(sa.Integer(), "sqlite")'
    return False


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things: batch mode recreates the table instead, so the same
        # revision runs on both stores.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=_render_item,
    )


def run_offline() -> None:
    """``alembic upgrade --sql``: print the SQL instead of running it."""
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()

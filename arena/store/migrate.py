"""Schema migrations: ``migrate(url)`` and the ``tonk db`` commands.

    tonk db upgrade     # bring TONK_DATABASE_URL's schema to the newest revision, keeping the data
    tonk db current     # the database's revision; exit 1 when it is behind (monitoring)

The revisions are Alembic's, in ``arena/store/migrations/`` *inside the package* (script location
``arena:migrations``), so an installed wheel upgrades its database with no checkout and no
alembic.ini; the alembic.ini at the repository's root is only for writing new revisions.

A database made before migrations existed (``Base.metadata.create_all`` in arena/store/db.py, which
does not record a revision) is recognised: :func:`migrate` finds the newest revision whose
tables, columns and named indexes it has, stamps it there, and upgrades from that point.
:func:`ensure_schema` is what arena/store/db.py can call instead of a bare ``create_all``: a fresh
database gets the current schema and is stamped at head, so it is never ambiguous later.

On PostgreSQL the whole upgrade is one transaction under an advisory lock: two machines
running ``tonk db upgrade`` at once take turns, and a failed revision leaves nothing half done.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

# SQLAlchemy and Alembic are imported where they are used: `tonk` loads this module to list
# its commands, and `tonk --help` or `tonk serve` would otherwise pay for importing them.
if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection, Engine

#: Where the revisions are: a package resource, so it works from a wheel as from a checkout.
SCRIPT_LOCATION = "arena.store:migrations"
#: PostgreSQL advisory lock held while migrating (any constant; this one spells "tonk").
LOCK_KEY = 0x746F6E6B
VERSION_TABLE = "alembic_version"

log = logging.getLogger(__name__)

#: A schema as far as telling revisions apart needs: table -> (columns, named indexes).
Fingerprint = dict[str, tuple[frozenset[str], frozenset[str]]]


class MigrationError(RuntimeError):
    """The database cannot be brought to the wanted revision (the message says why)."""


def alembic_config(database_url: str | None = None) -> Config:
    """Alembic's configuration for the arena's migrations, without any ini file."""
    from alembic.config import Config

    # Today's stdout: Alembic's default is the one of when alembic.config was first imported,
    # which may since have been swapped and closed (a test's capture, a redirected CLI).
    config = Config(stdout=sys.stdout)
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.set_main_option("path_separator", "os")
    if database_url:
        config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def head_revision() -> str:
    """The newest revision this code knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise MigrationError("the arena package has no migrations (arena/store/migrations/versions is empty)")
    return head


def current_revision(database_url: str) -> str | None:
    """The revision the database is stamped at (None: never migrated, or empty)."""
    engine = _engine(database_url)
    try:
        with engine.connect() as connection:
            return _stamped(connection)
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Upgrade:
    """What :func:`upgrade` did: the revision before (None: none recorded), the revision an
    unversioned database was recognised at and stamped (if it was), and the one after."""

    before: str | None
    recognised: str | None
    after: str


def migrate(database_url: str, revision: str = "head") -> str:
    """Upgrade the database at ``database_url`` to ``revision`` (default: the newest),
    creating the schema in an empty database; returns the revision it is at afterwards.
    Idempotent. Raises :class:`MigrationError` for a database it cannot place."""
    return upgrade(database_url, revision).after


def upgrade(database_url: str, revision: str = "head") -> Upgrade:
    """:func:`migrate`, saying what it did."""
    from alembic import command

    engine = _engine(database_url)
    try:
        with _locked(engine) as connection:
            config = alembic_config(database_url)
            config.attributes["connection"] = connection
            before = recognised = _stamped(connection)
            if before is None:
                recognised = detect_revision(connection)
                if recognised is not None:
                    log.info("unversioned arena database matches revision %s: stamping it", recognised)
                    command.stamp(config, recognised)
            command.upgrade(config, revision)
            after = _stamped(connection)
    finally:
        engine.dispose()
    if after is None:
        raise MigrationError("the upgrade left no revision in the database")
    return Upgrade(before=before, recognised=None if before else recognised, after=after)


def ensure_schema(engine: Engine) -> None:
    """For arena/store/db.py's first use of a database: an empty one gets the current schema
    (``create_all``, faster than replaying every revision) stamped at head; one that has
    the arena's tables is left as it is, with a warning when it is behind this code (it
    needs ``tonk db upgrade``). Cheap when the database is set up: one look at its tables
    and its revision, without importing Alembic (every worker process does this)."""
    from sqlalchemy import inspect, text

    from arena.store.migrations import HEAD
    from arena.store.models import Base

    with _locked(engine) as connection:
        tables = set(inspect(connection).get_table_names())
        if VERSION_TABLE in tables:
            stamped = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
        elif tables & set(Base.metadata.tables):
            stamped = None  # made by create_all before migrations: `tonk db upgrade` places it
        else:
            from alembic import command
            from sqlalchemy import insert

            from arena.store.models import ArenaSecret
            from arena.store.secrets import fresh_secrets

            Base.metadata.create_all(connection)
            connection.execute(insert(ArenaSecret), fresh_secrets())  # this arena's own
            config = alembic_config()
            config.attributes["connection"] = connection
            command.stamp(config, HEAD)
            return
    if stamped != HEAD:
        log.warning(
            "the arena database is at revision %s but this code expects %s: run `tonk db upgrade`",
            stamped or "(none)",
            HEAD,
        )


def detect_revision(connection: Connection) -> str | None:
    """For a database without a recorded revision: None when it has none of the arena's
    tables, else the newest revision whose schema it has (tables, columns, named indexes)."""
    revisions = _revision_fingerprints()
    known = {table for _revision, fingerprint in revisions for table in fingerprint}
    actual = {t: shape for t, shape in fingerprint_of(connection).items() if t in known}
    if not actual:
        return None
    for revision, fingerprint in reversed(revisions):
        if fingerprint == actual:
            return revision
    newest = revisions[-1][1]
    missing = sorted(set(newest) - set(actual))
    raise MigrationError(
        "the database has arena tables but matches no known schema revision "
        f"(tables missing from the newest: {', '.join(missing) or 'none'}); restore a backup or "
        "stamp it by hand with `alembic stamp REVISION`"
    )


def fingerprint_of(connection: Connection) -> Fingerprint:
    """The tables of the database with their column and (non-constraint) index names."""
    from sqlalchemy import inspect

    inspector = inspect(connection)
    shape: Fingerprint = {}
    for table in inspector.get_table_names():
        if table == VERSION_TABLE:
            continue
        columns = frozenset(c["name"] for c in inspector.get_columns(table))
        indexes = frozenset(
            str(i["name"])
            for i in inspector.get_indexes(table)
            if i.get("name")
            and not i.get("duplicates_constraint")
            and not str(i["name"]).startswith("sqlite_autoindex")
        )
        shape[table] = (columns, indexes)
    return shape


@cache
def _revision_fingerprints() -> tuple[tuple[str, Fingerprint], ...]:
    """Each revision, oldest first, with the schema it leaves: replayed on an in-memory
    SQLite database (names only, so the dialect does not matter)."""
    from alembic import command
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine, pool

    script = ScriptDirectory.from_config(alembic_config())
    revisions = [r.revision for r in reversed(list(script.walk_revisions()))]
    engine = create_engine("sqlite://", poolclass=pool.StaticPool)
    out: list[tuple[str, Fingerprint]] = []
    try:
        with engine.begin() as connection:
            config = alembic_config("sqlite://")
            config.attributes["connection"] = connection
            for revision in revisions:
                command.upgrade(config, revision)
                out.append((revision, fingerprint_of(connection)))
    finally:
        engine.dispose()
    return tuple(out)


def _engine(database_url: str) -> Engine:
    from sqlalchemy import create_engine, pool

    # Its own engine, not arena.store.db's: that one creates tables on first use, which is exactly
    # what a migration must not find done behind its back.
    if database_url.startswith("sqlite"):
        path = database_url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    return create_engine(database_url, poolclass=pool.NullPool)


@contextmanager
def _locked(engine: Engine) -> Iterator[Connection]:
    from sqlalchemy import text

    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # Released at commit or rollback; DDL is transactional on PostgreSQL.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
        yield connection


def _stamped(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def display_url(database_url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(database_url).render_as_string(hide_password=True)


__all__ = [
    "MigrationError",
    "Upgrade",
    "alembic_config",
    "current_revision",
    "detect_revision",
    "ensure_schema",
    "head_revision",
    "migrate",
    "upgrade",
]

"""The arena's Alembic migrations (env.py, versions/), shipped inside the package so that an
installed wheel can upgrade its database: ``tonk db upgrade`` (arena/store/migrate.py)."""

#: The newest revision, for checks that must not import Alembic (arena.store.migrate.ensure_schema).
#: tests/arena/store/test_migrations.py fails when a new revision is added without updating it.
HEAD = "0019"

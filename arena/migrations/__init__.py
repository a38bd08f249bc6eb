"""The arena's Alembic migrations (env.py, versions/), shipped inside the package so that an
installed wheel can upgrade its database: ``tonk db upgrade`` (arena/migrate.py)."""

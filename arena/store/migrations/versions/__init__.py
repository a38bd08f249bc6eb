"""Alembic revisions of the arena's schema, oldest first by ``down_revision``."""

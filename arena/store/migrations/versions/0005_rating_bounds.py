"""Ratings anchored on the established pool: a one-sided record is stored as a bound (low or
high NULL on its open side), with how each rating was obtained and why it is provisional.
Tournament kinds: a round robin, a gauntlet (every table holds the challenger) or a sequential
test between two bots, with their parameters (and the test's verdict).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("rating_snapshots") as batch:  # SQLite rebuilds the table
        batch.alter_column("low", existing_type=sa.Float(), nullable=True)
        batch.alter_column("high", existing_type=sa.Float(), nullable=True)
        batch.add_column(sa.Column("basis", sa.String(length=16), nullable=False, server_default="pool"))
        batch.add_column(sa.Column("reason", sa.String(length=16), nullable=True))
    with op.batch_alter_table("tournaments") as batch:
        batch.add_column(
            sa.Column("kind", sa.String(length=16), nullable=False, server_default="round-robin")
        )
        batch.add_column(sa.Column("params", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tournaments") as batch:
        batch.drop_column("params")
        batch.drop_column("kind")
    op.execute("DELETE FROM rating_snapshots WHERE low IS NULL OR high IS NULL")
    with op.batch_alter_table("rating_snapshots") as batch:
        batch.drop_column("reason")
        batch.drop_column("basis")
        batch.alter_column("high", existing_type=sa.Float(), nullable=False)
        batch.alter_column("low", existing_type=sa.Float(), nullable=False)

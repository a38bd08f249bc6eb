"""Each match's closest hand (its index, and the points between the lowest total and the
next), kept when the match is recorded, so a finished tournament's headline can link its
closest hands without decoding every replay. Matches recorded before have none.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("close_hand", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("close_points", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("close_points")
        batch.drop_column("close_hand")

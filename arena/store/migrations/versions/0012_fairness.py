"""The fair-play check's reference: what a house reference bot scores in each seat of a
duplicate deal's matches, on the same cards (arena/play/reference.py). Rows played before
have none; the check then compares the bot's raw scores, as it did.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("match_seats") as batch:
        batch.add_column(sa.Column("reference_score", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("match_seats") as batch:
        batch.drop_column("reference_score")

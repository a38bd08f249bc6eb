"""Dialled bots found not answering (arena/bots/reachability.py): one row per offline bot,
so a ladder gives it no new table until a health probe finds it answering again. Every bot
starts with none (answering).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bot_outages",
        sa.Column("bot_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("noted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("cause", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=300), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("probe_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"]),
        sa.PrimaryKeyConstraint("bot_id"),
    )
    op.create_index("ix_bot_outages_probe_at", "bot_outages", ["probe_at"])


def downgrade() -> None:
    op.drop_index("ix_bot_outages_probe_at", table_name="bot_outages")
    op.drop_table("bot_outages")

"""Bot leases: each match in flight holds one capacity slot of each of its bots, so no bot
has more matches in flight than it declared, across every worker sharing the store
(arena/play/capacity.py).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bot_leases",
        sa.Column("bot_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("slot", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"]),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"]),
        sa.PrimaryKeyConstraint("bot_id", "slot"),
    )
    op.create_index("ix_bot_leases_match", "bot_leases", ["match_id"])


def downgrade() -> None:
    op.drop_index("ix_bot_leases_match", table_name="bot_leases")
    op.drop_table("bot_leases")

"""Bot-check leases: the dashboard's bound on running bot checks (dashboard/checks.py) holds
across processes, not per process.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "check_leases",
        sa.Column("slot", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["owners.id"]),
        sa.PrimaryKeyConstraint("slot"),
        sa.UniqueConstraint("owner_id"),
    )


def downgrade() -> None:
    op.drop_table("check_leases")

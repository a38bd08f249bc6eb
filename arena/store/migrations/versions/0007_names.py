"""Columns named for what they hold: ``tournaments.deals_per_table`` (it always counted
deals, each played once per seat rotation) and ``matches.public_id`` (the match id its bots
see). The JSON API still accepts and returns the old names beside the new.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tournaments") as batch:
        batch.alter_column("matches_per_table", new_column_name="deals_per_table", existing_type=sa.Integer())
    with op.batch_alter_table("matches") as batch:
        batch.alter_column("label", new_column_name="public_id", existing_type=sa.String(length=64))


def downgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.alter_column("public_id", new_column_name="label", existing_type=sa.String(length=64))
    with op.batch_alter_table("tournaments") as batch:
        batch.alter_column("deals_per_table", new_column_name="matches_per_table", existing_type=sa.Integer())

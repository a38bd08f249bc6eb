"""Ratings per version: a rating snapshot names the version it rated (each version of a bot
is rated as a player of its own; the bot's row is its current version's). Rows written
before have none: they pooled every version of the bot, and stay as they were.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("rating_snapshots") as batch:
        batch.add_column(sa.Column("bot_version_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_rating_snapshots_bot_version_id", "bot_versions", ["bot_version_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("rating_snapshots") as batch:
        batch.drop_constraint("fk_rating_snapshots_bot_version_id", type_="foreignkey")
        batch.drop_column("bot_version_id")

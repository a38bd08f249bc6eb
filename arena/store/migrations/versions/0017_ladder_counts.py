"""A ladder tick that costs what changed: each ladder entry counts its bot's matches on the
ladder (kept by the scheduler as it adds and withdraws tables), and matches are indexed by
table, so a tick no longer counts or scans every match the ladder ever played
(arena/ladder/scheduler.py). Existing ladders' counts are filled from their matches.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "tournament_entries", sa.Column("matches", sa.Integer(), nullable=False, server_default="0")
    )
    op.create_index("ix_matches_table", "matches", ["tournament_id", "table_index"])
    op.execute(
        "UPDATE tournament_entries SET matches = (SELECT count(*) FROM match_seats s "
        "JOIN matches m ON m.id = s.match_id WHERE m.tournament_id = tournament_entries.tournament_id "
        "AND s.bot_id = tournament_entries.bot_id) "
        "WHERE tournament_id IN (SELECT id FROM tournaments WHERE kind = 'ladder')"
    )


def downgrade() -> None:
    op.drop_index("ix_matches_table", table_name="matches")
    with op.batch_alter_table("tournament_entries") as batch:
        batch.drop_column("matches")

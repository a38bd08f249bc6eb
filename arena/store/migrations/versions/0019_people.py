"""People at the table (issue #39, arena/tournaments/people.py): a person sits as a bot row
of their own, one per owner, flagged ``person`` so no bot list, board, ladder, challenge or
matchmaking ever offers it; and ``seat_channels``, a row a person's match, which says whose
seat it is and, when the arena has no Redis, carries the seat's view and the person's move
between the worker and the web (arena/play/seat_channel.py).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("bots", sa.Column("person", sa.Boolean(), nullable=False, server_default="0"))
    op.create_table(
        "seat_channels",
        sa.Column(
            "match_id", sa.Integer(), sa.ForeignKey("matches.id"), primary_key=True, autoincrement=False
        ),
        sa.Column("owner_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("view", sa.JSON(), nullable=True),
        sa.Column("asked", sa.String(64), nullable=True),
        sa.Column("action", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_seat_channels_owner", "seat_channels", ["owner_id"])


def downgrade() -> None:
    op.drop_index("ix_seat_channels_owner", table_name="seat_channels")
    op.drop_table("seat_channels")
    with op.batch_alter_table("bots") as batch:
        batch.drop_column("person")

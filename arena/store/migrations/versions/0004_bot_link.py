"""Connect-out bots (issue #14): bots and versions that play over a gateway link, the
gateways and their live connections, and when a match began waiting for an offline bot.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("bots") as batch:
        batch.add_column(sa.Column("connected", sa.Boolean(), nullable=False, server_default="0"))
    with op.batch_alter_table("bot_versions") as batch:
        batch.add_column(sa.Column("connected", sa.Boolean(), nullable=False, server_default="0"))
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("waiting_since", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "link_gateways",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "link_connections",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("gateway_id", sa.String(length=64), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("peer", sa.String(length=128), nullable=False),
        sa.Column("connected_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["gateway_id"], ["link_gateways.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"]),
        sa.ForeignKeyConstraint(["owner_id"], ["owners.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_link_connections_bot", "link_connections", ["bot_id"])


def downgrade() -> None:
    op.drop_index("ix_link_connections_bot", table_name="link_connections")
    op.drop_table("link_connections")
    op.drop_table("link_gateways")
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("waiting_since")
    with op.batch_alter_table("bot_versions") as batch:
        batch.drop_column("connected")
    with op.batch_alter_table("bots") as batch:
        batch.drop_column("connected")

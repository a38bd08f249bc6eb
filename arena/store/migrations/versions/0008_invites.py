"""Invite codes (arena/bots/invites.py): an operator makes them, a newcomer redeems one to
become an owner. ``invites`` keeps each code's hash and what is left of it;
``invite_redemptions`` which owner joined with which invite.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "invites",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("uses_total", sa.Integer(), nullable=False),
        sa.Column("uses_left", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.String(length=200), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["created_by"], ["owners.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("code_hash"),
    )
    op.create_table(
        "invite_redemptions",
        sa.Column("owner_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("invite_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["invite_id"], ["invites.id"]),
        sa.ForeignKeyConstraint(["owner_id"], ["owners.id"]),
        sa.PrimaryKeyConstraint("owner_id"),
    )
    op.create_index("ix_invite_redemptions_invite", "invite_redemptions", ["invite_id"])


def downgrade() -> None:
    op.drop_index("ix_invite_redemptions_invite", table_name="invite_redemptions")
    op.drop_table("invite_redemptions")
    op.drop_table("invites")

"""The arena's own secrets (arena/store/secrets.py): the key mixed into tournament seeds and
the key of claim codes, each 32 random bytes made up here (arena/store/secrets.py makes a
missing one on first use too); matches already created keep their stored seeds.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    table = op.create_table(
        "arena_secrets",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    now = dt.datetime.now(dt.UTC)
    # arena.store.secrets.SECRET_NAMES and SECRET_BYTES as of this revision (copied: a revision
    # must not change when the code does).
    op.bulk_insert(
        table, [{"name": n, "value": secrets.token_hex(32), "created_at": now} for n in ("deal", "claim")]
    )


def downgrade() -> None:
    op.drop_table("arena_secrets")

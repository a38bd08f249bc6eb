"""Who started a tournament: an owner's own sequential test (``POST /api/v1/sprt``) records
its owner, so the arena can bound each owner's tests and let only them (or an operator) stop
it. Tournaments an operator made from the store have none.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tournaments") as batch:
        batch.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_tournaments_owner_id", "owners", ["owner_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("tournaments") as batch:
        batch.drop_constraint("fk_tournaments_owner_id", type_="foreignkey")
        batch.drop_column("owner_id")

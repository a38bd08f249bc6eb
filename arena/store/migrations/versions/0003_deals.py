"""Deals: a tournament's deal mode, the deal index on matches, and when a deal was revealed.

A deal is the matches of a tournament dealt from one seed (every seat order of a duplicate
deal). Their records and seed stay hidden until all of them are done (arena/play/deal_end.py). Matches
not played yet get opaque match ids (arena.tournaments.layout.public_match_id).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _label(seed: int, key: str) -> str:
    # arena.tournaments.layout.public_match_id as of this revision (copied: a revision must not change
    # when the code does).
    return hmac.new(seed.to_bytes(8, "big"), f"tonk-match/{key}".encode(), hashlib.sha256).hexdigest()[:20]


def upgrade() -> None:
    # Matches not yet played get the opaque match ids: the old ones named deal and rotation.
    # Played ones keep theirs (their bots' seeded choices were made under them).
    conn = op.get_bind()
    pending = conn.execute(
        sa.text(
            "SELECT m.id, m.key, t.seed FROM matches m JOIN tournaments t ON t.id = m.tournament_id "
            "WHERE m.status = 'pending'"
        )
    ).all()
    if pending:
        conn.execute(
            sa.text("UPDATE matches SET label = :label WHERE id = :id"),
            [{"id": mid, "label": _label(int(seed) % 2**64, key)} for mid, key, seed in pending],
        )
    with op.batch_alter_table("tournaments") as batch:
        batch.add_column(
            sa.Column("deal_mode", sa.String(length=16), nullable=False, server_default="duplicate")
        )
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("deal_revealed_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_matches_deal", "matches", ["tournament_id", "seed"])


def downgrade() -> None:
    op.drop_index("ix_matches_deal", table_name="matches")
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("deal_revealed_at")
    with op.batch_alter_table("tournaments") as batch:
        batch.drop_column("deal_mode")

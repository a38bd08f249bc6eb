"""Uploaded bots: ``uploads`` (archives by SHA-256), ``builds`` (their bundles and logs),
``match_logs`` (what a hosted bot wrote per match), and on ``bot_versions`` the upload, build
and launch of an uploaded version.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "uploads",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("archive", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("unpacked_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["owners.id"]),
        sa.PrimaryKeyConstraint("sha256"),
    )
    op.create_table(
        "builds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("upload_sha", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("log", sa.Text(), nullable=False),
        sa.Column("artifact", sa.LargeBinary(), nullable=True),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["upload_sha"], ["uploads.sha256"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_builds_upload", "builds", ["upload_sha", "status"])
    op.create_table(
        "match_logs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"]),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("match_id", "seat"),
    )
    op.create_index("ix_match_logs_bot", "match_logs", ["bot_id", "match_id"])
    with op.batch_alter_table("bot_versions") as batch:
        batch.add_column(sa.Column("upload_sha", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("build_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("launch", sa.JSON(), nullable=True))
        batch.create_foreign_key("fk_bot_versions_upload_sha", "uploads", ["upload_sha"], ["sha256"])
        batch.create_foreign_key("fk_bot_versions_build_id", "builds", ["build_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("bot_versions") as batch:
        batch.drop_constraint("fk_bot_versions_build_id", type_="foreignkey")
        batch.drop_constraint("fk_bot_versions_upload_sha", type_="foreignkey")
        batch.drop_column("launch")
        batch.drop_column("build_id")
        batch.drop_column("upload_sha")
    op.drop_index("ix_match_logs_bot", table_name="match_logs")
    op.drop_table("match_logs")
    op.drop_index("ix_builds_upload", table_name="builds")
    op.drop_table("builds")
    op.drop_table("uploads")

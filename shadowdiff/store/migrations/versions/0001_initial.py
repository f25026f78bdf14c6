"""The first schema: runs, pairs, answers, skipped log lines.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("settings", sa.JSON, nullable=False),
    )
    op.create_table(
        "pairs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("category", sa.String(255)),
        sa.Column("endpoint", sa.String(64), nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("request", sa.JSON, nullable=False),
        sa.Column("comparable", sa.Boolean, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("similarity", sa.Float),
        sa.Column("difflib_ratio", sa.Float),
        sa.Column("first_char", sa.Integer),
        sa.Column("first_token", sa.Integer),
        sa.Column("length_ratio", sa.Float),
        sa.Column("margin", sa.Float),
        sa.Column("noise_outcome", sa.String(16)),
        sa.Column("noise_similarity", sa.Float),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_id", "key", name="uq_pairs_run_key"),
    )
    op.create_index("ix_pairs_run_outcome", "pairs", ["run_id", "outcome"])
    op.create_index("ix_pairs_run_seq", "pairs", ["run_id", "seq"])
    op.create_table(
        "answers",
        sa.Column("pair_id", sa.Integer, sa.ForeignKey("pairs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("side", sa.String(16), primary_key=True),
        sa.Column("model", sa.String(255)),
        sa.Column("status", sa.Integer),
        sa.Column("error", sa.Text),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("finish_reason", sa.String(32)),
        sa.Column("prompt_tokens", sa.Integer),
        sa.Column("completion_tokens", sa.Integer),
        sa.Column("ttft", sa.Float),
        sa.Column("duration", sa.Float),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("tokens", sa.JSON),
        sa.Column("margins", sa.JSON),
    )
    op.create_table(
        "skipped",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("line", sa.Integer, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )
    op.create_index("ix_skipped_run", "skipped", ["run_id"])


def downgrade() -> None:
    for table in ("skipped", "answers", "pairs", "runs"):
        op.drop_table(table)

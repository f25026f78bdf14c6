"""Review: triage signals and priority on pairs, claims, reviews, judge suggestions,
tool calls on answers.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pairs") as batch:
        batch.add_column(sa.Column("signals", sa.JSON))
        batch.add_column(sa.Column("suggested", sa.String(16)))
        batch.add_column(sa.Column("priority", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("claimed_by", sa.String(255)))
        batch.add_column(sa.Column("claimed_until", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("judge_verdict", sa.String(16)))
        batch.add_column(sa.Column("judge_wrong_side", sa.String(16)))
        batch.add_column(sa.Column("judge_reason", sa.Text))
    op.create_index("ix_pairs_run_priority", "pairs", ["run_id", "priority"])
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("tool_calls", sa.JSON))
    op.create_table(
        "reviews",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("pair_id", sa.Integer, sa.ForeignKey("pairs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("reviewer", sa.String(255), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("wrong_side", sa.String(16)),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_reviews_pair", "reviews", ["pair_id"])


def downgrade() -> None:
    op.drop_table("reviews")
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("tool_calls")
    op.drop_index("ix_pairs_run_priority", "pairs")
    with op.batch_alter_table("pairs") as batch:
        for column in ("judge_reason", "judge_wrong_side", "judge_verdict", "claimed_until", "claimed_by",
                       "priority", "suggested", "signals"):
            batch.drop_column(column)

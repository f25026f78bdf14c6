"""Retention: what ``shadowdiff prune`` (or ``serve --retain``) deleted, per
run, by outcome - so that a report on a pruned serve run still counts the pairs that
needed a verdict and were deleted without one, and a prune can never turn an
INCOMPLETE run into a PASS - and an index on each run's pairs by age, so that a prune
reads only the pairs it deletes.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pruned",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("outcome", sa.String(16), primary_key=True),
        sa.Column("comparable", sa.Boolean, primary_key=True),
        sa.Column("pairs", sa.Integer, nullable=False),
    )
    op.create_index("ix_pairs_run_created", "pairs", ["run_id", "created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_pairs_run_created", "pairs")
    op.drop_table("pruned")

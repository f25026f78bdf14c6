"""Outcome counts per run, for pairs that were compared but not stored.

``shadowdiff serve`` stores every changed comparable pair but keeps identical,
sampled and failed ones only at ``--keep-rate``; a report on such a run needs the
true mix of outcomes, which these counters hold.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_counts",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("of", sa.String(16), primary_key=True),
        sa.Column("outcome", sa.String(16), primary_key=True),
        sa.Column("comparable", sa.Boolean, primary_key=True),
        sa.Column("pairs", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_counts")

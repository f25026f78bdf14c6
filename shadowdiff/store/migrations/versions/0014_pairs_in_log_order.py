"""A run's pairs in log order on an index that holds the whole key they are paged by:
``Store.pairs`` resumes each page after the last one's ``(seq, id)``, and with an index on
``(run_id, seq)`` alone PostgreSQL read and sorted the rest of the run for every page (the
report of a large run grew with the square of its size). ``(run_id, seq, id)`` serves the
same lookups the old index did, so it replaces it.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_pairs_run_seq_id", "pairs", ["run_id", "seq", "id"])
    op.drop_index("ix_pairs_run_seq", "pairs")


def downgrade() -> None:
    op.create_index("ix_pairs_run_seq", "pairs", ["run_id", "seq"])
    op.drop_index("ix_pairs_run_seq_id", "pairs")

"""Teacher-forced scores and graded answers.

``score``: the candidate's teacher-forced reading of the baseline's answer (token
agreement, first disagreement, log-probability drops, KL from the top-k), or why it
could not be scored; ``noise_score`` the same by the replica; ``token_agreement`` the
candidate's agreement on its own, for the histogram and the queue. ``grade``: the
reference, the grader and whether each side's answer is right; ``flip`` the pair's
direction when exactly one of baseline and candidate is right (``correct_to_wrong``:
the candidate got wrong what the baseline got right). Pairs stored before: null.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pairs") as batch:
        batch.add_column(sa.Column("score", sa.JSON))
        batch.add_column(sa.Column("noise_score", sa.JSON))
        batch.add_column(sa.Column("token_agreement", sa.Float))
        batch.add_column(sa.Column("grade", sa.JSON))
        batch.add_column(sa.Column("flip", sa.String(16)))


def downgrade() -> None:
    with op.batch_alter_table("pairs") as batch:
        for name in ("flip", "grade", "token_agreement", "noise_score", "score"):
            batch.drop_column(name)

"""Whole answers: reasoning, refusal and reasoning tokens of the first choice, and the
choices after it, on answers (stores written before hold none of them: null).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("reasoning", sa.Text))
        batch.add_column(sa.Column("refusal", sa.Text))
        batch.add_column(sa.Column("reasoning_tokens", sa.Integer))
        batch.add_column(sa.Column("choices", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        for column in ("choices", "reasoning_tokens", "refusal", "reasoning"):
            batch.drop_column(column)

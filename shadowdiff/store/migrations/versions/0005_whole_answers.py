"""Whole answers: reasoning, refusal and reasoning tokens of the first choice, and the
choices after it (``other_choices``), on answers (stores written before: null).

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
        batch.add_column(sa.Column("other_choices", sa.JSON(none_as_null=True)))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        for column in ("other_choices", "reasoning_tokens", "refusal", "reasoning"):
            batch.drop_column(column)

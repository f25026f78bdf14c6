"""Time to the first answer token (text, tool call or refusal: after a reasoning model's
thinking) on answers, beside the time to the first token of any kind, and the number of
choices, as the usage counts all of them together (stores written before: null).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("ttfat", sa.Float))
        batch.add_column(sa.Column("choice_count", sa.Integer))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("choice_count")
        batch.drop_column("ttfat")

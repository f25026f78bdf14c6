"""Time to the last generated token on answers, so that decoding is timed from the
first token to the last and not to the end of the response, and is not timed at all
when every token came at once. Stores written before: null, so their
answers have no inter-token latency or tokens/s.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("ttlt", sa.Float))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("ttlt")

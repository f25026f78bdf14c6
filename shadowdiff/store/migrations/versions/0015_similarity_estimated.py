"""Whether a pair's similarity is an estimate: past the exact and the banded distance (a
megabyte answer rewritten throughout), the comparison aligns pieces and its similarity is
a lower bound, which a report says. Pairs stored before: null (not recorded).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pairs") as batch:
        batch.add_column(sa.Column("similarity_estimated", sa.Boolean))


def downgrade() -> None:
    with op.batch_alter_table("pairs") as batch:
        batch.drop_column("similarity_estimated")

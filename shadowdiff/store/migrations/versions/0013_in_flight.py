"""What a run's member holds: the requests it was serving that its run had not counted
yet, as of its last heartbeat. A member found lost (killed) adds them to the run's
counts, so that its report and its error gate count them. Members written before: 0.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run_members") as batch:
        batch.add_column(sa.Column("in_flight", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("run_members") as batch:
        batch.drop_column("in_flight")

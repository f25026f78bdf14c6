"""Runs shared by several proxies: a serve run has a name (its deployment)
and a digest of its settings, and one row per process that writes to it, with a
heartbeat. At most one run per name and settings is open at a time (a partial unique
index), so proxies starting at once end in one run. Stores written before: their runs
have no name and no members.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_OPEN = sa.text("finished_at IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("name", sa.String(255)))
        batch.add_column(sa.Column("digest", sa.String(64)))
    op.create_index("uq_runs_open_name", "runs", ["name", "digest"], unique=True,
                    sqlite_where=_OPEN, postgresql_where=_OPEN)
    op.create_table(
        "run_members",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("member", sa.String(64), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("ended", sa.String(16)),
    )


def downgrade() -> None:
    op.drop_table("run_members")
    op.drop_index("uq_runs_open_name", "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("digest")
        batch.drop_column("name")

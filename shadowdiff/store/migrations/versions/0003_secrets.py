"""Secrets the store keeps for itself: the key that blinds the review UI's sides.

The A/B order of a pair must not be derivable from anything a reviewer knows (the
review token is shared by every reviewer), and must be the same for ``shadowdiff
serve`` and ``shadowdiff review`` on one store and across restarts: a random key,
made once, kept here.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "secrets",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.bulk_insert(table, [{"name": "blind_key", "value": secrets.token_hex(32)}])


def downgrade() -> None:
    op.drop_table("secrets")

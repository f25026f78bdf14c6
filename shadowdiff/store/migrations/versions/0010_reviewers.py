"""Reviewer identities: each reviewer signs in with a token of their own,
made by ``shadowdiff reviewers add``, so that a verdict's name is the server's, not
whatever was typed, and one reviewer cannot open another's reveal. Only a digest of
each token is kept. A second secret signs the sessions those tokens open.

Every directional verdict now names a side (``wrong_side``: the side the verdict goes
against). Verdicts written before said a side only for ``factual``; ``minor`` meant
"the candidate is slightly worse" and ``improvement`` "the candidate is better", so
their sides are filled in with what they meant.

The judge now sees each pair in its review page's order, so its reasons can be shown
in their own letters; reasons stored before named the sides, with letters in another
order, so they are told apart (``judge_blind`` is null) and kept from the page until
the reveal.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pairs", sa.Column("judge_blind", sa.Boolean))
    op.create_table(
        "reviewers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("token_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("admin", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
    )
    secrets_table = sa.table("secrets", sa.column("name", sa.String), sa.column("value", sa.Text))
    op.bulk_insert(secrets_table, [{"name": "session_key", "value": secrets.token_hex(32)}])
    reviews = sa.table("reviews", sa.column("verdict", sa.String), sa.column("wrong_side", sa.String))
    for verdict, side in (("minor", "candidate"), ("improvement", "baseline")):
        op.execute(reviews.update().where(reviews.c.verdict == verdict, reviews.c.wrong_side.is_(None))
                   .values(wrong_side=side))


def downgrade() -> None:
    op.execute("DELETE FROM secrets WHERE name = 'session_key'")
    op.drop_table("reviewers")
    with op.batch_alter_table("pairs") as batch:
        batch.drop_column("judge_blind")

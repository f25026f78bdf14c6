"""Where an answer's output token count came from: the server's ``usage``,
the logprobs' token list, the streamed pieces counted, or the server's tokenizer.
Engines other than vLLM (llama.cpp's server) send no usage in a stream; the count then
comes from elsewhere, and how exact it is depends on where. Answers stored before:
null, and their counts were the server's usage (or nothing).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("token_source", sa.String(16)))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("token_source")

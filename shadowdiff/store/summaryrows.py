"""What a run's summary counts, read without its texts: the few columns of each pair that
its outcomes, noise floor, histogram, categories and token agreement come from, streamed
in log order, and its answers counted by the database, grouped by side, success and token
source. Neither reads an answer's text nor any other wide column, and neither holds more
than a page of rows, so a run of any size summarizes in constant memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa

from shadowdiff.store import schema
from shadowdiff.store.order import in_log_order
from shadowdiff.store.speed import inter_token_latency
from shadowdiff.store.store import Store
from shadowdiff.vocabulary import Side

_BATCH = 5_000
# (seq, id) as one integer that sorts as the pair does in log order: seq shifted past
# every 32-bit id
_ID_SPAN = 2**32


class SummaryRow(NamedTuple):
    """One stored pair, as its summary reads it."""

    category: str | None
    outcome: str
    comparable: bool
    noise_outcome: str | None
    similarity: float | None
    score: dict[str, Any] | None
    noise_score: dict[str, Any] | None


class AnswerGroup(NamedTuple):
    """A run's stored answers alike in side, success and token source, counted."""

    side: Side
    ok: bool
    token_source: str | None   # as ``Answer.token_source`` reads it: a count without one is the usage's
    answers: int
    output_tokens: int         # their completion tokens, summed
    decoded: int               # of them, those with an inter-token latency


def summary_rows(store: Store, run_id: str) -> Iterator[SummaryRow]:
    """The run's stored pairs as ``SummaryRow``s, in log order (the order the summary's
    sums were always made in, so they add up to the same last digit), a page at a time on
    the log order's index, each page in a short transaction of its own (on SQLite, a
    transaction holds the store's lock: a proxy writing to it waits for no whole pass)."""
    p = schema.pairs.c
    columns = (p.category, p.outcome, p.comparable, p.noise_outcome, p.similarity, p.score, p.noise_score)

    def read(page: sa.Select[Any]) -> Sequence[Any]:   # (rows: seq, id, then the columns)
        with store.engine.connect() as c:
            return c.execute(page).all()

    for row in in_log_order(read, lambda row: (row.seq, row.id), run_id, _BATCH, columns):
        yield SummaryRow(row[2], row[3], bool(row[4]), *row[5:])


def answer_groups(store: Store, run_id: str) -> list[AnswerGroup]:
    """The run's stored answers, grouped and counted, in the order each group's first
    answer comes in the log (the order a pass over the pairs meets them)."""
    a, p = schema.answers.c, schema.pairs.c
    ok = a.error.is_(None)
    source = sa.func.coalesce(a.token_source, sa.case((a.completion_tokens.is_not(None), "usage")))
    first = sa.func.min(sa.cast(p.seq, sa.BigInteger) * _ID_SPAN + p.id)
    query = (sa.select(a.side, ok, source, sa.func.count(), sa.func.coalesce(sa.func.sum(a.completion_tokens), 0),
                       sa.func.count(inter_token_latency()))
             .select_from(schema.answers.join(schema.pairs, a.pair_id == p.id))
             .where(p.run_id == run_id).group_by(a.side, ok, source).order_by(first))
    with store.engine.connect() as c:
        return [AnswerGroup(Side(side), bool(is_ok), src, int(n), int(tokens), int(decoded))
                for side, is_ok, src, n, tokens, decoded in c.execute(query)]

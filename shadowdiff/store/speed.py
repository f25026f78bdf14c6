"""Percentiles of the answers' speed (time to first token, duration, inter-token
latency, tokens per second), computed by the database so that a run of any size
summarizes in constant memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from shadowdiff.statistics.percentile import nearest_rank
from shadowdiff.store import schema
from shadowdiff.vocabulary import Side


def _inter_token_latency() -> sa.ColumnElement[Any]:
    """``Answer.inter_token_latency`` as SQL (NULL where the property is None)."""
    a = schema.answers.c
    decode = a.ttlt - a.ttft
    # per choice: stores written before 0006 have no count, and held one choice
    tokens = sa.cast(a.completion_tokens, sa.Float) / sa.func.coalesce(a.choice_count, 1)
    return sa.case((sa.and_(a.completion_tokens > 0, tokens > 1, decode > 0), decode / (tokens - 1)),
                   else_=sa.null())


def _tokens_per_second() -> sa.ColumnElement[Any]:
    """``Answer.tokens_per_second`` as SQL: one over the inter-token latency."""
    return 1.0 / _inter_token_latency()


_MEASURES: dict[str, sa.ColumnElement[Any]] = {
    "ttft": schema.answers.c.ttft, "ttfat": schema.answers.c.ttfat, "duration": schema.answers.c.duration,
    "inter_token_latency": _inter_token_latency(), "tokens_per_second": _tokens_per_second(),
}


def percentiles(c: Connection, run_id: str, side: Side, measure: str, ps: Sequence[float]) -> list[float | None]:
    """Nearest-rank percentiles of one measure of a side's answers in the run (see
    ``Store.percentiles``), over the answers that succeeded."""
    a, p = schema.answers.c, schema.pairs.c
    value = _MEASURES[measure]
    where = (p.run_id == run_id, a.side == side.value, a.error.is_(None), value.is_not(None))
    source = schema.answers.join(schema.pairs, a.pair_id == p.id)
    n = int(c.execute(sa.select(sa.func.count()).select_from(source).where(*where)).scalar_one())
    if not n:
        return [None for _ in ps]
    return [float(c.execute(sa.select(value).select_from(source).where(*where).order_by(value)
                            .offset(nearest_rank(n, q)).limit(1))
                  .scalar_one()) for q in ps]

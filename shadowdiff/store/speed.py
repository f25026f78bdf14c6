"""Percentiles of the answers' speed (time to first token, duration, inter-token
latency, tokens per second), computed by the database so that a run of any size
summarizes in constant memory.

Every side's percentiles of every measure come from one query: one read of the run's
answers, each measure ranked by a window (``row_number`` over its values, per side),
and only the rows at or next to a wanted rank returned; the exact nearest rank is then
picked from those few. The database's sorts spill to disk past their memory, so nothing
here grows with the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from shadowdiff.statistics.percentile import nearest_rank
from shadowdiff.store import schema
from shadowdiff.vocabulary import Side


def inter_token_latency() -> sa.ColumnElement[Any]:
    """``Answer.inter_token_latency`` as SQL (NULL where the property is None)."""
    a = schema.answers.c
    decode = a.ttlt - a.ttft
    # per choice: stores written before 0006 have no count, and held one choice
    tokens = sa.cast(a.completion_tokens, sa.Float) / sa.func.coalesce(a.choice_count, 1)
    return sa.case((sa.and_(a.completion_tokens > 0, tokens > 1, decode > 0), decode / (tokens - 1)),
                   else_=sa.null())


def _tokens_per_second() -> sa.ColumnElement[Any]:
    """``Answer.tokens_per_second`` as SQL: one over the inter-token latency."""
    return 1.0 / inter_token_latency()


MEASURES: dict[str, sa.ColumnElement[Any]] = {
    "ttft": schema.answers.c.ttft, "ttfat": schema.answers.c.ttfat, "duration": schema.answers.c.duration,
    "inter_token_latency": inter_token_latency(), "tokens_per_second": _tokens_per_second(),
}

Percentiles = dict[Side, dict[str, list[float | None]]]


def percentiles(c: Connection, run_id: str, wanted: Mapping[str, Sequence[float]],
                side: Side | None = None) -> Percentiles:
    """Nearest-rank percentiles of the run's answers that succeeded, per side (only
    ``side``, if given), for each of ``MEASURES`` named in ``wanted`` (with the
    percentiles wanted of it). A side without a value of a measure has None for it; a
    side with no answer that succeeded is left out."""
    a, p = schema.answers.c, schema.pairs.c
    values = (sa.select(a.side, *(MEASURES[m].label(m) for m in wanted))
              .select_from(schema.answers.join(schema.pairs, a.pair_id == p.id))
              .where(p.run_id == run_id, a.error.is_(None)))
    if side is not None:
        values = values.where(a.side == side.value)
    v = values.subquery("v")
    ranked_columns: list[sa.ColumnElement[Any]] = [v.c.side]
    for m in wanted:
        part = (v.c.side, v.c[m].is_(None))
        ranked_columns += [v.c[m], sa.func.row_number().over(partition_by=part, order_by=v.c[m]).label(f"{m}_rank"),
                           sa.func.count().over(partition_by=part).label(f"{m}_n")]
    ranked = sa.select(*ranked_columns).subquery("ranked")
    near = []
    for m, ps in wanted.items():
        value, rank, n = ranked.c[m], ranked.c[f"{m}_rank"], ranked.c[f"{m}_n"]
        # every rank nearest_rank can give: the first, the last, and those within a rank of
        # q % of n (its exact rounding is Python's, below)
        around = [sa.between((rank - 1) * 100, n * float(q) - 200, n * float(q) + 100) for q in ps]
        near.append(sa.and_(value.is_not(None), sa.or_(rank == 1, rank == n, *around)))
    out: Percentiles = {}
    for row in c.execute(sa.select(ranked).where(sa.or_(*near))).mappings():
        figures = out.setdefault(Side(row["side"]), {m: [None] * len(ps) for m, ps in wanted.items()})
        for m, ps in wanted.items():
            if row[m] is None:
                continue
            for i, q in enumerate(ps):
                if nearest_rank(int(row[f"{m}_n"]), q) == int(row[f"{m}_rank"]) - 1:
                    figures[m][i] = float(row[m])
    return out

"""Percentiles of the answers' speed (time to first token, duration, inter-token
latency, tokens per second), computed by the database so that a run of any size
summarizes in constant memory.

One query counts every measure's values per side; then one reads the run's answers once
(a common table the database materializes), ranks each measure over it once for every
side (``row_number`` over its values, per side), and returns only the rows at the wanted
ranks. Tokens per second is one over the inter-token latency, and its percentiles are
defined from that ranking: the q-th percentile of tokens per second is one over the
(100 - q)-th of the inter-token latency, so that the two agree by construction (the median
of tokens per second is one over the median inter-token latency, and a candidate/baseline
ratio of one is the inverse of the other's), and one sort of the run's answers fewer.
(Ranked apart, nearest rank gave them different answers of an even count: with 20, one
over the 11th-smallest latency against the latency's 10th.) The database's sorts spill to
disk past their memory, so nothing here grows with the run.
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
# A measure that is one over another (always positive): its q-th percentile is one over the
# other's (100 - q)-th.
_RECIPROCALS = {"tokens_per_second": "inter_token_latency"}


def percentiles(c: Connection, run_id: str, wanted: Mapping[str, Sequence[float]],
                side: Side | None = None) -> Percentiles:
    """Nearest-rank percentiles of the run's answers that succeeded, per side (only
    ``side``, if given), for each of ``MEASURES`` named in ``wanted`` (with the
    percentiles wanted of it). A side without a value of a measure has None for it; a
    side with no answer that succeeded is left out."""
    a, p = schema.answers.c, schema.pairs.c
    where = [p.run_id == run_id, a.error.is_(None)] + ([a.side == side.value] if side is not None else [])
    source = schema.answers.join(schema.pairs, a.pair_id == p.id)
    ranked = list(dict.fromkeys(_RECIPROCALS.get(m, m) for m in wanted))
    counts = {Side(row[0]): dict(zip(ranked, map(int, row[1:]), strict=True)) for row in c.execute(
        sa.select(a.side, *(sa.func.count(MEASURES[m]) for m in ranked)).select_from(source).where(*where)
        .group_by(a.side))}
    out: Percentiles = {s: {m: [None for _ in ps] for m, ps in wanted.items()} for s in counts}
    # the run's answers read once (a common table used by every ranking: the database
    # materializes it), each measure ranked over it
    values = (sa.select(a.side, *(MEASURES[m].label(m) for m in ranked)).select_from(source).where(*where)
              .cte("speeds"))
    places: dict[tuple[str, Side], list[tuple[int, str, int]]] = {}
    rankings = []
    for m in ranked:
        # per side, the 1-based rank each wanted figure sits at: (rank, measure, index in its ps)
        for s, n in counts.items():
            if n[m]:
                places[m, s] = ([(nearest_rank(n[m], q) + 1, m, i) for i, q in enumerate(wanted.get(m, ()))]
                                + [(nearest_rank(n[m], 100 - q) + 1, r, i) for r, of in _RECIPROCALS.items()
                                   if of == m and r in wanted for i, q in enumerate(wanted[r])])
        spots = {s: {r for r, _, _ in places[m, s]} for s in counts if (m, s) in places}
        if not spots:
            continue
        value = values.c[m]
        rank = sa.func.row_number().over(partition_by=values.c.side, order_by=value)
        inner = (sa.select(sa.literal(m).label("measure"), values.c.side, value.label("value"), rank.label("rank"))
                 .where(value.is_not(None)).subquery())
        rankings.append(sa.select(inner).where(sa.or_(*(sa.and_(inner.c.side == s.value, inner.c.rank.in_(sorted(r)))
                                                        for s, r in spots.items()))))
    if not rankings:
        return out
    for m, side_name, found, r in c.execute(sa.union_all(*rankings)):
        side = Side(side_name)
        for spot_rank, measure, i in places[m, side]:
            if spot_rank == r:
                out[side][measure][i] = float(found) if measure == m else 1.0 / float(found)
    return out

"""The light columns of a run's pairs that the report's plots draw, in one streamed pass.

``Store.pairs`` reads every answer's text; a plot needs a few numbers per pair. One
query joins each pair to its answers' timings (one outer join per side, by the answers'
primary key) and streams the rows, so a run of any size is read once, in memory that
does not grow with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import sqlalchemy as sa

from shadowdiff.store import schema
from shadowdiff.store.store import Store
from shadowdiff.vocabulary import Side

SIDES = (Side.BASELINE, Side.CANDIDATE, Side.REPLICA)
_BATCH = 2_000


class PlotRow(NamedTuple):
    """One stored pair: its id (the plots' samples are drawn by it), its comparison's
    numbers, and each side's timings in seconds (None for an answer that failed, or that
    side's absence)."""

    id: int
    comparable: bool
    outcome: str
    similarity: float | None
    noise_outcome: str | None
    noise_similarity: float | None
    first_token: int | None
    first_char: int | None
    baseline_ttft: float | None
    candidate_ttft: float | None
    replica_ttft: float | None
    baseline_duration: float | None
    candidate_duration: float | None
    replica_duration: float | None


def plot_rows(store: Store, run_id: str) -> Iterator[PlotRow]:
    """The run's stored pairs as ``PlotRow``s, streamed in no particular order."""
    p = schema.pairs.c
    sides = {side: schema.answers.alias(side.value) for side in SIDES}
    source: sa.FromClause = schema.pairs
    for side, a in sides.items():
        source = source.outerjoin(a, sa.and_(a.c.pair_id == p.id, a.c.side == side.value, a.c.error.is_(None)))
    query = (sa.select(p.id, p.comparable, p.outcome, p.similarity, p.noise_outcome, p.noise_similarity, p.first_token,
                       p.first_char,
                       *(sides[s].c.ttft for s in SIDES), *(sides[s].c.duration for s in SIDES))
             .select_from(source).where(p.run_id == run_id))
    with store.engine.connect() as c:
        for row in c.execution_options(yield_per=_BATCH).execute(query):
            yield PlotRow(row[0], bool(row[1]), *row[2:])

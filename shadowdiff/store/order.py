"""The review queue's order, as SQL: one tuple of sort keys that the report's list of
pairs, the queue page, "next" and a pair page's previous/next all sort by, so that
they cannot disagree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from shadowdiff.store import schema
from shadowdiff.vocabulary import Outcome

# Within a review priority, the worst first: errors, then the most different (queue_order).
_WORST_FIRST = {Outcome.ERROR: 0, Outcome.DIVERGENT: 1, Outcome.NEAR: 2, Outcome.EQUIVALENT: 3}


def queue_order() -> tuple[sa.ColumnElement[Any], ...]:
    """The review queue's order, as SQL sort keys, all ascending: the highest review
    priority first (shadowdiff.triage.signals), and within a priority the worst first (errors,
    then divergent, near, equivalent; then the lowest similarity, none counting as -1),
    then log order. The report's list of pairs, the queue page, "next" and a pair page's
    previous/next all sort by this one tuple, so that they cannot disagree."""
    p = schema.pairs.c
    rank = sa.case(_WORST_FIRST, value=p.outcome, else_=len(_WORST_FIRST))
    return (-p.priority, rank, sa.func.coalesce(p.similarity, -1.0), p.seq, p.id)


def queue_place(row: Mapping[str, Any]) -> sa.ColumnElement[Any]:
    """A pair's place in ``queue_order`` (from its row's priority, outcome, similarity,
    seq and id), as a tuple that ``sa.tuple_(*queue_order())`` compares with: where a
    keyset page resumes, or what a pair's neighbours come before or after."""
    key = (-row["priority"], _WORST_FIRST.get(row["outcome"], len(_WORST_FIRST)),
           -1.0 if row["similarity"] is None else row["similarity"], row["seq"], row["id"])
    return sa.tuple_(*map(sa.literal, key))

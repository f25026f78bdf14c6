"""The orders a run's pairs are read in, as SQL: log order, a page at a time on the index
that holds its whole key (``log_page``), and the review queue's order, one tuple of sort
keys that the report's list of pairs, the queue page, "next" and a pair page's
previous/next all sort by, so that they cannot disagree."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa

from shadowdiff.store import schema
from shadowdiff.vocabulary import Outcome

# Where a run's first page in log order starts: before every (seq, id).
LOG_START = (-1, -1)
T = TypeVar("T")

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


def log_page(run_id: str, after: tuple[int, int], batch: int,
             columns: Sequence[sa.ColumnElement[Any]] = ()) -> sa.Select[Any]:
    """The run's next ``batch`` pairs in log order after the pair at ``after`` (its ``seq``
    and ``id``; ``LOG_START`` for the first page): whole rows, or their ``seq``, ``id`` and
    ``columns``. The filter and the sort are the columns of ``ix_pairs_run_seq_id`` in its
    order, so a page is read from the index where the last one stopped: no page scans or
    sorts the rest of the run."""
    p = schema.pairs.c
    query = sa.select(p.seq, p.id, *columns) if columns else schema.pairs.select()
    return (query.where(p.run_id == run_id, sa.tuple_(p.seq, p.id) > sa.tuple_(*after))
            .order_by(p.seq, p.id).limit(batch))


def in_log_order(read: Callable[[sa.Select[Any]], Sequence[T]], place: Callable[[T], tuple[int, int]],
                 run_id: str, batch: int, columns: Sequence[sa.ColumnElement[Any]] = ()) -> Iterator[T]:
    """Every pair of the run in log order, ``log_page`` after ``log_page``: ``read`` runs a
    page's query and returns its rows; ``place`` is a row's ``(seq, id)``, where the next
    page resumes after the last row."""
    last = LOG_START
    while rows := read(log_page(run_id, last, batch, columns)):
        yield from rows
        last = place(rows[-1])

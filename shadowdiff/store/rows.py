"""Records to rows and rows to records: a pair and its answers as the store writes
them (fitted to their columns), and runs, pairs and answers as they are read back."""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from shadowdiff.answers.records import Answer, Choice, Pair
from shadowdiff.store import schema
from shadowdiff.vocabulary import Side


@dataclass(frozen=True)
class Run:
    id: str
    kind: str
    created_at: datetime
    finished_at: datetime | None
    settings: dict[str, Any]
    name: str | None = None      # a serve run's deployment: the processes that share it (see store.members)


@dataclass(frozen=True)
class StoredPair:
    """A pair as read back: its columns, and its answers by side."""

    row: dict[str, Any]
    answers: dict[Side, Answer]

    def __getitem__(self, column: str) -> Any:
        return self.row[column]


def run_from_row(row: Any) -> Run:
    return Run(row.id, row.kind, row.created_at, row.finished_at, dict(row.settings), row.name)


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def storable(table: sa.Table, row: dict[str, Any]) -> dict[str, Any]:
    """A row fitted to its table, as both backends would keep it: each NUL character as
    U+FFFD (PostgreSQL's text cannot hold NUL, and a model can write one), strings cut to
    their column's length (a client's 300-character category, a long request id) and
    integers held within 32 bits (a server's absurd token count). PostgreSQL refuses what
    does not fit, and one refused pair must not cost the pairs written beside it; SQLite
    would keep it as it came. The comparison has already seen the answer as it came."""
    lengths, integers = _fitting(table)
    fitted = {}
    for name, value in row.items():
        if isinstance(value, str):
            if "\x00" in value:
                value = value.replace("\x00", "\ufffd")
            length = lengths.get(name)
            if length is not None and len(value) > length:
                value = value[:length]
        elif isinstance(value, int) and not isinstance(value, bool) and name in integers:
            value = min(max(value, _INT_MIN), _INT_MAX)
        fitted[name] = value
    return fitted


@functools.cache
def _fitting(table: sa.Table) -> tuple[dict[str, int], frozenset[str]]:
    """A table's string columns' lengths and its integer columns, read once: looking a
    column up in SQLAlchemy's collection per value was most of the cost of storing a pair."""
    lengths = {c.name: length for c in table.c if (length := getattr(c.type, "length", None)) is not None}
    return lengths, frozenset(c.name for c in table.c if isinstance(c.type, sa.Integer))


def pair_row(run_id: str, pair: Pair, now: datetime) -> dict[str, Any]:
    """The ``pairs`` row of a pair of the run, stored at ``now``."""
    comparison, noise = pair.comparison, pair.noise
    return storable(schema.pairs, {
        "run_id": run_id, "key": pair.key, "seq": pair.seq, "category": pair.category,
        "endpoint": pair.endpoint, "prompt": pair.prompt, "request": pair.request,
        "comparable": pair.comparable, "outcome": comparison.outcome.value,
        "similarity": comparison.similarity, "similarity_estimated": comparison.similarity_estimated,
        "difflib_ratio": comparison.difflib_ratio,
        "first_char": comparison.first_char, "first_token": comparison.first_token,
        "length_ratio": comparison.length_ratio, "margin": pair.margin,
        "noise_outcome": noise.outcome.value if noise else None,
        "noise_similarity": noise.similarity if noise else None, "created_at": now,
        "signals": pair.signals, "suggested": pair.suggested, "priority": pair.priority,
        "score": pair.score, "noise_score": pair.noise_score,
        "token_agreement": (pair.score or {}).get("agreement"), "grade": pair.grade, "flip": pair.flip,
    })


def answer_row(pair_id: int, a: Answer) -> dict[str, Any]:
    """The ``answers`` row of one side's answer to the pair ``pair_id``."""
    return storable(schema.answers, {
        "pair_id": pair_id, "side": a.side.value, "model": a.model, "status": a.status, "error": a.error,
        "text": a.text, "finish_reason": a.finish_reason, "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.completion_tokens, "ttft": a.ttft, "ttfat": a.ttfat, "ttlt": a.ttlt,
        "duration": a.duration,
        "attempts": a.attempts, "tokens": a.tokens, "margins": a.margins, "tool_calls": a.tool_calls,
        "reasoning": a.reasoning, "refusal": a.refusal, "reasoning_tokens": a.reasoning_tokens,
        "other_choices": [asdict(c) for c in a.others] or None, "choice_count": len(a.choices),
        "token_source": a.token_source,
    })


def answer_from_row(row: Any) -> Answer:
    return Answer(
        side=Side(row.side), model=row.model, text=row.text, finish_reason=row.finish_reason,
        prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens, ttft=row.ttft, ttfat=row.ttfat,
        ttlt=row.ttlt, duration=row.duration, status=row.status, error=row.error, attempts=row.attempts,
        tokens=row.tokens, margins=row.margins, tool_calls=row.tool_calls, reasoning=row.reasoning,
        refusal=row.refusal, reasoning_tokens=row.reasoning_tokens,
        others=tuple(Choice(**c) for c in row.other_choices or ()), token_source=row.token_source,
    )

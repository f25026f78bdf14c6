"""Serve runs as a proxy leaves them, for the retention tests (``shadowdiff prune``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from shadowdiff.answers.compare import Comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.store import Store, schema
from shadowdiff.vocabulary import Outcome, Side
from tests.support.factories import pair

# (baseline, candidate) answers by outcome: near and divergent need a person's verdict
TEXTS = {
    "identical": ("Same answer.", "Same answer."),
    "equivalent": ("Line one.\nLine two.", "Line one.\n\nLine two."),
    "near": ("The total is 42 dollars in all.", "The total is 43 dollars in all."),
    "divergent": ("Label: Positive", "Completely different words here, nothing alike at all."),
}


def made(key: str, kind: str) -> Pair:
    """A pair of ``kind``'s answers under any key (the factory's keys are k<number>)."""
    return replace(pair(f"k{''.join(filter(str.isdigit, key)) or 0}", *TEXTS[kind]), key=key)


def serve_run(store: Store, n: int = 40, *, unstored_identical: int = 100, name: str | None = None,
              prefix: str = "k") -> str:
    """A serve run as a proxy leaves it: every changed pair stored, most identical ones only
    counted, an error, a sampled pair; its counts say what it saw."""
    run_id = store.create_run("serve", {})
    if name is not None:
        with store.engine.begin() as c:
            c.execute(schema.runs.update().where(schema.runs.c.id == run_id).values(name=name, digest=run_id))
    kinds = list(TEXTS)
    pairs = [made(f"{prefix}{i}", kinds[i % len(kinds)]) for i in range(1, n + 1)]
    ok = made(f"{prefix}{n + 1}", "identical")
    failed = replace(ok, comparison=Comparison(Outcome.ERROR, None, None, None, None, None),
                     answers={**ok.answers, Side.CANDIDATE: Answer(Side.CANDIDATE, "m", "", error="timeout")})
    sampled = replace(made(f"{prefix}{n + 2}", "near"), comparable=False)
    pairs += [failed, sampled]
    assert not store.add_pairs(run_id, pairs)
    counts = Counter(("pairs", p.comparison.outcome.value, p.comparable) for p in pairs)
    counts["pairs", "identical", True] += unstored_identical
    counts["not_compared", "primary_failed", True] += 2
    store.add_counts(run_id, counts)
    return run_id

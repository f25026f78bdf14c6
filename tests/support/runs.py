"""Runs of hand-written pairs in a store, and ``shadowdiff report`` on one (acceptance, agreement, judge, metrics)."""

from __future__ import annotations

from pathlib import Path

from shadowdiff.answers.compare import compare
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.triage.signals import triage_answers
from shadowdiff.vocabulary import Side
from tests.support.cli import Ran, shadowdiff

TEXTS = {
    "same": ("The answer is 4.", "The answer is 4."),                       # identical
    "drift": ("It is usually fine.", "It is typically fine."),              # divergent, wording
    "flip": ("The total is 42 dollars.", "The total is 43 dollars."),       # near, a number changed
    "label": ("Label: Positive", "Label: Negative"),                        # divergent, a label changed
}


def add_run(store: Store, texts: dict[str, tuple[str, str]], *, comparable: bool = True) -> tuple[str, dict[str, int]]:
    run = store.create_run("replay", {})
    pairs = []
    for i, (key, (a, b)) in enumerate(texts.items()):
        base, cand = Answer(Side.BASELINE, "m", a, "stop"), Answer(Side.CANDIDATE, "m", b, "stop")
        comparison = compare(a, b)
        pairs.append(Pair(key, i, "/v1/chat/completions", key, {}, comparison, {Side.BASELINE: base,
                     Side.CANDIDATE: cand}, comparable=comparable, **triage_answers(base, cand, comparison, None)))
    store.add_pairs(run, pairs)
    store.finish_run(run)
    ids = {row["key"]: row["id"] for row in ReviewQueue(store).page(Filters(run_id=run), limit=1000)}
    return run, ids


def make_run(tmp_path: Path) -> tuple[Store, str, dict[str, int]]:
    store = Store.open(tmp_path)
    run, ids = add_run(store, TEXTS)
    return store, run, ids


def run_report(store_dir: Path, *args: str) -> Ran:
    """``shadowdiff report STORE_DIR ARGS``, in this process (``tests/support/cli.py``)."""
    return shadowdiff("report", store_dir, *args)


def flips(n: int) -> dict[str, tuple[str, str]]:
    """``n`` pairs that each need a verdict (a number changed)."""
    return {f"flip{i}": (f"The total is {i} dollars.", f"The total is {i + 1} dollars.") for i in range(n)}

"""Pairs for the review tests, built the way the proxy and replay build them."""

from __future__ import annotations

from shadowdiff.answers.compare import compare
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.store import Store
from shadowdiff.triage.signals import triage
from shadowdiff.vocabulary import Side


def pair(key: str, base: str, cand: str) -> Pair:
    comparison = compare(base, cand)
    t = triage(base, cand, comparison)
    return Pair(key, int(key.lstrip("k") or 0), "/v1/chat/completions", f"prompt {key}", {}, comparison,
                {Side.BASELINE: Answer(Side.BASELINE, "m", base), Side.CANDIDATE: Answer(Side.CANDIDATE, "m", cand)},
                signals=t.as_json(), suggested=t.suggested, priority=t.priority)


def fill(store: Store) -> str:
    run = store.create_run("replay", {})
    store.add_pairs(run, [
        pair("k1", "It is usually fine.", "It is typically fine."),                 # wording
        pair("k2", "The total is 42 dollars.", "The total is 43 dollars."),         # numbers: first
        pair("k3", "Same answer.", "Same answer."),                                 # identical: not queued
        pair("k4", "Label: Positive", "Label: Negative"),                           # label
        pair("k5", "Line one.\nLine two.", "Line one.\n\nLine two."),               # formatting
    ])
    return run

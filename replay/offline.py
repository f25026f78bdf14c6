"""``shadowdiff compare A B``: the replay's comparison and reports for saved answers."""

from __future__ import annotations

from pathlib import Path

from replay import answers
from shadowdiff.compare import Thresholds, compare_answers, error_comparison
from shadowdiff.errors import InputError
from shadowdiff.records import Answer, Pair, Side
from shadowdiff.signals import triage_answers
from shadowdiff.store import Store


def _answer(side: Side, saved: answers.SavedAnswer) -> Answer:
    return Answer(side, None, saved.text, saved.finish_reason, saved.prompt_tokens, saved.completion_tokens,
                  error=saved.error, tool_calls=saved.tool_calls, reasoning=saved.reasoning, refusal=saved.refusal,
                  reasoning_tokens=saved.reasoning_tokens, others=saved.others)


def compare_files(a: Path, b: Path, store: Store, thresholds: Thresholds | None = None) -> tuple[str, int, int]:
    """Compare saved answers ``b`` (candidate) with ``a`` (baseline) into a new run.

    Returns the run id, the pairs stored, and the answers that had no partner.
    """
    thresholds = thresholds or Thresholds()
    run_id = store.create_run("compare", {"baseline": str(a.resolve()), "candidate": str(b.resolve()),
                                          "thresholds": {"near": thresholds.near}})
    candidates: dict[str, answers.SavedAnswer] = {}
    for item in answers.read(b):
        if isinstance(item, answers.BadAnswer):
            store.add_skipped(run_id, item.line, f"{b.name}: {item.reason}")
        elif item.key in candidates:
            store.add_skipped(run_id, item.line, f"{b.name}: duplicate id {item.key!r}")
        else:
            candidates[item.key] = item
    stored = unmatched = 0
    for item in answers.read(a):
        if isinstance(item, answers.BadAnswer):
            store.add_skipped(run_id, item.line, f"{a.name}: {item.reason}")
            continue
        other = candidates.pop(item.key, None)
        if other is None:
            unmatched += 1
            store.add_skipped(run_id, item.line, f"{a.name}: id {item.key!r} has no answer in {b.name}")
            continue
        base, cand = _answer(Side.BASELINE, item), _answer(Side.CANDIDATE, other)
        comparison = (compare_answers(base, cand, thresholds) if base.ok and cand.ok
                      else error_comparison(base.finish_reason, cand.finish_reason))
        pair = Pair(item.key, item.line, "", item.prompt, {}, comparison,
                    {Side.BASELINE: base, Side.CANDIDATE: cand}, **triage_answers(base, cand, comparison, None))
        if store.add_pair(run_id, pair):
            stored += 1
        else:
            store.add_skipped(run_id, item.line, f"{a.name}: duplicate id {item.key!r}")
    for leftover in candidates.values():
        unmatched += 1
        store.add_skipped(run_id, leftover.line, f"{b.name}: id {leftover.key!r} has no answer in {a.name}")
    store.finish_run(run_id)
    if not stored:
        raise InputError(f"no answer in {a} has a partner in {b}: nothing to compare (ids differ?)")
    return run_id, stored, unmatched

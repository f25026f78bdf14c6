"""``shadowdiff compare A B``: the replay's comparison and reports for saved answers.

An answer without a partner in the other file is kept, as an *unpartnered* pair: an
errored pair whose missing side says which file has no answer with its id. It counts
as an error (against ``--max-errors``), as a request one side failed to answer does,
so that a candidate file missing answers never passes as if they had not been asked.
How many each side misses is recorded with the run (``UNPARTNERED`` in its settings,
and so in summary.json).
"""

from __future__ import annotations

from pathlib import Path

from shadowdiff.answers.compare import Thresholds, compare_answers, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.errors import InputError
from shadowdiff.replay import answers
from shadowdiff.store import Store
from shadowdiff.triage.pairing import assemble_pair
from shadowdiff.vocabulary import Side

UNPARTNERED = "unpartnered"          # the run's setting: {"no_candidate_answer": n, "no_baseline_answer": m}
NO_CANDIDATE, NO_BASELINE = "no_candidate_answer", "no_baseline_answer"


def _answer(side: Side, saved: answers.SavedAnswer) -> Answer:
    return Answer(side, None, saved.text, saved.finish_reason, saved.prompt_tokens, saved.completion_tokens,
                  error=saved.error, tool_calls=saved.tool_calls, reasoning=saved.reasoning, refusal=saved.refusal,
                  reasoning_tokens=saved.reasoning_tokens, others=saved.others)


def _read_candidates(b: Path) -> tuple[dict[str, answers.SavedAnswer], list[tuple[int, str]]]:
    """B's answers by id (the first of each id), and its lines that made no answer."""
    candidates: dict[str, answers.SavedAnswer] = {}
    skipped: list[tuple[int, str]] = []
    for item in answers.read(b):
        if isinstance(item, answers.BadAnswer):
            skipped.append((item.line, f"{b.name}: {item.reason}"))
        elif item.key in candidates:
            skipped.append((item.line, f"{b.name}: duplicate id {item.key!r}"))
        else:
            candidates[item.key] = item
    return candidates, skipped


def _baseline_keys(a: Path) -> set[str]:
    """The ids A answers (a first pass, ids only): the unpartnered are known, and recorded
    with the run, before its first pair."""
    return {item.key for item in answers.read(a) if isinstance(item, answers.SavedAnswer)}


def _unpartnered_pair(present: Side, saved: answers.SavedAnswer, missing_from: Path) -> Pair:
    """An answer with no partner, as an errored pair: the missing side's error names the
    file it is missing from."""
    missing = Side.CANDIDATE if present is Side.BASELINE else Side.BASELINE
    error = f"unpartnered: no answer with id {saved.key!r} in {missing_from.name} (the {missing.value}'s file)"
    answers_by_side = {present: _answer(present, saved), missing: Answer(missing, None, "", error=error)}
    base, cand = answers_by_side[Side.BASELINE], answers_by_side[Side.CANDIDATE]
    comparison = error_comparison(base.finish_reason, cand.finish_reason)
    return assemble_pair(saved.key, saved.line, "", saved.prompt, {}, answers_by_side, comparison)


def compare_files(a: Path, b: Path, store: Store, thresholds: Thresholds | None = None) -> tuple[str, int, int]:
    """Compare saved answers ``b`` (candidate) with ``a`` (baseline) into a new run.

    Returns the run id, the pairs of two answers stored, and the answers that had no
    partner (each stored as an unpartnered pair too).
    """
    thresholds = thresholds or Thresholds()
    candidates, b_skipped = _read_candidates(b)
    a_keys = _baseline_keys(a)
    unpartnered = {NO_CANDIDATE: len(a_keys - candidates.keys()), NO_BASELINE: len(candidates.keys() - a_keys)}
    run_id = store.create_run("compare", {"baseline": str(a.resolve()), "candidate": str(b.resolve()),
                                          "thresholds": {"near": thresholds.near}, UNPARTNERED: unpartnered})
    # A's and B's line numbers are two files': a line of each, skipped, is two records
    for line, reason in b_skipped:
        store.add_skipped(run_id, line, reason, once=False)
    stored, missed = 0, {NO_CANDIDATE: 0, NO_BASELINE: 0}
    seen: set[str] = set()
    for item in answers.read(a):
        if isinstance(item, answers.BadAnswer):
            store.add_skipped(run_id, item.line, f"{a.name}: {item.reason}", once=False)
            continue
        if item.key in seen:
            store.add_skipped(run_id, item.line, f"{a.name}: duplicate id {item.key!r}", once=False)
            continue
        seen.add(item.key)
        other = candidates.pop(item.key, None)
        if other is None:
            missed[NO_CANDIDATE] += 1
            store.add_pair(run_id, _unpartnered_pair(Side.BASELINE, item, b))
            continue
        base, cand = _answer(Side.BASELINE, item), _answer(Side.CANDIDATE, other)
        comparison = (compare_answers(base, cand, thresholds) if base.ok and cand.ok
                      else error_comparison(base.finish_reason, cand.finish_reason))
        store.add_pair(run_id, assemble_pair(item.key, item.line, "", item.prompt, {},
                                             {Side.BASELINE: base, Side.CANDIDATE: cand}, comparison))
        stored += 1
    for leftover in candidates.values():
        missed[NO_BASELINE] += 1
        store.add_pair(run_id, _unpartnered_pair(Side.CANDIDATE, leftover, a))
    store.finish_run(run_id)
    if missed != unpartnered:   # the first pass read another A: the run's record would be wrong
        raise InputError(f"{a} changed while it was read; compare it again once it is written")
    if not stored:
        raise InputError(f"no answer in {a} has a partner in {b}: nothing to compare (ids differ?)")
    return run_id, stored, sum(missed.values())

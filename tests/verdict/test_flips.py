"""Flips (shadowdiff/verdict/flips.py): a pair graded on each side, a run's flips counted and tested,
the gate on them, and what the reports and the review queue make of them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from shadowdiff.answers.compare import compare_answers, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.report.summary import summarize
from shadowdiff.report.write import write_reports
from shadowdiff.statistics.confidence import mcnemar_exact, paired_difference, rate_upper
from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.triage.grading import Grader, default_grader
from shadowdiff.triage.signals import triage_answers
from shadowdiff.verdict.flips import (
    CORRECT_TO_WRONG,
    FLIP_PRIORITY,
    WRONG_TO_CORRECT,
    FlipTally,
    flip_lines,
    grade_pair,
)
from shadowdiff.verdict.result import Acceptance
from shadowdiff.vocabulary import Decision, Side
from tests.support import cli


def _pair(key: str, base: str, cand: str, replica: str | None = None) -> Pair:
    answers = {Side.BASELINE: Answer(Side.BASELINE, "m", base), Side.CANDIDATE: Answer(Side.CANDIDATE, "m", cand)}
    if replica is not None:
        answers[Side.REPLICA] = Answer(Side.REPLICA, "m", replica)
    b, c = answers[Side.BASELINE], answers[Side.CANDIDATE]
    comparison = compare_answers(b, c)
    noise = compare_answers(b, answers[Side.REPLICA]) if replica is not None else None
    return Pair(key, int(key.lstrip("k")), "/v1/chat/completions", f"prompt {key}", {}, comparison, answers,
                noise=noise, **triage_answers(b, c, comparison, None))


def test_mcnemar_exact_against_its_closed_forms() -> None:
    assert mcnemar_exact(0, 0) == 1.0                                   # no flips: no evidence of a change
    assert mcnemar_exact(0, 5) == pytest.approx(2 * 0.5 ** 5)           # 0.0625: five flips one way is not yet 5 %
    assert mcnemar_exact(0, 6) == pytest.approx(2 * 0.5 ** 6)
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 2 ** 10)
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)                   # two-sided
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(40, 60) == pytest.approx(0.0569, abs=5e-4)     # the normal approximation's neighbourhood
    with pytest.raises(ValueError, match="negative"):
        mcnemar_exact(-1, 2)


def test_a_pair_graded_on_each_side() -> None:
    flipped = grade_pair(_pair("k1", "The answer is 42.", "The answer is 41.", "It is 42."), 42, Grader.NUMBER)
    assert flipped.grade == {"reference": 42, "grader": "number", "baseline": True, "candidate": False,
                             "replica": True, "found": {"baseline": "42", "candidate": "41", "replica": "42"}}
    assert flipped.flip == CORRECT_TO_WRONG
    assert flipped.suggested == "factual"
    assert flipped.signals and flipped.signals[0] == {
        "kind": "flip", "value": {"baseline": True, "candidate": False, "grader": "number"},
        "reason": "by the reference answer (number grader), the baseline is right and the candidate wrong"}
    # above anything triage gives (the changed number's 100), whichever way it flipped
    assert flipped.priority == FLIP_PRIORITY + 100
    back = grade_pair(_pair("k2", "The answer is 41.", "The answer is 42."), 42, Grader.NUMBER)
    assert back.flip == WRONG_TO_CORRECT and back.priority == flipped.priority
    assert back.grade and back.grade["replica"] is None                 # no replica: not graded
    alike = _pair("k3", "Answer: B", "The answer is (B).")
    assert grade_pair(alike, "B", Grader.CHOICE).flip is None
    assert grade_pair(alike, "B", Grader.CHOICE).priority == alike.priority
    failed = replace(alike, answers={**alike.answers, Side.CANDIDATE: Answer(Side.CANDIDATE, "m", error="boom")},
                     comparison=error_comparison())
    graded = grade_pair(failed, "B", Grader.CHOICE)
    assert graded.grade and graded.grade["candidate"] is None and graded.flip is None


def test_a_lower_case_option_reference_shows_the_flip_and_only_the_flip() -> None:
    """A reference "(b)" with no grader named: the letters are compared, so "b" and "(b)"
    are the same answer (no flip) and "(c)" a wrong one (a flip)."""
    grader = default_grader("(b)")
    assert grade_pair(_pair("k1", "Answer: b", "Answer: (c)"), "(b)", grader).flip == CORRECT_TO_WRONG
    assert grade_pair(_pair("k2", "Answer: (b)", "Answer: b"), "(b)", grader).flip is None
    assert grade_pair(_pair("k3", "Answer: B", "Answer: (b)"), "b", default_grader("b")).flip is None


def test_a_hedged_candidate_answer_is_a_flip() -> None:
    """Naming two answers is not the right one: the hedge shows as correct→wrong, with what was read."""
    flipped = grade_pair(_pair("k1", "Answer: 42", "Answer: 42 or 43"), 42, Grader.NUMBER)
    assert flipped.flip == CORRECT_TO_WRONG
    assert flipped.grade and flipped.grade["found"] == {"baseline": "42", "candidate": "42 or 43"}
    assert grade_pair(_pair("k2", "Answer: B", "Answer: B or C"), "B", Grader.CHOICE).flip == CORRECT_TO_WRONG
    assert grade_pair(_pair("k3", "Answer: 42 + 1 = 43", "Answer: 43"), 42, Grader.NUMBER).flip is None


def test_a_runs_flips_are_counted_and_tested() -> None:
    tally = FlipTally()
    grades = ([(True, True, True)] * 50 + [(True, False, True)] * 6 + [(False, True, False)] * 1
              + [(False, False, False)] * 3 + [(True, True, False)] * 2)
    for base, cand, replica in grades:
        tally.add({"reference": "x", "grader": "exact", "baseline": base, "candidate": cand, "replica": replica})
    tally.add({"reference": "x", "grader": "exact", "baseline": True, "candidate": None, "replica": None})
    tally.add(None)                                                     # a pair without a reference
    flips = tally.as_json()
    assert flips is not None
    assert (flips["graded"], flips["references"], flips["not_graded"]) == (62, 63, 1)
    assert (flips["baseline_correct"], flips["candidate_correct"]) == (58, 53)
    assert (flips["correct_to_wrong"], flips["wrong_to_correct"]) == (6, 1)
    assert flips["mcnemar_p"] == pytest.approx(mcnemar_exact(6, 1))
    assert flips["correct_to_wrong_rate"] == pytest.approx(6 / 58)
    assert flips["correct_to_wrong_upper"] == pytest.approx(rate_upper(6, 58))
    change = paired_difference(52, 1, 6, 3)
    assert change is not None and flips["accuracy_change"]["estimate"] == pytest.approx((53 - 58) / 62)
    assert flips["accuracy_change"]["low"] == pytest.approx(change.low)
    noise = flips["noise"]
    assert (noise["graded"], noise["correct_to_wrong"], noise["wrong_to_correct"]) == (62, 2, 0)
    assert noise["replica_correct"] == 56
    assert FlipTally().as_json() is None                                # no reference: no flips at all


def test_references_none_could_grade_are_counted_and_keep_the_gate_from_passing() -> None:
    """Every pattern ran out of time: the references are there, the flips unknown."""
    tally = FlipTally()
    for _ in range(4):
        tally.add({"reference": "(a|aa)+$", "grader": "regex", "baseline": None, "candidate": None,
                   "problems": {"baseline": "out of time", "candidate": "out of time"}})
    flips = tally.as_json()
    assert flips == {"graded": 0, "references": 4, "not_graded": 4, "ungradable_answers": 8}
    assert flip_lines(flips) == ["4 pairs had a reference answer, and none was graded on both sides (8 answers the "
                                 "grader could not grade: a pattern out of time)"]
    verdict = Acceptance(Decision.PASS)
    verdict.gate_flips(flips, 0)
    assert verdict.decision is Decision.INCOMPLETE and "none could be graded" in verdict.reasons[-1]
    # some graded, some not: no flip seen is no proof of none among the rest
    tally.add({"reference": "a", "grader": "regex", "baseline": True, "candidate": True})
    partly = Acceptance(Decision.PASS)
    partly.gate_flips(tally.as_json(), 0)
    assert partly.decision is Decision.INCOMPLETE and "a flip among them would be unseen" in partly.reasons[-1]


def _with_flips(store: Store) -> str:
    run = store.create_run("replay", {})
    pairs = [
        grade_pair(_pair("k1", "The answer is 42.", "The answer is 41.", "It is 42."), 42, Grader.NUMBER),
        grade_pair(_pair("k2", "Paris", "paris.", "Paris"), "Paris", Grader.EXACT),
        grade_pair(_pair("k3", "The total is 3 dollars.", "The total is 4 dollars."), 4, Grader.NUMBER),
        _pair("k4", "The total is 42 dollars.", "The total is 43 dollars."),          # a changed number: 100
        _pair("k5", "Same.", "Same."),
    ]
    store.add_pairs(run, pairs)
    store.finish_run(run)
    return run


def test_flips_in_the_summary_the_reports_and_the_queue(store: Store, tmp_path: Path) -> None:
    run = _with_flips(store)
    flips = summarize(store, run).flips
    assert flips is not None
    assert (flips["graded"], flips["correct_to_wrong"], flips["wrong_to_correct"]) == (3, 1, 1)
    paths = write_reports(store, run, tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["flips"]["correct_to_wrong"] == 1 and summary["flips"]["noise"]["graded"] == 2
    assert "flips: 1 correct→wrong (the baseline right, the candidate wrong), 1 wrong→correct" in paths.summary_text
    for name in ("report.md", "report.html"):
        text = (tmp_path / "out" / name).read_text()
        assert "Graded against reference answers" in text and "McNemar" in text, name
    rows = [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]
    assert [r["flip"] for r in rows] == [CORRECT_TO_WRONG, None, WRONG_TO_CORRECT, None, None]
    assert rows[0]["grade"]["found"] == {"baseline": "42", "candidate": "41", "replica": "42"}
    # the flipped pairs first, above the changed number; the graded pair that did not flip in triage's place
    queue = ReviewQueue(store)
    assert [r["key"] for r in queue.page(Filters(run_id=run))][:3] == ["k1", "k3", "k4"]
    assert [r["key"] for r in queue.page(Filters(run_id=run, signal="flip"))] == ["k1", "k3"]


def test_the_gate_on_flips(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    run = _with_flips(store)
    strict = write_reports(store, run, tmp_path / "a", min_reviewed=0.0, max_flips=0).acceptance
    assert strict.decision is Decision.FAIL
    assert "1 correct→wrong flips (the baseline right, the candidate wrong, by the reference answers) in 3 " \
           "graded pairs, above --max-flips 0" in strict.reasons
    # --min-reviewed 0 lets no flip (nor a changed number) go unreviewed, whatever --max-flips allows
    unseen = write_reports(store, run, tmp_path / "b", min_reviewed=0.0, max_flips=1, min_compared=1).acceptance
    assert unseen.decision is Decision.INCOMPLETE
    assert any("3 unreviewed pairs show a sign of a factual regression" in r for r in unseen.reasons), unseen.reasons
    queue = ReviewQueue(store)
    for row in queue.page(Filters(run_id=run), limit=100):
        queue.add_review(row["id"], "ana", "wording")
    assert write_reports(store, run, tmp_path / "b", max_flips=1, min_compared=1).acceptance.decision \
        is Decision.PASS
    assert write_reports(store, run, tmp_path / "c", min_compared=1).acceptance.decision is Decision.PASS
    # reviewed or not, the flips the gate counts still fail it
    assert write_reports(store, run, tmp_path / "c", max_flips=0, min_compared=1).acceptance.decision \
        is Decision.FAIL
    ungraded = store.create_run("replay", {})
    store.add_pairs(ungraded, [_pair("k1", "The total is 42 dollars.", "The total is 43 dollars.")])
    store.finish_run(ungraded)
    nothing = write_reports(store, ungraded, tmp_path / "d", min_reviewed=0.0, max_flips=5).acceptance
    assert nothing.decision is Decision.INCOMPLETE   # a gate that checked nothing does not pass
    assert any("--max-flips needs pairs graded against a reference answer" in r for r in nothing.reasons)
    store.close()

    def report(*options: str) -> cli.Ran:
        return cli.shadowdiff("report", str(tmp_path), "--run", run, "--min-compared", "1", *options)

    assert report("--max-flips", "0").returncode == 1
    assert report("--max-flips", "1").returncode == 0
    bad = report("--max-flips", "-1")
    assert bad.returncode == 3 and "Traceback" not in bad.stderr


def test_a_run_where_neither_side_matched_any_reference_says_why_that_may_be() -> None:
    flips = {"graded": 10, "references": 10, "not_graded": 0, "ungradable_answers": 0, "baseline_correct": 0,
             "candidate_correct": 0, "baseline_accuracy": 0.0, "candidate_accuracy": 0.0, "correct_to_wrong": 0,
             "wrong_to_correct": 0, "mcnemar_p": 1.0, "correct_to_wrong_upper": 0.26}
    first = flip_lines(flips)[0]
    assert first.startswith("graded against a reference: 10 pairs; right: baseline 0 (0.0 %)")
    assert "neither side matched any reference" in first and "a simulator's synthetic text matches none" in first
    assert "neither side" not in flip_lines({**flips, "baseline_correct": 1, "baseline_accuracy": 0.1})[0]

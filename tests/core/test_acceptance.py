"""The acceptance verdict and the exit code of ``shadowdiff report``."""

from __future__ import annotations

import json
from pathlib import Path

from shadowdiff.acceptance import Decision, acceptance
from shadowdiff.compare import compare
from shadowdiff.records import Answer, Pair, Side
from shadowdiff.signals import triage_answers
from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue
from tests.support.runs import TEXTS, add_run, flips, make_run, run_report


def test_incomplete_until_reviewed_then_pass(tmp_path: Path) -> None:
    store, run, ids = make_run(tmp_path)
    result = acceptance(store, run)
    assert result.decision is Decision.INCOMPLETE
    assert (result.identical, result.needs_review, result.unreviewed) == (1, 3, 3)
    assert result.suggested_unreviewed == {"factual": 2, "wording": 1}
    queue = ReviewQueue(store)
    queue.add_review(ids["drift"], "ana", "wording")
    queue.add_review(ids["flip"], "ana", "minor", "candidate", note="rounding, both fine")
    assert acceptance(store, run, min_reviewed=0.6).decision is Decision.PASS
    queue.add_review(ids["label"], "ana", "ambiguous")
    result = acceptance(store, run)
    assert result.decision is Decision.PASS
    assert result.verdicts == {"wording": 1, "minor": 1, "ambiguous": 1}
    store.close()
    answer = run_report(tmp_path)
    assert answer.returncode == 0
    assert "1 identical, 0 equivalent, 1 wording-only, 1 ambiguous, 0 unreviewed" in answer.stdout
    assert ("against the candidate: 0 factual regressions, 0 pairs where the baseline is better, 1 minor regression"
            in answer.stdout)
    assert "verdict: PASS" in answer.stdout


def test_two_reviewers_calling_one_pair_factual_are_one_regression(tmp_path: Path) -> None:
    store, run, ids = make_run(tmp_path)
    queue = ReviewQueue(store)
    queue.add_review(ids["flip"], "bob", "factual", "candidate")
    queue.add_review(ids["flip"], "ana", "factual", "candidate")
    result = acceptance(store, run, min_reviewed=0)
    assert result.decision is Decision.FAIL and result.verdicts["factual"] == 1
    assert result.reasons[0].startswith("1 factual regression(s)") and len(result.factual) == 2
    store.close()


def test_one_factual_verdict_fails_the_run_and_names_the_pair(tmp_path: Path) -> None:
    store, run, ids = make_run(tmp_path)
    queue = ReviewQueue(store)
    queue.add_review(ids["flip"], "bob", "factual", "candidate", "43 is wrong, 42 is right")
    queue.add_review(ids["flip"], "ana", "wording")  # a disagreement: the least favourable verdict stands
    queue.add_review(ids["label"], "ana", "factual", "baseline", "the baseline was wrong here")
    result = acceptance(store, run, min_reviewed=0)
    assert result.decision is Decision.FAIL
    assert [f["key"] for f in result.factual] == ["flip"]
    assert result.disagreements == 1
    store.close()
    answer = run_report(tmp_path, "--min-reviewed", "0")
    assert answer.returncode == 1
    assert "factual regression: pair flip" in answer.stdout
    assert "43 is wrong, 42 is right" in answer.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["acceptance"]["decision"] == "FAIL"
    assert "FAIL" in (tmp_path / "report.html").read_text()


def test_judge_suggestions_do_not_count(tmp_path: Path) -> None:
    store, run, ids = make_run(tmp_path)
    queue = ReviewQueue(store)
    for key in ("drift", "flip", "label"):
        queue.set_judge(ids[key], "equivalent", None, "looks the same to me")
    assert acceptance(store, run).decision is Decision.INCOMPLETE
    store.close()


def test_errors_make_a_run_incomplete(tmp_path: Path) -> None:
    from shadowdiff.compare import error_comparison

    store = Store.open(tmp_path)
    run = store.create_run("replay", {})
    store.add_pairs(run, [Pair("e", 0, "", "p", {}, error_comparison(), {
        Side.BASELINE: Answer(Side.BASELINE, "m", "x"),
        Side.CANDIDATE: Answer(Side.CANDIDATE, "m", error="HTTP 500")})])
    store.finish_run(run)
    result = acceptance(store, run, max_errors=1)   # an error allowed, but nothing compared: no PASS
    assert result.decision is Decision.INCOMPLETE and "nothing was compared" in result.text()
    same = TEXTS["same"]
    store.finish_run(run, finished=False)   # a finished run takes no more pairs
    store.add_pairs(run, [Pair("s", 1, "", "p", {}, compare(*same), {
        Side.BASELINE: Answer(Side.BASELINE, "m", same[0]), Side.CANDIDATE: Answer(Side.CANDIDATE, "m", same[1])})])
    store.finish_run(run)
    assert acceptance(store, run).decision is Decision.INCOMPLETE
    assert acceptance(store, run, max_errors=1).decision is Decision.PASS
    store.add_skipped(run, 7, "not valid JSON")   # a line that made no pair counts like an error
    result = acceptance(store, run, max_errors=1)
    assert result.decision is Decision.INCOMPLETE and result.skipped == 1
    assert "1 log lines made no pair" in result.text()
    assert acceptance(store, run, max_errors=2).decision is Decision.PASS
    store.close()


def test_an_unfinished_run_is_incomplete_and_says_how_to_go_on(tmp_path: Path) -> None:
    """A replay killed part-way saw only part of its log: what it saw decides nothing."""
    store = Store.open(tmp_path)
    run = store.create_run("replay", {})
    same = TEXTS["same"]
    store.add_pairs(run, [Pair("s", 1, "", "p", {}, compare(*same), {
        Side.BASELINE: Answer(Side.BASELINE, "m", same[0]), Side.CANDIDATE: Answer(Side.CANDIDATE, "m", same[1])})])
    result = acceptance(store, run)
    assert result.decision is Decision.INCOMPLETE and "--resume" in result.text()
    store.finish_run(run)
    assert acceptance(store, run).decision is Decision.PASS
    store.finish_run(run, finished=False)   # a --resume opens it again until it, too, finishes
    assert acceptance(store, run).decision is Decision.INCOMPLETE
    serving = store.create_run("serve", {})
    store.add_pairs(serving, [Pair("s", 1, "", "p", {}, compare(*same), {
        Side.BASELINE: Answer(Side.BASELINE, "m", same[0]), Side.CANDIDATE: Answer(Side.CANDIDATE, "m", same[1])})])
    assert "once they have all stopped" in acceptance(store, serving).text()
    store.close()


def test_a_run_of_sampled_pairs_only_compared_nothing(tmp_path: Path) -> None:
    """--temperature keep: every pair sampled, none comparable; identical-looking or not, no PASS."""
    store = Store.open(tmp_path)
    run, _ = add_run(store, TEXTS, comparable=False)
    result = acceptance(store, run, min_reviewed=0)
    assert result.decision is Decision.INCOMPLETE and result.sampled == 3
    store.close()


def test_factual_verdicts_against_the_baseline_are_not_regressions(tmp_path: Path) -> None:
    store, run, ids = make_run(tmp_path)
    queue = ReviewQueue(store)
    queue.add_review(ids["flip"], "ana", "factual", "baseline")
    queue.add_review(ids["label"], "ana", "factual", "candidate")
    queue.add_review(ids["drift"], "ana", "wording")
    result = acceptance(store, run)
    assert result.decision is Decision.FAIL
    assert result.verdicts == {"factual": 1, "factual_baseline": 1, "wording": 1}
    assert "against the candidate: 1 factual regression," in result.text()
    assert "1 pair where the baseline is factually wrong and the candidate right" in result.text()


def test_options_out_of_range_are_usage_errors(tmp_path: Path) -> None:
    make_run(tmp_path)[0].close()
    for args in (("--min-reviewed", "-1"), ("--min-reviewed", "90"), ("--max-errors", "-1"), ("--min-compared", "0"),
                 ("--min-reviewed", "nan")):
        answer = run_report(tmp_path, *args)
        assert answer.returncode == 3, (args, answer.stderr)   # no decision: never read as FAIL or INCOMPLETE
        assert "Invalid value" in answer.stderr


def test_counts_on_every_database(store: Store) -> None:
    """The decision is counted by the database: every kind of pair, reviewed or not, in
    a run beside another run whose pairs and reviews must not leak into it."""
    texts = {**TEXTS, "space": ("The answer is 4.", "The answer is 4. "),       # equivalent
             "space2": ("It is 5.", "It is 5. "),                                 # equivalent, then reviewed
             "same2": ("Yes.", "Yes."),
             **{f"flip{i}": (f"The total is {i} dollars.", f"The total is {i + 1} dollars.") for i in range(5)}}
    run, ids = add_run(store, texts)
    other, other_ids = add_run(store, TEXTS)
    sampled, _ = add_run(store, {"s": TEXTS["flip"]}, comparable=False)
    queue = ReviewQueue(store)
    queue.add_review(other_ids["flip"], "ana", "factual", "candidate", "in the other run")
    queue.add_review(ids["space2"], "ana", "equivalent")
    queue.add_review(ids["drift"], "ana", "wording")
    queue.add_review(ids["drift"], "bob", "minor", "candidate")
    queue.set_judge(ids["flip0"], "factual", "candidate", "43 is wrong")
    queue.set_judge(ids["flip1"], "equivalent", None, "the same")

    result = acceptance(store, run)
    assert result.decision is Decision.INCOMPLETE
    assert (result.identical, result.equivalent, result.errors, result.sampled) == (2, 1, 0, 0)
    assert (result.needs_review, result.unreviewed, result.disagreements) == (8, 7, 1)
    assert result.verdicts == {"equivalent": 1, "minor": 1}
    assert result.suggested_unreviewed == {"factual": 7}
    assert result.judge_unreviewed == {"factual (candidate wrong)": 1, "equivalent": 1}
    assert result.factual == []
    assert "7 of 8 pairs changed in substance are unreviewed (12.5 % reviewed" in result.text()

    failing = acceptance(store, other, min_reviewed=0)
    assert failing.decision is Decision.FAIL
    assert failing.factual == [{"pair_id": other_ids["flip"], "key": "flip", "reviewer": "ana",
                                "note": "in the other run"}]
    assert acceptance(store, sampled).sampled == 1
    assert acceptance(store, sampled).decision is Decision.INCOMPLETE   # sampled pairs are not comparable: no evidence


def test_fewer_compared_pairs_than_min_compared_is_incomplete(tmp_path: Path) -> None:
    store, _, ids = make_run(tmp_path)
    queue = ReviewQueue(store)
    for key in ("drift", "flip", "label"):
        queue.add_review(ids[key], "ana", "wording")
    store.close()
    assert run_report(tmp_path, "--min-compared", "4").returncode == 0      # 4 pairs, all answered
    short = run_report(tmp_path, "--min-compared", "5")
    assert short.returncode == 2
    assert "only 4 comparable pairs were answered by both sides; 5 required (--min-compared)" in short.stdout
    assert json.loads((tmp_path / "summary.json").read_text())["acceptance"]["compared"] == 4


def test_changed_pairs_a_proxy_dropped_keep_the_verdict_from_passing(tmp_path: Path) -> None:
    """A serve run whose store failed longer than the queue held: the changed pairs it
    dropped are counted, and they need a verdict that nobody can give."""
    from shadowdiff.store.writer import PairWriter

    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    writer = PairWriter(store, run, max_delay=0.01, max_bytes=1)   # one pair at a time: the second is dropped
    for i, (key, (a, b)) in enumerate(TEXTS.items()):
        base, cand = Answer(Side.BASELINE, "m", a, "stop"), Answer(Side.CANDIDATE, "m", b, "stop")
        comparison = compare(a, b)
        writer.add_counts({("pairs", comparison.outcome.value, True): 1})
        pair = Pair(key, i, "/v1/chat/completions", key, {}, comparison, {Side.BASELINE: base, Side.CANDIDATE: cand},
                    **triage_answers(base, cand, comparison, None))
        if key == "label":
            writer._bytes = 1            # as if the queue were full when it came
        writer.submit(pair, 1)
        writer._bytes = 0
    writer.close()
    store.finish_run(run)
    queue = ReviewQueue(store)
    for row in queue.page(Filters(run_id=run), limit=100):
        queue.add_review(row["id"], "ana", "wording")
    result = acceptance(store, run)
    assert result.dropped == 1 and result.unreviewed == 1
    assert result.decision is Decision.INCOMPLETE
    assert "1 of them dropped before reaching the store (never reviewable)" in result.text()
    assert acceptance(store, run, min_reviewed=0.5).decision is Decision.PASS   # the user's stated tolerance


def test_a_run_a_proxy_left_short_cannot_pass(tmp_path: Path) -> None:
    """A proxy that stopped with pairs or counts its store never took (the store failed
    at shutdown) leaves "incomplete"; one killed is found "lost": either way the run's
    counts are short of what was served, and the verdict says so rather than PASS."""
    from shadowdiff.store.members import RunMembers

    store = Store.open(tmp_path)
    members = RunMembers(store)
    joined = members.join("prod", {}, "a", "host", 1)
    members.join("prod", {}, "b", "host", 2)
    run = joined.run_id
    store.add_counts(run, {("pairs", "identical", True): 20})
    members.leave(run, "a")
    assert members.leave(run, "b", "incomplete")                  # the last one: the run is finished
    result = acceptance(store, run)
    assert result.decision is Decision.INCOMPLETE
    assert "1 of the run's proxies stopped without writing all they compared" in result.text()
    assert "1 stopped with pairs the store had not taken" in run_report(tmp_path, "--run", run).stdout


def test_a_run_closed_by_force_passes_only_if_its_proxies_moved_on(tmp_path: Path) -> None:
    """``close --force`` while a proxy counts as running: alive, it moves to a new run with
    what it held (and the closed run is whole); killed a moment before, it never does, and
    its last pairs and counts are missing - the run cannot pass."""
    from shadowdiff.store.members import RunMembers

    store = Store.open(tmp_path)
    members = RunMembers(store)
    run = members.join("prod", {}, "a", "host", 1).run_id
    store.add_counts(run, {("pairs", "identical", True): 20})
    assert [m.ended for m in members.close(run, force=True)] == ["forced"]
    result = acceptance(store, run)
    assert result.decision is Decision.INCOMPLETE
    assert "closed by --force" in result.text()
    assert members.join("prod", {}, "a", "host", 1).run_id != run      # it was alive: it moved on
    assert acceptance(store, run).decision is Decision.PASS


# Every verdict from the candidate's side, least favourable to the candidate first, as
# the README states it (written out here, not read from the code, so that they can differ):
# key -> the verdict and the side it goes against, as a reviewer gives them.
STANDING_ORDER = {
    "factual": ("factual", "candidate"),                    # the candidate wrong: fails the run
    "improvement_baseline": ("improvement", "candidate"),   # the baseline better
    "minor": ("minor", "candidate"),                        # the candidate slightly worse
    "ambiguous": ("ambiguous", None),
    "wording": ("wording", None),
    "equivalent": ("equivalent", None),
    "minor_baseline": ("minor", "baseline"),                # the baseline slightly worse
    "improvement": ("improvement", "baseline"),             # the candidate better
    "factual_baseline": ("factual", "baseline"),            # the baseline wrong, the candidate right
}


def test_every_directional_verdict_counts_by_its_side(store: Store) -> None:
    run, ids = add_run(store, flips(9))
    queue = ReviewQueue(store)
    for (key, (verdict, side)), pair in zip(STANDING_ORDER.items(), ids.values(), strict=True):
        queue.add_review(pair, "ana", verdict, side, note=key)
    result = acceptance(store, run)
    assert result.verdicts == dict.fromkeys(STANDING_ORDER, 1)
    assert result.decision is Decision.FAIL and [f["note"] for f in result.factual] == ["factual"]
    text = result.text()
    assert "0 identical, 1 equivalent, 1 wording-only, 1 ambiguous, 0 unreviewed" in text
    assert ("against the candidate: 1 factual regression, 1 pair where the baseline is better, 1 minor regression"
            in text)
    assert ("for the candidate: 1 improvement, 1 pair where the baseline is slightly worse, 1 pair where the baseline "
            "is factually wrong and the candidate right") in text


def test_only_a_factual_verdict_against_the_candidate_fails(store: Store) -> None:
    """The baseline better, the candidate slightly worse: counted against the candidate,
    but only a fact it gets wrong fails the run."""
    run, ids = add_run(store, flips(3))
    queue = ReviewQueue(store)
    for pair, (verdict, side) in zip(ids.values(), [("improvement", "candidate"), ("minor", "candidate"),
                                                   ("factual", "baseline")], strict=True):
        queue.add_review(pair, "ana", verdict, side)
    result = acceptance(store, run)
    assert result.decision is Decision.PASS, result.text()
    assert result.verdicts == {"improvement_baseline": 1, "minor": 1, "factual_baseline": 1}
    assert "2 pairs where the baseline" not in result.text()
    assert "1 pair where the baseline is better, 1 minor regression" in result.text()


def test_when_reviewers_disagree_the_verdict_least_favourable_to_the_candidate_stands(store: Store) -> None:
    order = list(STANDING_ORDER)
    cases = [(worse, better) for i, worse in enumerate(order) for better in order[i + 1:]]
    run, ids = add_run(store, flips(len(cases)))
    queue = ReviewQueue(store)
    for pair, (worse, better) in zip(ids.values(), cases, strict=True):
        # the more favourable verdict first, then the other by someone else: order of writing is no tie-break
        queue.add_review(pair, "ana", *STANDING_ORDER[better])
        queue.add_review(pair, "bob", *STANDING_ORDER[worse])
    result = acceptance(store, run, min_reviewed=0)
    # each key stands on as many pairs as there are keys after it in the order
    assert result.verdicts == {key: len(order) - 1 - i for i, key in enumerate(order) if i < len(order) - 1}
    assert result.disagreements == len(cases)
    assert len(result.factual) == len(order) - 1


def test_minor_and_improvement_without_a_side_read_as_they_meant(store: Store) -> None:
    """Rows written before every directional verdict had a side (and missed by migration
    0010): minor meant the candidate slightly worse, improvement the candidate better."""
    import sqlalchemy as sa

    from shadowdiff.store import schema

    run, ids = add_run(store, flips(2))
    with store.engine.begin() as c:
        for pair, verdict in zip(ids.values(), ("minor", "improvement"), strict=True):
            c.execute(schema.reviews.insert().values(pair_id=pair, reviewer="old", verdict=verdict, wrong_side=None,
                                                     note="", created_at=sa.func.now()))
    result = acceptance(store, run)
    assert result.verdicts == {"minor": 1, "improvement": 1}
    assert result.decision is Decision.PASS

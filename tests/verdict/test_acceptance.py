"""The acceptance verdict and the exit code of ``shadowdiff report``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.compare import compare, compare_answers, error_comparison
from shadowdiff.answers.records import Answer, Choice, Pair
from shadowdiff.report.summary import summarize
from shadowdiff.report.write import summary_text, write_reports
from shadowdiff.store import Store, schema
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.triage.signals import triage_answers
from shadowdiff.verdict.acceptance import acceptance
from shadowdiff.verdict.result import Acceptance
from shadowdiff.vocabulary import Decision, Side
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
    # 2 of 3 reviewed is --min-reviewed 0.6, but the changed label left is a sign of a factual regression
    tolerant = acceptance(store, run, min_reviewed=0.6)
    assert tolerant.decision is Decision.INCOMPLETE
    assert "1 unreviewed pairs show a sign of a factual regression" in tolerant.text()
    assert "review them (they lead the review queue)" in tolerant.text()
    queue.add_review(ids["label"], "ana", "ambiguous")
    result = acceptance(store, run)
    assert result.decision is Decision.PASS
    assert result.verdicts == {"wording": 1, "minor": 1, "ambiguous": 1}
    store.close()
    answer = run_report(tmp_path, "--min-compared", "4")
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
    assert result.reasons[0].startswith("1 factual regression against") and len(result.factual) == 2
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
    from shadowdiff.answers.compare import error_comparison

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
    # an identical sampled pair is sampled too: one set of counts, as the summary's
    assert result.decision is Decision.INCOMPLETE and result.sampled == 4 and result.identical == 0
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
                 ("--min-reviewed", "nan"), ("--min-token-agreement", "95"), ("--max-kl", "inf"),
                 ("--max-kl", "-0.1"), ("--max-token-disagreement", "nan")):
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
    # by default a handful of pairs is not enough: the report says what would be, and where 30 came from
    default = run_report(tmp_path)
    assert default.returncode == 2, default.stdout
    assert "only 4 comparable pairs were answered by both sides; 30 required (--min-compared)" in default.stdout
    assert "up to 53 % of its answers may, 95 %" in default.stdout
    assert "give --min-compared 4 to accept them as enough" in default.stdout
    assert "min compared 30 (default)" in default.stdout
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
# docs/review.md states it (written out here, not read from the code, so that they can differ):
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


def _cut_run(store: Store, n: int, *, answer: str, capped: int, tokens: int = 40) -> str:
    """``n`` deterministic pairs alike on both sides, ``capped`` of them stopped by the token
    cap (``length``) on both sides after thinking; ``answer``: their text ("" before any)."""
    run = store.create_run("replay", {})
    pairs = []
    for i in range(n):
        cut = i < capped
        text = answer if cut else "The river runs to the sea."
        sides = {side: Answer(side, "m", text, "length" if cut else "stop", completion_tokens=tokens if cut else 9,
                              reasoning="Rivers flow downhill, so")
                 for side in (Side.BASELINE, Side.CANDIDATE)}
        comparison = compare_answers(sides[Side.BASELINE], sides[Side.CANDIDATE])
        pairs.append(Pair(f"k{i}", i, "/v1/chat/completions", "p", {}, comparison, sides))
    store.add_pairs(run, pairs)
    store.finish_run(run)
    return run


def test_pairs_cut_inside_their_thinking_are_unanswered_not_identical(tmp_path: Path) -> None:
    """A reasoning model at a small --max-tokens: every pair cut inside the same thinking,
    no content on either side. Nothing of an answer was compared: never a PASS."""
    store = Store.open(tmp_path)
    run = _cut_run(store, 40, answer="", capped=40)
    result = acceptance(store, run, min_compared=1)
    assert (result.identical, result.unanswered, result.compared) == (0, 40, 0)
    assert result.decision is Decision.INCOMPLETE
    assert any("40 pairs where neither side reached an answer (40 cut by the token cap" in r for r in result.reasons)
    assert result.capped == {"pairs": 40, "unanswered": 40, "of": 40, "unknown": 0, "share": 1.0, "tokens": [40, 40]}
    # allowing them as unchecked prompts still leaves nothing compared
    assert acceptance(store, run, max_errors=40, min_compared=1, max_capped=1.0).decision is Decision.INCOMPLETE
    store.close()


def test_a_run_mostly_cut_by_the_token_cap_cannot_pass(tmp_path: Path) -> None:
    """--max-tokens 16: the answers alike up to the cap, on most pairs; what came after was never
    compared. The share cut on both sides is said, and above --max-capped the run is INCOMPLETE."""
    store = Store.open(tmp_path)
    run = _cut_run(store, 40, answer="The river", capped=30, tokens=16)
    result = acceptance(store, run, min_compared=1)
    assert (result.identical, result.unanswered, result.compared) == (40, 0, 40)
    assert result.decision is Decision.INCOMPLETE
    said = "30 of 40 comparable pairs (75 %) hit the token cap on both sides, compared over their first 16 tokens"
    assert any(said in r for r in result.reasons) and said in result.text()
    assert acceptance(store, run, min_compared=1, max_capped=0.8).decision is Decision.PASS
    # --max-capped given to replay is kept with the run, and report decides with it
    store.set_run_setting(run, "gates", {"by": "replay", "given": {"max_capped": 0.8, "min_compared": 1}})
    paths = write_reports(store, run, tmp_path / "reports")
    assert paths.acceptance.decision is Decision.PASS
    assert "max capped 0.8 = 80 % (from the run: replay --max-capped 0.8)" in paths.summary_text
    # a few cut pairs are only said
    few = _cut_run(store, 40, answer="The river", capped=4, tokens=16)
    result = acceptance(store, few, min_compared=1)
    assert result.decision is Decision.PASS
    assert "note: 4 of 40 comparable pairs (10 %) hit the token cap on both sides" in result.text()
    store.close()


def _noise_run(store: Store, n: int, *, changed: int, replica_changed: int, replica_failed: int,
               replica_from: int = 0) -> str:
    """``n`` pairs: the first ``changed`` reworded by the candidate, ``replica_changed`` from
    ``replica_from`` on by the replica; the replica failed the last ``replica_failed``."""
    run = store.create_run("replay", {})
    pairs = []
    for i in range(n):
        a = f"Answer number {i} is here."
        b = a.replace("here", "there") if i < changed else a
        base, cand = Answer(Side.BASELINE, "m", a, "stop"), Answer(Side.CANDIDATE, "m", b, "stop")
        if i >= n - replica_failed:
            noise = error_comparison()
        else:
            reworded = replica_from <= i < replica_from + replica_changed
            noise = compare(a, a.replace("here", "over here") if reworded else a)
        comparison = compare(a, b)
        pairs.append(Pair(f"k{i}", i, "/v1/chat/completions", "p", {}, comparison,
                          {Side.BASELINE: base, Side.CANDIDATE: cand}, noise=noise,
                          **triage_answers(base, cand, comparison, None)))
    store.add_pairs(run, pairs)
    store.finish_run(run)
    return run


def test_the_excess_is_stated_on_its_paired_prompts_and_replica_failures_are_unchecked(tmp_path: Path) -> None:
    """A replica failing a third of the prompts: the excess is measured on the rest, said so with
    their number, and its failures count toward --max-errors (their noise floor is unknown)."""
    store = Store.open(tmp_path)
    run = _noise_run(store, 40, changed=36, replica_changed=0, replica_failed=14)
    s = summarize(store, run)
    excess = s.excess_divergence
    assert excess is not None and (excess["pairs"], excess["compared"]) == (26, 40)
    assert excess["candidate_changed"] == 1.0 and excess["replica_changed"] == 0.0
    text = summary_text(s)
    assert "on the 26 prompts both the candidate and the replica answered (of 40 compared" in text
    result = acceptance(store, run, min_reviewed=0, min_compared=1)
    assert result.replica_errors == 14 and result.decision is Decision.INCOMPLETE
    assert any("14 pairs whose replica failed" in r and "--max-errors" in r for r in result.reasons)
    store.close()


def test_an_interval_gate_passes_only_when_the_whole_interval_is_inside(tmp_path: Path) -> None:
    """A replica about as noisy as the candidate: the excess is near zero but its interval is wide.
    --max-excess-divergence passes only if the interval's top is within it; the noisy replica is said."""
    store = Store.open(tmp_path)
    run = _noise_run(store, 40, changed=20, replica_changed=22, replica_failed=0, replica_from=12)
    excess = summarize(store, run).excess_divergence
    assert excess is not None and excess["low"] < 0 < 0.1 < excess["high"]
    result = acceptance(store, run, min_reviewed=0, min_compared=1)
    result.gate(excess, 0.1, None)
    assert result.decision is Decision.INCOMPLETE
    assert any(f"may still be {excess['high'] * 100:+.1f} points" in r for r in result.reasons)
    assert "the replica changed as many answers as the candidate or more (55.0 % vs 50.0 %" in result.text()
    wide = acceptance(store, run, min_reviewed=0, min_compared=1)
    wide.gate(excess, excess["high"] + 0.01, None)
    assert wide.decision is Decision.PASS
    store.close()


def test_every_answer_empty_on_both_sides_checks_nothing(tmp_path: Path) -> None:
    """Two servers that both answer nothing (a wrong chat template, a stop string that ends every
    answer at once): each pair is byte-identical, yet no answer was compared."""
    store = Store.open(tmp_path)
    run = store.create_run("replay", {})
    sides = {side: Answer(side, "m", "", "stop") for side in (Side.BASELINE, Side.CANDIDATE)}
    store.add_pairs(run, [Pair(f"k{i}", i, "/v1/chat/completions", "p", {},
                               compare_answers(sides[Side.BASELINE], sides[Side.CANDIDATE]), sides)
                          for i in range(40)])
    store.finish_run(run)
    result = acceptance(store, run, min_compared=1)
    assert (result.identical, result.unanswered, result.compared) == (0, 40, 0)
    assert result.decision is Decision.INCOMPLETE and "nothing was compared" in result.text()
    assert result.capped["pairs"] == 0   # not cut: empty
    store.close()


def test_thinking_left_in_the_content_cut_by_the_cap_is_unanswered(tmp_path: Path) -> None:
    """A server without a reasoning parser leaves the thinking in the content: cut by the cap
    inside ``<think>``, an empty ``<think></think>``, or nothing but a zero-width space, on both
    sides alike, is no answer."""
    for text, finish in (("<think>Rivers flow downhill, so the", "length"), ("<think>\n\n</think>\n\n", "stop"),
                         ("\u200b", "stop"), ("  <think>ok</think> \u2060 ", "stop")):
        sides = {side: Answer(side, "m", text, finish) for side in (Side.BASELINE, Side.CANDIDATE)}
        assert compare_answers(sides[Side.BASELINE], sides[Side.CANDIDATE]).outcome == "unanswered", text
    # an answer after the thinking is an answer
    sides = {side: Answer(side, "m", "<think>ok</think>The Nile.", "stop") for side in (Side.BASELINE, Side.CANDIDATE)}
    assert compare_answers(sides[Side.BASELINE], sides[Side.CANDIDATE]).outcome == "identical"


def test_text_that_shows_nothing_or_a_second_unclosed_thinking_is_unanswered() -> None:
    """Blank-looking characters (a Hangul filler, a Braille blank, a variation selector, a tag
    character) show no answer; nor does thinking that goes on in a second ``<think>`` left
    open by the cap."""
    for text in ("\u3164\u2800", "\u115f\u1160\uffa0\u180e\u034f", "\ufe0f\U000e0100\U000e0041 \u00a0\u2029",
                 "<think>a</think><think>b", "<think>a</think>\n\u3164<think>b</think> \u2800 <think>c"):
        sides = {side: Answer(side, "m", text, "stop") for side in (Side.BASELINE, Side.CANDIDATE)}
        assert compare_answers(sides[Side.BASELINE], sides[Side.CANDIDATE]).outcome == "unanswered", repr(text)
    # an answer after every thinking block is an answer
    sides = {side: Answer(side, "m", "<think>a</think><think>b</think>Paris.", "stop")
             for side in (Side.BASELINE, Side.CANDIDATE)}
    assert compare_answers(sides[Side.BASELINE], sides[Side.CANDIDATE]).outcome == "identical"


def test_a_later_choice_cut_by_the_cap_on_both_sides_is_a_capped_pair(tmp_path: Path) -> None:
    """n=3 (or a completions request of several prompts): the first choice stopped, the others
    ran into the cap on both sides. Those pairs are cut by the cap, each choice compared over
    its own tokens (usage sums them)."""
    store = Store.open(tmp_path)
    run = store.create_run("replay", {})
    pairs = []
    for i in range(10):
        sides = {side: Answer(side, "m", "Paris.", "stop", completion_tokens=30,
                              others=(Choice(1, "The capital is", finish_reason="length"),
                                      Choice(2, "It is Paris", finish_reason="length")))
                 for side in (Side.BASELINE, Side.CANDIDATE)}
        pairs.append(Pair(f"k{i}", i, "/v1/chat/completions", "p", {},
                          compare_answers(sides[Side.BASELINE], sides[Side.CANDIDATE]), sides))
    store.add_pairs(run, pairs)
    store.finish_run(run)
    result = acceptance(store, run, min_compared=1)
    assert result.capped == {"pairs": 10, "unanswered": 0, "of": 10, "unknown": 0, "share": 1.0, "tokens": [10, 10]}
    assert result.decision is Decision.INCOMPLETE
    store.close()


def test_a_flipped_negation_boolean_or_number_word_is_never_left_unreviewed(tmp_path: Path) -> None:
    """--min-reviewed below 1 lets wording go, not a denial dropped, a boolean flipped or a
    number written as a word that changed: each is a sign of a factual regression."""
    flipped = {"negation": ("The bridge is not safe to cross.", "The bridge is safe to cross."),
               "boolean": ("The method returns True for an empty list.", "The method returns False for an empty list."),
               "number-word": ("The cluster has seven nodes.", "The cluster has eight nodes.")}
    drift = {f"drift-{i}": (f"Step {i} is usually fine.", f"Step {i} is typically fine.") for i in range(6)}
    store = Store.open(tmp_path)
    run, ids = add_run(store, {**flipped, **drift})
    queue = ReviewQueue(store)
    for key in drift:
        queue.add_review(ids[key], "ana", "wording")
    result = acceptance(store, run, min_reviewed=0.5, min_compared=1)
    assert result.suggested_unreviewed == {"factual": 3}
    assert result.decision is Decision.INCOMPLETE
    assert "3 unreviewed pairs show a sign of a factual regression" in result.text()
    for key in flipped:
        queue.add_review(ids[key], "ana", "wording")
    assert acceptance(store, run, min_reviewed=0.5, min_compared=1).decision is Decision.PASS
    store.close()


def _stored_after_the_reveal(store: Store, pair_id: int, reviewer: str, verdict: str, side: str | None) -> None:
    """A later verdict of ``reviewer`` on the pair, as builds before the first verdict was
    final stored it (the queue now refuses it)."""
    with store.engine.begin() as c:
        c.execute(schema.reviews.insert().values(pair_id=pair_id, reviewer=reviewer, verdict=verdict,
                                                 wrong_side=side, note="after the reveal",
                                                 created_at=datetime.now(UTC)))


def test_verdicts_stored_after_the_reveal_decide_nothing(store: Store, tmp_path: Path) -> None:
    run, ids = add_run(store, flips(3))
    queue = ReviewQueue(store)
    first, second, third = ids.values()
    # a throwaway verdict, then factual against the candidate: not a FAIL
    queue.add_review(first, "ana", "equivalent")
    queue.add_review(second, "ana", "wording")
    queue.add_review(third, "bob", "factual", "candidate")
    _stored_after_the_reveal(store, first, "ana", "factual", "candidate")
    # the other way round: a factual verdict, then a lenient one, still a FAIL
    _stored_after_the_reveal(store, third, "bob", "equivalent", None)
    result = acceptance(store, run, min_reviewed=0)
    assert result.decision is Decision.FAIL
    assert [f["pair_id"] for f in result.factual] == [third]
    assert result.verdicts == {"equivalent": 1, "wording": 1, "factual": 1}
    assert result.after_reveal == 2 and result.agreement.disagreements == ()
    assert "2 verdicts given by a reviewer to a pair they had already judged" in result.text()
    assert result.as_json()["after_reveal"] == 2


def _scored(agreement: tuple[float, float, float], excess: tuple[float, float, float] | None,
            kl: tuple[float, float, float] | None) -> dict[str, Any]:
    """A run's token agreement as ``scorestats`` sums it up: (estimate, low, high) per measure."""
    def interval(m: tuple[float, float, float] | None) -> dict[str, Any] | None:
        return None if m is None else {"estimate": m[0], "low": m[1], "high": m[2], "pairs": 20, "tokens": 2000}
    return {"pairs": 20, "tokens": 2000, "pooled": agreement[0], "baseline_agreement": 1.0,
            "agreement": interval(agreement), "excess_disagreement": interval(excess), "kl": interval(kl)}


@pytest.mark.parametrize(("gates", "reason"), [
    ({"min_agreement": 0.9}, "on only 74.90 % (95 % interval 70.00 to 80.00 %, 20 prompts) of their tokens, below "
                             "--min-token-agreement 90 %"),
    ({"max_kl": 0.05}, "a KL divergence of 0.1900 nats a token (95 % interval 0.1500 to 0.2300, 20 prompts), above "
                       "--max-kl 0.05 nats a token"),
    ({"max_disagreement": 0.1}, "on +25.10 points (95 % interval +20.00 to +30.00, 20 prompts) of their tokens beyond "
                                "the baseline's own disagreement, above --max-token-disagreement 10 points"),
])
def test_the_token_gates_tell_a_mild_quantization_from_a_harsh_one(gates: dict[str, float], reason: str) -> None:
    """Every answer may change in both; the gates on the token measures still pass the one and fail the other
    (the figures: Q8_0 and Q4_0 of SmolLM2-135M against F16 on llama.cpp, 20 MT-Bench prompts)."""
    mild = _scored((0.960, 0.950, 0.970), (0.040, 0.030, 0.050), (0.003, 0.002, 0.004))
    harsh = _scored((0.749, 0.700, 0.800), (0.251, 0.200, 0.300), (0.19, 0.15, 0.23))
    passed, failed = Acceptance(Decision.PASS), Acceptance(Decision.PASS)
    passed.gate_tokens(mild, **gates)
    failed.gate_tokens(harsh, **gates)
    assert passed.decision is Decision.PASS and not passed.reasons
    assert failed.decision is Decision.FAIL and reason in failed.reasons[0], failed.reasons


def test_a_token_gate_whose_interval_straddles_its_limit_or_is_missing_is_incomplete() -> None:
    scored = _scored((0.96, 0.94, 0.98), (0.04, 0.02, 0.06), None)
    for gates, words in (({"min_agreement": 0.95}, "reaches below it"),
                         ({"max_disagreement": 0.05}, "reaches above it"),
                         ({"max_kl": 0.1}, "the KL divergence per token has no interval")):
        result = Acceptance(Decision.PASS)
        result.gate_tokens(scored, **gates)
        assert result.decision is Decision.INCOMPLETE and words in result.reasons[0], (gates, result.reasons)
    # two gates on a run never scored: one sentence names both
    result = Acceptance(Decision.PASS)
    result.gate_tokens(None, 0.02, max_kl=0.1)
    assert result.reasons == ["--max-token-disagreement 2 points and --max-kl 0.1 nats a token need the answers "
                              "scored teacher-forced, and this run has none (replay --score, or serve --score-rate)"]


def test_a_fail_line_leads_with_what_failed_it() -> None:
    """Reasons that only left the run incomplete come after the one that failed it, whatever the gates' order."""
    result = Acceptance(Decision.PASS)
    result.gate_flips(None, 0)                    # incomplete: nothing graded
    result.gate_tokens(None, 0.02)                # incomplete: nothing scored
    result.gate_flips({"graded": 5, "references": 5, "not_graded": 0, "ungradable_answers": 0,
                       "correct_to_wrong": 2}, 0)  # failed
    assert result.decision is Decision.FAIL
    assert result.reasons[0].startswith("2 correct→wrong flips") and len(result.reasons) == 3
    assert "verdict: FAIL - 2 correct→wrong flips" in result.text()


def test_an_incomplete_run_for_want_of_reviews_names_the_commands_to_run_next(tmp_path: Path) -> None:
    store, run, _ = make_run(tmp_path)
    store.close()
    out = tmp_path / "reports"
    decided = run_report(tmp_path, "--out", str(out))
    assert decided.returncode == 2, decided.stdout + decided.stderr
    review, again = (f"shadowdiff review {tmp_path}", f"shadowdiff report {tmp_path} --run {run}")
    assert f"next: {review}   (a verdict on each of the" in decided.stdout
    assert f"next: {again}   (decide again, with the verdicts given)" in decided.stdout
    assert f"- `{review}`: a verdict on each of the" in (out / "report.md").read_text()
    assert f"<code>{review}</code>" in (out / "report.html").read_text()
    steps = json.loads((out / "summary.json").read_text())["acceptance"]["next_steps"]
    # (4 pairs compared, 30 required: accepting them is a command too, named before deciding again)
    assert [s["command"] for s in steps] == [review, f"{again} --min-compared 4", again]
    # the gates given to this report go into the commands it suggests: they decide as it did
    given = run_report(tmp_path, "--out", str(tmp_path / "given"), "--max-errors", "3", "--without-review")
    assert given.returncode == 2, given.stdout + given.stderr
    steps = json.loads((tmp_path / "given" / "summary.json").read_text())["acceptance"]["next_steps"]
    assert steps and all(s["command"].startswith(f"{again} --max-errors 3 --without-review") for s in steps), steps


def test_min_reviewed_below_one_says_what_it_waives(tmp_path: Path) -> None:
    make_run(tmp_path)[0].close()
    waived = run_report(tmp_path, "--out", str(tmp_path / "waived"), "--min-reviewed", "0")
    assert "note: --min-reviewed 0 leaves" in waived.stdout and "unreviewed: nobody looked at them" in waived.stdout
    assert "**Note:** --min-reviewed 0 leaves" in (tmp_path / "waived" / "report.md").read_text()


def test_a_flip_gate_that_could_see_no_flip_decides_nothing() -> None:
    """With the baseline never right by the references (a grader that reads no final answer in
    these answers, or another log's references), no flip could be seen: --max-flips 0 is no pass."""
    never = {"graded": 38, "references": 38, "not_graded": 0, "ungradable_answers": 0, "correct_to_wrong": 0,
             "baseline_correct": 0, "candidate_correct": 0}
    result = Acceptance(Decision.PASS)
    result.gate_flips(never, 0)
    assert result.decision is Decision.INCOMPLETE
    assert "the baseline was right on none of the 38 graded pairs" in result.reasons[0]
    seen = Acceptance(Decision.PASS)
    seen.gate_flips({**never, "baseline_correct": 30, "candidate_correct": 30}, 0)
    assert seen.decision is Decision.PASS

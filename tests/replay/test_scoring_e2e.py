"""Teacher-forced scoring through replay, against simulators on loopback: a baseline, an
fp8 candidate and a replica (tests/support/replaying.py).

What the simulator does under teacher forcing is its own tests' subject
(tests/simulator/test_teacher_forcing.py); here, that replay asks each side the right
questions and that what it stores and sums up follows: the baseline agrees with itself
on every token, a pair whose answers are identical agrees on every token, a pair that
differs agrees on all but a few, and the pooled agreement is the tokens' own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.errors import ShadowdiffError
from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.logs import COMPLETIONS, bundled_workload
from shadowdiff.store import STORE_FILE, Store
from shadowdiff.triage.scoring import CASCADE_AGREEMENT
from shadowdiff.vocabulary import Side
from tests.support.replaying import replay_settings

MT_BENCH = Path(__file__).resolve().parents[2] / "examples" / "mt_bench_questions.jsonl"


def _pairs(out: Path) -> list[dict[str, Any]]:
    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        return [dict(p.row) for p in store.pairs(run.id)]
    finally:
        store.close()


def test_a_replay_scores_every_pair_and_sums_the_tokens(sides: dict[Side, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_replay(replay_settings(bundled_workload(), sides), out, None, resume=False)
    pairs = _pairs(out)
    assert pairs and all(p["score"] and "agreement" in p["score"] for p in pairs), [p["score"] for p in pairs]
    for p in pairs:
        score = p["score"]
        assert score["baseline_agreement"] == 1.0 and score["engine"] == "vllm"
        assert p["token_agreement"] == score["agreement"]
        if p["outcome"] == "identical":
            # the candidate wrote the very same tokens greedily: each was its top choice
            assert score["agreement"] == 1.0 and score["first_disagreement"] is None, p["key"]
        else:
            assert score["agreement"] < 1.0 and score["first_disagreement"] is not None, p["key"]
            assert score["kl"] > 0 and score["max_drop"] > 0
        assert score["cascade"] == (p["outcome"] in ("near", "divergent") and score["agreement"] >= CASCADE_AGREEMENT)
        assert p["noise_score"] is not None and "agreement" in p["noise_score"]
        if p["noise_outcome"] == "identical":
            assert p["noise_score"]["agreement"] == 1.0
    cascades = [p for p in pairs if p["score"]["cascade"]]
    assert all(any(s["kind"] == "cascade" for s in p["signals"]) for p in cascades)

    summary = json.loads((out / "summary.json").read_text())
    t = summary["token_agreement"]
    tokens = sum(p["score"]["tokens"] for p in pairs)
    agreed = sum(p["score"]["agreed"] for p in pairs)
    assert (t["pairs"], t["tokens"], t["agreed"]) == (len(pairs), tokens, agreed)
    assert t["pooled"] == pytest.approx(agreed / tokens)
    assert 0.97 < t["pooled"] < 1.0          # the fp8 profile: a near-tie or two per changed answer
    assert t["baseline_agreement"] == 1.0 and t["unscored"] == {}
    assert t["cascades"] == len(cascades)
    assert sum(b["pairs"] for b in t["distribution"]) == len(pairs)
    assert t["distribution"][-1]["pairs"] == sum(p["score"]["agreement"] == 1.0 for p in pairs)
    floor = summary["noise_token_agreement"]
    assert floor["pooled"] > t["pooled"]     # a replica departs less often than fp8
    text = (out / "report.md").read_text()
    assert "token agreement" in text and f"{t['pooled'] * 100:.2f} %" in text


def test_no_score_asks_for_nothing_and_sums_nothing(sides: dict[Side, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_replay(replay_settings(bundled_workload(), sides, score=False), out, None, resume=False)
    assert all(p["score"] is None and p["noise_score"] is None for p in _pairs(out))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["token_agreement"] is None and summary["settings"]["score"] is False


def test_a_later_turn_is_scored_with_the_conversation_before_it(sides: dict[Side, str], tmp_path: Path) -> None:
    """--turn 2: the scored prompt is the whole conversation (turn 1 and the baseline's
    answer to it), so the baseline still agrees with itself on every token."""
    log = tmp_path / "questions.jsonl"
    log.write_text("".join(MT_BENCH.read_text().splitlines(True)[:4]))
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides, turn=2), out, None, resume=False)
    pairs = _pairs(out)
    assert len(pairs) == 4
    for p in pairs:
        assert len(p["request"]["messages"]) == 3
        assert p["score"]["baseline_agreement"] == 1.0, p["score"]
        assert (p["score"]["agreement"] == 1.0) == (p["outcome"] == "identical")


def test_a_resume_must_score_as_the_run_began(sides: dict[Side, str], tmp_path: Path) -> None:
    """Half a run scored would sum up its agreement over the pairs before the resume alone."""
    out = tmp_path / "out"
    run_replay(replay_settings(bundled_workload(), sides), out, None, resume=False)
    with pytest.raises(ShadowdiffError, match="--score/--no-score differ from the run being resumed"):
        run_replay(replay_settings(bundled_workload(), sides, score=False), out, None, resume=True)


def test_a_baseline_that_does_not_read_its_own_answers_as_its_own_is_said(sides: dict[Side, str],
                                                                           tmp_path: Path) -> None:
    """The simulator models teacher forcing for chat prompts only (a completions prompt has
    no assistant header to find the answer by): its baseline then reads its own answers at
    random, and the report must say the figures measure nothing rather than print them bare."""
    log = tmp_path / "prompts.txt"
    log.write_text("".join(f"Write two sentences about topic {i}.\n" for i in range(12)))
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides, endpoint=COMPLETIONS), out, None, resume=False)
    t = json.loads((out / "summary.json").read_text())["token_agreement"]
    assert t["baseline_agreement"] < 0.9
    assert "WARNING: the baseline reads its own answers as its top choice on only" in (out / "report.md").read_text()


@pytest.mark.parametrize(("gate", "key", "upper"), [("max_token_disagreement", "excess_disagreement", True),
                                                     ("min_token_agreement", "agreement", False),
                                                     ("max_kl", "kl", True)])
def test_each_token_gate_fails_a_candidate_surely_beyond_it_and_passes_one_surely_within(
        sides: dict[Side, str], tmp_path: Path, gate: str, key: str, upper: bool) -> None:
    from shadowdiff.report.headline import figures
    from shadowdiff.report.summary import summarize
    from shadowdiff.report.write import write_reports

    flag = "--" + gate.replace("_", "-")
    out = tmp_path / "out"
    run_replay(replay_settings(MT_BENCH, sides), out, None, resume=False)   # (80 prompts: a narrower interval)
    t = json.loads((out / "summary.json").read_text())["token_agreement"]
    excess, kl, measure = t["excess_disagreement"], t["kl"], t[key]
    assert 0 < excess["low"] <= excess["estimate"] <= excess["high"]   # fp8 departs on some tokens of most changes
    assert 0 < kl["low"] <= kl["estimate"] <= kl["high"] and kl["estimate"] == pytest.approx(t["kl_per_token"])
    assert t["agreement"]["estimate"] == pytest.approx(t["pooled"]) and t["agreement"]["high"] < 1
    low, high = measure["low"], measure["high"]
    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None

        def decide(limit: float | None) -> Any:
            return write_reports(store, run.id, tmp_path / f"at-{limit}", min_reviewed=0, min_compared=1,
                                 **{gate: limit}).acceptance

        def status(verdict: Any) -> str:
            return next(f.status for f in figures(summarize(store, run.id), verdict) if f.key == "token-agreement")

        if upper:
            beyond, within = decide(low / 2), decide(high * 2)
        else:
            beyond, within = decide((high + 1) / 2), decide(low / 2)
        ungated, between = decide(None), decide((low + high) / 2)
        # (a FAIL line leads with what failed it)
        assert beyond.decision.name == "FAIL" and flag in beyond.reasons[0], beyond.reasons
        assert beyond.thresholds[gate] is not None and gate not in ungated.thresholds
        # (ungated: amber, for the candidate surely departs beyond the noise floor)
        assert status(beyond) == "fail" and status(within) == "pass" and status(ungated) == "warn"
        assert within.decision == ungated.decision and within.reasons == ungated.reasons
        assert between.decision.name in ("INCOMPLETE", "FAIL")
        assert f"reaches {'above' if upper else 'below'} it" in " ".join(between.reasons)
        assert status(between) == "incomplete"
    finally:
        store.close()


def test_the_token_gate_on_a_run_never_scored_checked_nothing(sides: dict[Side, str], tmp_path: Path) -> None:
    from shadowdiff.report.write import write_reports

    out = tmp_path / "out"
    run_replay(replay_settings(bundled_workload(), sides, score=False), out, None, resume=False)
    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        verdict = write_reports(store, run.id, tmp_path / "r", min_reviewed=0, min_compared=1,
                                max_token_disagreement=0.5).acceptance
        assert verdict.decision.name == "INCOMPLETE" and "needs the answers scored" in " ".join(verdict.reasons)
    finally:
        store.close()


def test_a_token_gate_given_to_replay_is_the_reports_too(sides: dict[Side, str], tmp_path: Path) -> None:
    """Stored with the run: ``report`` without the flag decides as ``replay --gate`` did."""
    from shadowdiff.report.write import write_reports

    out = tmp_path / "out"
    replayed = run_replay(replay_settings(MT_BENCH, sides), out, None, resume=False,
                          gates={"max_token_disagreement": 0.0, "min_reviewed": 0.0, "min_compared": 1})
    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        reported = write_reports(store, run.id, tmp_path / "again").acceptance
    finally:
        store.close()
    for verdict in (replayed, reported):
        assert verdict.decision.name == "FAIL" and "--max-token-disagreement 0 points" in verdict.reasons[0]
        assert verdict.gates["max_token_disagreement"]["value"] == 0.0
    assert reported.gates["max_token_disagreement"]["source"] == "from the run"


def test_a_token_gate_with_no_score_is_refused_before_any_request(tmp_path: Path) -> None:
    from tests.support import cli

    down = "http://127.0.0.1:9"   # (nothing is asked of it: the refusal comes first)
    for flag, value in (("--max-kl", "0.1"), ("--min-token-agreement", "0.9"), ("--max-token-disagreement", "0.02")):
        ran = cli.shadowdiff("replay", bundled_workload(), "--baseline", down, "--candidate", down, "--out",
                             tmp_path / "out", "--no-score", flag, value)
        assert ran.returncode == 1 and "which --no-score leaves out" in ran.stderr, ran.stderr
        assert not (tmp_path / "out").exists()


def test_without_review_the_measured_gates_decide_and_what_nobody_looked_at_is_said(
        sides: dict[Side, str], tmp_path: Path) -> None:
    """For CI: no person in the loop. The token gate (here) decides; the pairs nobody reviewed
    are said, loudly, in every report; with no gate on a measure the run decides nothing."""
    from shadowdiff.report.write import write_reports

    out = tmp_path / "out"
    base = {"without_review": 1, "max_capped": 1.0}
    passed = run_replay(replay_settings(MT_BENCH, sides), out, None, resume=False,
                        gates={**base, "max_token_disagreement": 0.9})
    assert passed.decision.name == "PASS", passed.reasons
    assert passed.unreviewed > 0 and any("decided without review (--without-review)" in w for w in passed.warnings)
    assert "decided on: --max-token-disagreement, and --max-errors" in passed.warnings
    report = (out / "report.md").read_text()
    assert "**Note:** decided without review (--without-review):" in report
    assert "never looked at by a person" in report and "without review on" in report
    store = Store.open(out / STORE_FILE)
    try:
        run = store.latest_run("replay")
        assert run is not None
        # stored with the run: report decides alike; a limit the candidate passes beyond fails it
        again = write_reports(store, run.id, tmp_path / "again").acceptance
        assert again.decision.name == "PASS" and again.gates["without_review"]["source"] == "from the run"
        failed = write_reports(store, run.id, tmp_path / "failed", max_token_disagreement=0.0).acceptance
        assert failed.decision.name == "FAIL" and "--max-token-disagreement 0 points" in failed.reasons[0]
        # --with-review undoes it, and so does a --min-reviewed given: the pairs nobody reviewed count again
        for undone in ({"without_review": 0}, {"min_reviewed": 0.5}):
            reviewed = write_reports(store, run.id, tmp_path / "reviewed", **undone).acceptance
            assert reviewed.decision.name == "INCOMPLETE" and "unreviewed" in " ".join(reviewed.reasons)
        # both on one command line contradict each other
        with pytest.raises(ShadowdiffError, match="--without-review asks for no review, and --min-reviewed"):
            write_reports(store, run.id, tmp_path / "both", without_review=1, min_reviewed=0.5)
    finally:
        store.close()
    # no gate on anything measured: nothing decides
    bare = run_replay(replay_settings(MT_BENCH, sides), tmp_path / "bare", None, resume=False, gates=base)
    assert bare.decision.name == "INCOMPLETE"
    assert "--without-review decides on the measures, and no gate was given on one this run has" in bare.reasons[-1]

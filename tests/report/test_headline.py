"""The headline of a report: each figure's status comes from its gate, and a
figure no gate checked is never shown as passing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import click
import pytest

from shadowdiff.commands.options import ReviewUrl
from shadowdiff.report.headline import figures
from shadowdiff.verdict.result import Acceptance
from shadowdiff.vocabulary import Decision

OUTCOMES = {"identical": 60, "equivalent": 10, "near": 20, "divergent": 10, "error": 0}


def summary(**over: Any) -> Any:
    base = {"comparable_outcomes": OUTCOMES, "changed_rate": 0.4, "substantive_rate": 0.3,
            "noise": {"identical": 95, "near": 5}, "noise_rate": 0.05,
            "excess_divergence": {"estimate": 0.35, "low": 0.25, "high": 0.45, "pairs": 100,
                                  "candidate_changed": 0.4, "replica_changed": 0.05},
            "token_agreement": None, "noise_token_agreement": None, "flips": None,
            "ratios": {"ttft_p50": 0.8, "inter_token_latency_p50": 0.66, "latency_p50": 0.7,
                       "tokens_per_second_p50": 1.5}, "kind": "replay", "settings": {"concurrency": 8}}
    return SimpleNamespace(**{**base, **over})


def verdict(**over: Any) -> Acceptance:
    fields = {"decision": Decision.PASS, "needs_review": 30, "unreviewed": 0, "compared": 100,
              "verdicts": {"wording": 30}, "thresholds": {"min_reviewed": 1.0, "max_errors": 0}}
    return Acceptance(**{**fields, **over})


def status(s: Any, v: Acceptance, key: str) -> str:
    return next(f.status for f in figures(s, v) if f.key == key)


def test_the_change_figure_is_judged_by_its_gate_or_only_flagged() -> None:
    assert status(summary(), verdict(), "changed") == "warn"                 # surely above the floor, no gate
    calm = summary(excess_divergence={"estimate": 0.01, "low": -0.02, "high": 0.04, "pairs": 100,
                                      "candidate_changed": 0.06, "replica_changed": 0.05})
    assert status(calm, verdict(), "changed") == "info"
    gated = verdict(thresholds={"max_excess_divergence": 0.5, "min_reviewed": 1.0})
    assert status(summary(), gated, "changed") == "pass"                     # 0.25 to 0.45, all within 0.5
    # a gate on an interval passes only when the whole interval is inside it
    gated.thresholds["max_excess_divergence"] = 0.3
    assert status(summary(), gated, "changed") == "incomplete"               # low 0.25 within, high 0.45 not
    gated.thresholds["max_excess_divergence"] = 0.2
    assert status(summary(), gated, "changed") == "fail"
    assert status(summary(noise=None, noise_rate=None, excess_divergence=None), gated, "changed") == "incomplete"
    assert status(summary(noise=None, noise_rate=None, excess_divergence=None), verdict(), "changed") == "info"


def test_a_replica_noisier_than_the_candidate_is_flagged_and_the_excess_names_its_prompts() -> None:
    noisy = summary(excess_divergence={"estimate": -0.013, "low": -0.16, "high": 0.139, "pairs": 26,
                                       "candidate_changed": 0.525, "replica_changed": 0.538})
    changed = next(f for f in figures(noisy, verdict()) if f.key == "changed")
    assert changed.status == "warn" and "the replica is as noisy as the candidate or more" in changed.beside
    assert "on the 26 prompts both the candidate and the replica answered" in changed.beside
    gated = verdict(thresholds={"max_excess_divergence": 0.1, "min_reviewed": 1.0})
    assert status(noisy, gated, "changed") == "incomplete"                   # the interval reaches +13.9


def test_factual_regressions_fail_and_unreviewed_pairs_leave_them_undecided() -> None:
    assert status(summary(), verdict(), "factual") == "pass"
    assert status(summary(), verdict(verdicts={"factual": 1, "wording": 29}), "factual") == "fail"
    assert status(summary(), verdict(unreviewed=5, verdicts={"wording": 25}), "factual") == "incomplete"
    # ... unless --min-reviewed asked for no more than were reviewed: the decision's own gate
    partly = verdict(unreviewed=5, verdicts={"wording": 25}, thresholds={"min_reviewed": 0.8})
    assert status(summary(), partly, "factual") == status(summary(), partly, "reviewed") == "pass"
    strict = verdict(thresholds={"max_factual_rate": 0.01, "min_reviewed": 1.0})   # 30 reviews bound it at ~9.5 %
    assert status(summary(), strict, "factual") == "incomplete"
    assert status(summary(), verdict(unreviewed=5, verdicts={"wording": 25}), "reviewed") == "incomplete"
    assert status(summary(), verdict(), "reviewed") == "pass"
    assert status(summary(), verdict(errors=2), "errors") == "incomplete"
    assert status(summary(), verdict(errors=2, thresholds={"max_errors": 2}), "errors") == "pass"


def test_flips_fail_their_gate_and_are_flagged_without_one() -> None:
    flips = {"graded": 50, "correct_to_wrong": 2, "wrong_to_correct": 0, "mcnemar_p": 0.5,
             "ungradable_answers": 0, "references": 50, "baseline_correct": 30, "candidate_correct": 28}
    assert status(summary(flips=flips), verdict(), "flips") == "warn"
    assert status(summary(flips={**flips, "correct_to_wrong": 0}), verdict(), "flips") == "info"
    assert status(summary(flips=flips), verdict(thresholds={"max_flips": 1}), "flips") == "fail"
    assert status(summary(flips=flips), verdict(thresholds={"max_flips": 2}), "flips") == "pass"
    assert status(summary(flips={**flips, "graded": 0}), verdict(thresholds={"max_flips": 2}), "flips") == \
        "incomplete"
    assert "flips" not in {f.key for f in figures(summary(), verdict())}
    # neither side ever right by the references: no flip could be seen, and no zero is shown as a pass
    never = {**flips, "correct_to_wrong": 0, "baseline_correct": 0, "candidate_correct": 0}
    [shown] = [f for f in figures(summary(flips=never), verdict(thresholds={"max_flips": 0})) if f.key == "flips"]
    assert (shown.value, shown.status) == ("not measured", "incomplete")


def test_no_figure_without_a_gate_is_ever_green() -> None:
    scored = {"pairs": 10, "pooled": 0.99, "tokens": 1000, "baseline_agreement": 1.0}
    every = figures(summary(token_agreement=scored, noise_token_agreement={**scored, "pooled": 1.0}), verdict())
    assert {f.key: f.status for f in every if not f.gate} == {"changed": "warn", "token-agreement": "info",
                                                               "speed": "info"}
    speed = next(f for f in every if f.key == "speed")
    assert speed.value == "1.50x output tokens/s" and "TTFT 0.80x" in speed.beside
    # real vLLM reads its own bf16 answers at 97.5-98 %: a healthy run, read against that, not a warning
    assert status(summary(token_agreement={**scored, "baseline_agreement": 0.975}), verdict(),
                  "token-agreement") == "info"
    # answers that were not the baseline's greedy reading, or no reading of its own: unreadable
    assert status(summary(token_agreement={**scored, "baseline_agreement": 0.89}), verdict(),
                  "token-agreement") == "warn"
    assert status(summary(token_agreement={**scored, "baseline_agreement": None}), verdict(),
                  "token-agreement") == "warn"
    no_speed = summary(ratios=dict.fromkeys(("ttft_p50", "inter_token_latency_p50", "latency_p50",
                                             "tokens_per_second_p50")))
    assert "speed" not in {f.key for f in figures(no_speed, verdict())}


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "http://", "review.example/review",
                                 "https://h/review?x=1", "https://h/review#x", "https://h/re view",
                                 'https://h/"onmouseover=x', "http://[::1/review", "https://user:pass@h/review",
                                 "https://user@h/review", "https://h/review#", "https://h/review?", "http://h:abc/review",
                                 "http://h:99999/review", "https://h\\@evil/review"])
def test_a_review_url_must_be_a_plain_web_address(url: str) -> None:
    with pytest.raises(click.BadParameter):
        ReviewUrl().convert(url, None, None)


def test_a_review_url_loses_its_trailing_slash() -> None:
    assert ReviewUrl().convert("https://review.example:8443/review/", None, None) == \
        "https://review.example:8443/review"
    assert ReviewUrl().convert("http://[::1]:8400/review", None, None) == "http://[::1]:8400/review"


def test_without_streamed_answers_the_speed_leads_with_latency() -> None:
    ratios = {"ttft_p50": 0.8, "inter_token_latency_p50": None, "latency_p50": 0.7, "tokens_per_second_p50": None}
    speed = next(f for f in figures(summary(ratios=ratios), verdict()) if f.key == "speed")
    assert speed.value == "0.70x end-to-end latency" and "TTFT 0.80x" in speed.beside
    # answers streamed with every token in one read have no pace either: never "not streamed" alone
    assert "not streamed, one token, or every token in one read" in speed.beside


def test_a_changed_pair_never_reads_as_similarity_one() -> None:
    from shadowdiff.report.write import _similarity

    assert [_similarity(v) for v in (0.5, 0.9994, 0.99996, 1.0, None)] == ["0.500", "0.999", "0.99996", "1.000",
                                                                           "—"]


def test_a_gate_that_checked_nothing_is_never_green() -> None:
    """Nothing compared (every pair failed or was sampled): "0 of 0 reviewed" checked nothing."""
    empty = verdict(needs_review=0, unreviewed=0, compared=0, verdicts={})
    assert status(summary(), empty, "reviewed") == "incomplete"
    assert status(summary(), verdict(needs_review=0, unreviewed=0, verdicts={}), "reviewed") == "pass"


def test_the_speed_says_what_load_it_was_measured_under_and_points_to_bench() -> None:
    def beside(**over: Any) -> str:
        return next(f for f in figures(summary(**over), verdict()) if f.key == "speed").beside

    replayed = beside(kind="replay", settings={"concurrency": 8})
    assert "replay's own load (up to 8 prompts at a time, both sides asked at once" in replayed
    assert "shadowdiff bench" in replayed
    assert "live traffic" in beside(kind="serve", settings={}) and "shadowdiff bench" in beside(kind="compare")


def test_without_review_the_reviewed_figure_names_no_gate_it_was_not_judged_by() -> None:
    """Its status words say "no gate set": a gate named beside them would contradict them."""
    unreviewed = verdict(unreviewed=12, thresholds={"without_review": 1, "max_errors": 0})
    [reviewed] = [f for f in figures(summary(), unreviewed) if f.key == "reviewed"]
    assert (reviewed.status, reviewed.gate) == ("warn", "")
    assert reviewed.value == "18 of 30" and "not asked for (--without-review)" in reviewed.beside

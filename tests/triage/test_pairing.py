"""A pair made from two compared answers: margin, triage, cascade and scores in one place."""

from __future__ import annotations

import asyncio
from typing import Any

from shadowdiff.answers.compare import OFF_LOOP_CHARS, compare_answers, error_comparison
from shadowdiff.answers.records import Answer
from shadowdiff.triage.pairing import assemble_pair, assemble_pair_off_loop, divergence_margin
from shadowdiff.triage.signals import triage_answers
from shadowdiff.vocabulary import Side


def _answers(base: str, cand: str, margins: list[float | None] | None = None) -> dict[Side, Answer]:
    return {Side.BASELINE: Answer(Side.BASELINE, "m", base, "stop", tokens=base.split(), margins=margins),
            Side.CANDIDATE: Answer(Side.CANDIDATE, "m", cand, "stop", tokens=cand.split())}


def test_the_margin_is_the_baseline_s_at_the_first_divergent_token() -> None:
    answers = _answers("The capital is Paris .", "The capital is Lyon .", margins=[3.0, 2.5, 1.0, 0.2, 4.0])
    comparison = compare_answers(answers[Side.BASELINE], answers[Side.CANDIDATE])
    assert comparison.first_token == 3
    assert divergence_margin(answers[Side.BASELINE], comparison) == 0.2


def test_no_margin_without_logprobs_a_divergence_or_a_margin_that_far() -> None:
    answers = _answers("The capital is Paris .", "The capital is Lyon .")
    comparison = compare_answers(answers[Side.BASELINE], answers[Side.CANDIDATE])
    assert divergence_margin(answers[Side.BASELINE], comparison) is None
    assert divergence_margin(Answer(Side.BASELINE, "m", "a", margins=[1.0, 2.0]), comparison) is None
    assert divergence_margin(Answer(Side.BASELINE, "m", "a", margins=[1.0]), error_comparison()) is None


def test_the_pair_carries_the_triage_of_its_answers_and_the_margin_it_read() -> None:
    answers = _answers("It costs 12 dollars .", "It costs 15 dollars .", margins=[2.0, 2.0, 0.3, 1.0, 1.0])
    base, cand = answers[Side.BASELINE], answers[Side.CANDIDATE]
    comparison = compare_answers(base, cand)
    noise = compare_answers(base, base)
    request: dict[str, Any] = {"messages": [], "temperature": 0}
    pair = assemble_pair("k", 7, "/v1/chat/completions", "How much?", request, answers, comparison,
                         noise=noise, category="prices", comparable=True)
    assert (pair.key, pair.seq, pair.endpoint, pair.prompt, pair.request) == (
        "k", 7, "/v1/chat/completions", "How much?", request)
    assert (pair.comparison, pair.noise, pair.answers, pair.category, pair.margin) == (
        comparison, noise, answers, "prices", 0.3)
    fields = triage_answers(base, cand, comparison, 0.3)
    assert (pair.signals, pair.suggested, pair.priority) == (fields["signals"], fields["suggested"],
                                                             fields["priority"])
    assert pair.score is None and pair.noise_score is None


def test_a_cascade_score_adds_its_signal_and_both_scores_are_kept() -> None:
    answers = _answers("The answer is 4 .", "The answer is four .")
    comparison = compare_answers(answers[Side.BASELINE], answers[Side.CANDIDATE])
    score = {"agreement": 0.995, "tokens": 200, "agreed": 199, "cascade": True}
    noise_score = {"agreement": 1.0, "tokens": 200, "agreed": 200}
    pair = assemble_pair("k", 1, "", "", {}, answers, comparison,
                         scores={"score": score, "noise_score": noise_score})
    plain = assemble_pair("k", 1, "", "", {}, answers, comparison)
    assert pair.signals is not None and plain.signals is not None
    assert [s["kind"] for s in pair.signals] == [*(s["kind"] for s in plain.signals), "cascade"]
    assert pair.priority == plain.priority
    assert (pair.score, pair.noise_score) == (score, noise_score)


def test_on_an_event_loop_long_answers_make_the_same_pair() -> None:
    long = "word " * (OFF_LOOP_CHARS // 4)
    for base, cand in (("The sky is blue .", "The sky is green ."), (long + "a", long + "b")):
        answers = _answers(base, cand)
        comparison = compare_answers(answers[Side.BASELINE], answers[Side.CANDIDATE])
        made = asyncio.run(assemble_pair_off_loop("k", 1, "/v1/completions", "p", {}, answers, comparison,
                                                  category="c", comparable=False))
        assert made == assemble_pair("k", 1, "/v1/completions", "p", {}, answers, comparison,
                                     category="c", comparable=False)

"""The faster signals find what the signals found before they were made faster.

``signals_before`` is a frozen copy of shadowdiff.triage.signals as it was; every signal,
and each text reading behind one, must give the same result on random texts made of the
words and characters the patterns look for (number words, units, negations, booleans,
the characters that ``re`` takes for ASCII letters ignoring case...), on any text at
all, and on realistic answers: the simulator's baseline answers and its drifted
candidates, the stored texts in tests/store/data and the bench's pair.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shadowdiff.answers.compare import compare, compare_answers
from shadowdiff.answers.records import Answer, Choice
from shadowdiff.simulator import baseline_text, drift, profiles
from shadowdiff.triage import signals
from shadowdiff.vocabulary import Side
from tests.triage import signals_before as before

ROOT = Path(__file__).resolve().parents[2]

# what the patterns look for, and what lies next to it
_PIECES = (
    *before._ONES, *before._TEENS, *before._TENS, *before._ORDINALS, "zero", "hundred", "thousand", "million",
    "billion", "a", "and", "the", "no", "one", "each", "per", "at", "split",
    "not", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "isn't", "don’t", "can't", "only",
    "just", "matter", "doubt", "No.", "no.", "true", "false", "yes", "on", "off", "is", "set to", "it",
    "I can't help", "I cannot assist", "I am sorry", "I'm unable", "I won't", "as an AI", "I must decline",
    "cannot comply", "I", "i", "İ", "ı", "K", "ſ", "s", "ones", "seventeen", "twenty-five", "Seven", "THREE",
    "5", "42", "3.5", "1,000", "-7", "−2", "+3", "$5", "€10", "£3", "0.5", "12,345.6", "٣", "2019", "x5",
    "%", "percent", "km", "kg", "°C", "°", "USD", "dollars", "s", "ms", "hours", "k", "m",
    "```", "```python\n", "```json\n", "{\"a\": 1}", "word", "words", "repeat", "the the",
    "Label:", "answer =", "choice:", "CLASS=", "sentiment :", "(B)", "B)", "Yes", "\n  verdict:",
)
_GLUE = (" ", " ", " ", "", "\n", ", ", ". ", "-", ": ", "=", "(", ")", "'", "\"", "\t", "! ", "? ", "_", "’")


@st.composite
def _texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_GLUE)), max_size=40))
    return "".join(piece + glue for piece, glue in parts)


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[str, str]:
    """Two texts, the second mostly the first (a candidate's answer to the same prompt), or any other."""
    a = draw(_texts())
    if draw(st.booleans()):
        return a, draw(_texts())
    cut = draw(st.integers(0, len(a)))
    end = draw(st.integers(cut, len(a)))
    return a, a[:cut] + draw(_texts()) + a[end:]


def _same_signals(a: str, b: str, finish_a: str | None = "stop", finish_b: str | None = "stop") -> None:
    """Every text reading and every signal, and the whole triage, as before."""
    for text in (a, b):
        assert signals._numbers(text) == before._numbers(text)
        assert signals._negations(text) == before._negations(text)
        assert signals._booleans(text) == before._booleans(text)
        assert signals._repeats(text) == before._repeats(text)
        assert [m.span() for m in signals._number_words(text)] == [m.span() for m in before._number_words(text)]
    for name in ("numbers", "negation", "boolean", "repetition", "refusal", "label", "code", "length"):
        now = getattr(signals, name)(a, b)
        try:
            then = getattr(before, name)(a, b)
        except KeyError:    # (before: a boolean matched without case and not found by its lower case, "Yeſ")
            continue
        assert (now and now.as_json()) == (then and then.as_json()), name
    comparison = compare(a, b)
    now_t = signals.triage(a, b, comparison, finish_a=finish_a, finish_b=finish_b)
    try:
        then_t = before.triage(a, b, comparison, finish_a=finish_a, finish_b=finish_b)
    except KeyError:        # (the same)
        return
    assert (now_t.as_json(), now_t.suggested, now_t.priority) == (then_t.as_json(), then_t.suggested, then_t.priority)


def test_a_boolean_written_with_a_long_s_is_read_by_its_truth() -> None:
    # (found by the property test below: "Yeſ" matched "yes" without case, and its lower case was no key)
    assert signals.boolean("Yes ", "Yeſ s ") is None
    assert signals.boolean("Yes.", "No.") is not None


@settings(max_examples=400, deadline=None)
@given(_pairs())
@example(("In 2019 the Amazon carried seven rivers.", "In 2019 the Amazon carried six rivers."))
@example(("İt is not only true: no. 5", "ıt is no matter OFF."))
@example(("5ten and twenty-five ones", "(5)ten a  million, three hundred and two"))
def test_the_signals_are_as_before_on_texts_of_their_words(pair: tuple[str, str]) -> None:
    _same_signals(*pair)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120), st.text(max_size=120))
def test_the_signals_are_as_before_on_any_text(a: str, b: str) -> None:
    _same_signals(a, b)


def _simulated_pairs() -> list[tuple[str, str]]:
    """The simulator's baseline answers to prompts of every kind, each with the answer a
    heavily drifting candidate gives (numbers, repetition, lists, early stops, wording)."""
    subjects = ("rivers", "the French revolution", "binary search", "photosynthesis", "tax brackets",
                "a sorting function in Python", "the sum of 17 and 25", "this review: great phone, bad battery",
                "the names and dates in: Ada Lovelace, born 1815", "good morning into French",
                "the article about interest rates", "why the sky is blue", "three ideas for a birthday party")
    verbs = ("Explain", "Write", "Compute", "Classify", "Extract", "Translate", "Summarize", "List", "Describe")
    out = []
    profile = profiles.builtin("fp8-heavy")
    for i, (verb, subject) in enumerate((v, s) for v in verbs for s in subjects):
        for json_output in (False, True) if i % 7 == 0 else (False,):
            prompt = f"{verb} {subject}."
            base = baseline_text.generate(prompt, json_output=json_output).text
            key = baseline_text.prompt_key(prompt) + i
            out.append((base, drift.apply_profile(profile, key, prompt, drift.retokenize(base)).text))
    return out


def _stored_pairs() -> list[tuple[str, str]]:
    """The baseline and candidate texts a store of an earlier version kept, side by side."""
    out = []
    for folder in sorted((ROOT / "tests" / "store" / "data").glob("*/*")):
        texts = [folder / f"{side}.texts.json" for side in (Side.BASELINE, Side.CANDIDATE)]
        if all(path.exists() for path in texts):
            base, cand = (json.loads(path.read_text(encoding="utf-8")) for path in texts)
            out += [(str(x), str(y)) for x, y in zip(base, cand, strict=False)]
    return out


def test_the_corpus_is_realistic() -> None:
    """(The corpus below is what it says: changed pairs, with numbers and words in them.)"""
    simulated, stored = _simulated_pairs(), _stored_pairs()
    assert len(simulated) > 100 and len(stored) > 5
    changed = [(a, b) for a, b in simulated if a != b]
    assert len(changed) > len(simulated) // 3
    assert sum(signals.numbers(a, b) is not None for a, b in changed) > 5


def test_the_signals_are_as_before_on_realistic_answers() -> None:
    pairs = _simulated_pairs() + _stored_pairs()
    for a, b in pairs:
        _same_signals(a, b)
        _same_signals(b, a, finish_a="length")


def _answer(side: Side, text: str, *more: str) -> Answer:
    others = tuple(Choice(i, t, finish_reason="stop") for i, t in enumerate(more, 1))
    return Answer(side, "m", text=text, finish_reason="stop", status=200, others=others)


@pytest.mark.parametrize("more", [(), ("a second choice: 3 apples, not 4",)])
def test_triage_answers_is_as_before_on_the_bench_pair(more: tuple[str, ...]) -> None:
    """The bench's pair (bench/_instant.py's long answer and its changed copy), whole answers."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from _instant import CHANGED, LONG
    finally:
        sys.path.remove(str(ROOT / "bench"))
    base, cand = _answer(Side.BASELINE, LONG, *more), _answer(Side.CANDIDATE, CHANGED, *more)
    comparison = compare_answers(base, cand)
    now: dict[str, Any] = signals.triage_answers(base, cand, comparison, 0.7)
    assert now == before.triage_answers(base, cand, comparison, 0.7)
    assert [s["kind"] for s in now["signals"]] == ["numbers", "divergence"]


@pytest.mark.parametrize("value", [{"baseline_only": ["1"], "candidate_only": []}, None, 3, ("a", ["b"]),
                                   {"paths": [{"x": (1, 2)}]}, [1.5, "x", None]])
def test_a_signal_as_json_is_a_copy_as_asdict_made(value: Any) -> None:
    """(The value copied, not shared: a caller that changes the JSON changes no signal.)"""
    signal = signals.Signal("numbers", value, "why")
    made = signal.as_json()
    assert made == before.Signal("numbers", value, "why").as_json()
    if isinstance(value, dict | list):
        assert made["value"] is not value
        made["value"].clear()
        assert signal.value

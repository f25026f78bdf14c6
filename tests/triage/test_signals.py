"""Each triage signal on hand-written pairs."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shadowdiff.answers.compare import compare, compare_answers
from shadowdiff.answers.folding import fold
from shadowdiff.answers.records import Answer, Choice
from shadowdiff.review.blind import blind_reason
from shadowdiff.triage import signals
from shadowdiff.triage.signals import triage, triage_answers
from shadowdiff.vocabulary import Side


def test_a_changed_figure_with_its_unit() -> None:
    a = "The city had 2.1 million residents in 2020, up 4% from 2010."
    b = "The city had 2.2 million residents in 2020, up 4% from 2010."
    found = signals.numbers(a, b)
    assert found is not None
    assert found.value == {"baseline_only": ["2.1 million"], "candidate_only": ["2.2 million"]}
    assert "2.1 million" in found.reason and "2.2 million" in found.reason
    result = triage(a, b, compare(a, b))
    assert result.suggested == "factual"
    assert result.priority >= 100


def test_percent_and_degree_units_are_kept() -> None:
    found = signals.numbers("Growth was 3.5 % and it was 20°C.", "Growth was 3.6% and it was 20 °C.")
    assert found is not None
    assert found.value == {"baseline_only": ["3.5 %"], "candidate_only": ["3.6 %"]}
    # the same figure with and without its unit is a different claim
    unit = signals.numbers("It rose 5 % this year.", "It rose 5 this year.")
    assert unit is not None and unit.value == {"baseline_only": ["5 %"], "candidate_only": ["5"]}


def test_signs_and_thousands_separators() -> None:
    assert signals.numbers("It fell by -3 °C", "It fell by 3 °C") is not None
    assert signals.numbers("Revenue was $1,200", "Revenue was $1200") is None  # same number, other writing
    assert signals.numbers("no numbers here", "none here either") is None


def test_reordered_json_keys_are_equal() -> None:
    a = json.dumps({"name": "Alice", "year": 2023, "items": [1, 2]}, indent=2)
    b = "```json\n" + json.dumps({"items": [1, 2], "year": 2023, "name": "Alice"}) + "\n```"
    assert signals.structured(a, b) is None
    changed = json.dumps({"name": "Alice", "year": 2024, "items": [1, 2]})
    found = signals.structured(a, changed)
    assert found is not None
    assert found.value["paths"] == ["$.year"]
    assert signals.structured(a, "not json at all") is not None


def test_tool_call_arguments_are_compared_canonically() -> None:
    call = {"function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "C"}'}}
    same = {"function": {"name": "get_weather", "arguments": '{"unit":"C","city":"Paris"}'}}
    other = {"function": {"name": "get_weather", "arguments": '{"unit":"F","city":"Paris"}'}}
    assert signals.structured("", "", [call], [same]) is None
    found = signals.structured("", "", [call], [other])
    assert found is not None
    assert found.value["paths"] == ["$[0].arguments.unit"]



@pytest.mark.parametrize(("base", "cand", "reason"), [
    ([("get_weather", '{"unit": "celsius"}')], [("get_weather", '{"unit": "fahrenheit"}')],
     'call 0 (get_weather): argument unit differs ("celsius" and "fahrenheit")'),
    ([("get_weather", '{"unit": "fahrenheit"}')], [("get_weather", '{"unit": "celsius"}')],   # same words: blind
     'call 0 (get_weather): argument unit differs ("celsius" and "fahrenheit")'),
    ([("get_weather", '{"city": "Paris"}')], [("get_time", '{"city": "Paris"}')],
     "call 0 calls different tools (get_time and get_weather)"),
    ([("f", '{"days": 3}')], [("f", "{}")], "call 0 (f): argument days is given on one side only"),
    ([("f", '{"n": 1}')], [("f", '{"n": "1"}')],
     "call 0 (f): argument n is a number on one side, a string on the other"),
    ([("f", '{"a": {"b": [1, 2]}}')], [("f", '{"a": {"b": [1, 3]}}')], "call 0 (f): argument a.b[1] differs (2 and 3)"),
    ([("f", "{}")], [("f", "{}"), ("g", "{}")], "1 and 2 calls"),
])
def test_a_tool_call_signal_says_which_call_and_argument_changed_and_how(
        base: list[tuple[str, str]], cand: list[tuple[str, str]], reason: str) -> None:
    def calls(spec: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"id": "x", "type": "function", "function": {"name": n, "arguments": a}} for n, a in spec]
    found = signals.structured("", "", calls(base), calls(cand))
    assert found is not None and found.reason == "the tool calls differ: " + reason


def test_a_label_flip() -> None:
    found = signals.label("Label: Positive\n\nConfidence: 0.8", "Label: Negative\n\nConfidence: 0.8")
    assert found is not None
    assert found.value == {"baseline": "positive", "candidate": "negative"}
    assert signals.label("Yes, it is a question.", "No, it is not.") is not None
    assert signals.label("(B) Paris", "(C) Lyon") is not None
    assert signals.label("B", "B.") is None
    assert signals.label("A long answer that goes on and on.", "Another long answer going on.") is None


def test_a_repeated_word_in_a_poem() -> None:
    a = "The sea is calm tonight,\nthe tide is full, the moon lies fair"
    b = "The sea is calm calm tonight,\nthe tide is full, the moon lies fair"
    found = signals.repetition(a, b)
    assert found is not None
    assert found.value["candidate_only"] == ["calm calm"]
    result = triage(a, b, compare(a, b))
    assert result.suggested == "minor"
    assert signals.repetition("Is it is it?", "Is it is it?") is None


def test_formatting_only_bullets() -> None:
    a = "Tips:\n- sleep well\n- drink water"
    b = "Tips:\n\n- sleep well\n\n- drink water"
    comparison = compare(a, b)
    result = triage(a, b, comparison)
    assert result.suggested == "equivalent"
    assert result.priority < 10
    assert not [s for s in result.signals if s.kind in ("numbers", "label", "structured")]


def test_wording_drift_is_low_priority() -> None:
    a = "This method is usually the most important step of the process."
    b = "This method is typically the most significant step of the process."
    result = triage(a, b, compare(a, b), margin=0.1)
    assert result.suggested == "wording"
    assert result.priority < 40
    div = next(s for s in result.signals if s.kind == "divergence")
    assert "near-tie" in div.reason


def test_code_truncation_refusal_length() -> None:
    a = "Here:\n```python\nx = 1\n```"
    b = "Here:\n```python\nx = 2\n```"
    assert signals.code(a, b) is not None
    assert signals.code(a, a.replace("x = 1", "x = 1  ")) is None   # the block's end
    # whitespace in code is code, as for ``equivalent``: an indentation, a space
    assert signals.code(a, a.replace("x = 1", "  x = 1")) is not None
    assert signals.code(a, a.replace("x = 1", "x  =  1")) is not None
    assert signals.truncation("stop", "length") is not None
    assert "candidate was cut" in signals.truncation("stop", "length").reason  # type: ignore[union-attr]
    assert signals.truncation("stop", "stop") is None
    assert signals.refusal("Sure, here it is.", "I'm sorry, I can't help with that.") is not None
    assert signals.length("a" * 100, "a" * 40) is not None
    assert signals.length("a" * 100, "a" * 95) is None
    assert signals.length("", "a") is not None and signals.length("a", "") is not None   # either side empty
    assert signals.length("a" * 4, "a" * 5) is None and signals.length("a" * 5, "a" * 4) is None  # 1.25x: not yet


def test_triage_orders_a_number_before_code_before_wording() -> None:
    number = triage("It costs 5 dollars.", "It costs 6 dollars.", compare("It costs 5 dollars.", "It costs 6 dollars."))
    code_pair = ("```python\nprint(1)\n```", "```python\nprint(2)\n```")
    code_triage = triage(*code_pair, compare(*code_pair))
    wording = ("It is usually fine.", "It is typically fine.")
    wording_triage = triage(*wording, compare(*wording))
    assert number.priority > code_triage.priority > wording_triage.priority


_PIECES = st.sampled_from([
    "The total is 42.", "The total is 43 dollars.", "Label: yes", "Label: no", "yes", "the the", "on on",
    "I'm sorry, I can't help with that.", '{"a": 1}', '{"a": 2, "b": [1]}', "```python\nx = 1\n```",
    "```js\ny()\n```", "Some words here.", "\n", "x" * 40, "",
])
_TEXT = st.lists(_PIECES, max_size=4).map(" ".join)
_CALLS = st.none() | st.lists(st.builds(
    lambda name, args: {"id": "c", "type": "function", "function": {"name": name, "arguments": args}},
    st.sampled_from(["f", "g"]), st.sampled_from(["{}", '{"unit": "c"}', '{"unit": 1}', "raw"])), max_size=2)
_ANSWER = st.fixed_dictionaries({
    "text": _TEXT, "finish_reason": st.sampled_from([None, "stop", "length", "tool_calls"]),
    "reasoning": st.none() | st.sampled_from(["17 * 23 = 391", "17 * 23 = 381", ""]),
    "refusal": st.none() | st.sampled_from(["I won't.", ""]), "tool_calls": _CALLS,
    "others": st.sampled_from([(), (Choice(1, "Blue."),), (Choice(1, "Teal."),)]),
})


def _mirrored(value: Any) -> Any:
    """A signal's value as the swapped pair has it: baseline and candidate exchanged."""
    swap = {"baseline": "candidate", "candidate": "baseline", "baseline_only": "candidate_only",
            "candidate_only": "baseline_only"}
    if not isinstance(value, dict):
        return value
    out = {swap.get(k, k): v for k, v in value.items()}
    for key in ("side", "parses"):
        if key in out:
            out[key] = swap[out[key]]
    if "blocks" in out:
        out["blocks"] = out["blocks"][::-1]
    return out


_MARGIN = st.none() | st.floats(0, 3)


@settings(max_examples=300, deadline=None)
@given(_ANSWER, _ANSWER, _MARGIN, _MARGIN)
def test_every_signal_fires_whichever_side_is_the_baseline(x: dict[str, Any], y: dict[str, Any],
                                                           margin_x: float | None, margin_y: float | None) -> None:
    """Which signals fire, the suggestion and the priority do not depend on which
    answer is the baseline; the values are each other's mirror; and the reasons the review
    page shows (A first) are the same sentence when the same answer is A. The margin is
    the baseline's own (``margin_x`` where x is the baseline), so it differs with the side:
    neither the priority nor a reason shown before the reveal may depend on it."""
    def triaged(first: dict[str, Any], second: dict[str, Any], margin: float | None) -> dict[str, Any]:
        base, cand = Answer(Side.BASELINE, "m", **first), Answer(Side.CANDIDATE, "m", **second)
        return triage_answers(base, cand, compare_answers(base, cand), margin)

    forward, backward = triaged(x, y, margin_x), triaged(y, x, margin_y)
    assert (forward["suggested"], forward["priority"]) == (backward["suggested"], backward["priority"])
    assert [s["kind"] for s in forward["signals"]] == [s["kind"] for s in backward["signals"]]
    for f, b in zip(forward["signals"], backward["signals"], strict=True):
        if f["kind"] == "divergence":
            assert (f["value"]["margin"], b["value"]["margin"]) == (margin_x, margin_y)
        assert _mirrored(_marginless(f["value"])) == _marginless(b["value"]), f["kind"]
        # x is A: the baseline on the forward page, the candidate on the backward one
        assert blind_reason(f, True) == blind_reason(b, False), f["kind"]
        assert blind_reason(f, False) == blind_reason(b, True), f["kind"]


def _marginless(value: Any) -> Any:
    return {k: v for k, v in value.items() if k != "margin"} if isinstance(value, dict) else value


def test_the_margin_is_in_the_stored_reason_and_the_revealed_one_only() -> None:
    found = triage("The capital is Paris.", "The capital is Lyon.", compare("The capital is Paris.",
                                                                              "The capital is Lyon."), margin=0.2)
    div = next(s.as_json() for s in found.signals if s.kind == "divergence")
    assert "margin was 0.20 (a near-tie" in div["reason"]
    assert "margin" not in blind_reason(div, True) and "margin" not in blind_reason(div, False)
    assert "margin was 0.20 (a near-tie" in blind_reason(div, True, revealed=True)


@pytest.mark.parametrize("suggested", ["wording", "minor", "factual"])
def test_a_cascade_adds_its_signal_and_leaves_the_priority(suggested: str) -> None:
    """The score is the candidate's reading of the baseline's answer: the other way round
    it differs, so it must not move the priority that orders the blind queue."""
    fields = {"signals": [], "suggested": suggested, "priority": 40}
    score = {"agreement": 0.995, "tokens": 200, "agreed": 199, "cascade": True}
    cascaded = signals.with_cascade(fields, score)
    assert [s["kind"] for s in cascaded["signals"]] == ["cascade"] and cascaded["priority"] == 40


def test_stored_reasons_name_the_baseline_first_for_reports() -> None:
    found = signals.repetition("the the cat", "a cat cat")
    assert found is not None and found.reason == "the baseline repeats 'the the'; the candidate repeats 'cat cat'"
    found = signals.length("a" * 10, "a" * 19)
    assert found is not None and found.reason == (
        "the baseline has 10 characters, the candidate 19; the candidate is 1.90x as long")


@pytest.mark.parametrize(("a", "b"), [
    ("The bridge is not safe to cross.", "The bridge is safe to cross."),
    ("You should never store the key in the repository.", "You should always store the key in the repository."),
    ("The library cannot parse YAML.", "The library can parse YAML."),
    ("The function isn't thread-safe.", "The function is thread-safe."),
    ("There is no limit on the request size.", "There is a limit on the request size."),
    ("Nobody may read the file.", "Everybody may read the file."),
])
def test_an_added_or_removed_negation_is_a_sign_of_a_factual_regression(a: str, b: str) -> None:
    found = signals.negation(a, b)
    assert found is not None and signals.negation(b, a) is not None
    result = triage(a, b, compare(a, b), margin=0.1)
    assert result.suggested == "factual"
    assert result.priority >= 90


@pytest.mark.parametrize(("a", "b"), [
    ("The method returns True for an empty list.", "The method returns False for an empty list."),
    ("It is true that the cache is shared.", "It is false that the cache is shared."),
    ("Yes, the port is open.", "No, the port is open."),
    ("Is the port open? Answer: yes.", "Is the port open? Answer: no."),
    ("Set the flag to on.", "Set the flag to off."),
    ("debug: on\nlevel: 3", "debug: off\nlevel: 3"),
])
def test_a_flipped_boolean_is_a_sign_of_a_factual_regression(a: str, b: str) -> None:
    found = signals.boolean(a, b)
    assert found is not None and signals.boolean(b, a) is not None
    result = triage(a, b, compare(a, b), margin=0.1)
    assert result.suggested == "factual"
    assert result.priority >= 90


def test_the_boolean_signal_reads_on_off_and_no_only_as_values() -> None:
    assert signals.boolean("Put it on the table, and so on.", "Put it off the table, and so forth.") is None
    assert signals.boolean("There is no way to do it.", "There is one way to do it.") is None
    found = signals.boolean("The method returns True.", "The method returns False.")
    assert found is not None and found.reason == "the baseline says true, the candidate false"


def test_number_words_are_numbers() -> None:
    found = signals.numbers("The cluster has seven nodes.", "The cluster has eight nodes.")
    assert found is not None and found.value == {"baseline_only": ["7"], "candidate_only": ["8"]}
    result = triage("The cluster has seven nodes.", "The cluster has eight nodes.",
                    compare("The cluster has seven nodes.", "The cluster has eight nodes."), margin=0.1)
    assert result.suggested == "factual"
    # the same value written in words and in digits is the same number
    assert signals.numbers("It takes five days.", "It takes 5 days.") is None
    assert signals.numbers("There are twenty-five of them.", "There are 25 of them.") is None
    assert signals.numbers("About three million people.", "About 3 million people.") is None
    assert signals.numbers("two hundred and five", "205") is None
    assert signals.numbers("It is the third attempt.", "It is the 3rd attempt.") is None
    # "first" and "second" are the words of a list or of time, not numbers
    assert signals.numbers("First, check the map. First then check.", "First, check the map.") is None
    assert signals.numbers("one, two, three", "1, 2, 3") is None
    assert signals.numbers("It takes five days.", "It takes 6 days.") is not None
    # "one" the pronoun, "a second" of time, "at first": no numbers
    assert signals.numbers("Use the one that works, wait a second, at first.",
                           "Use the version that works, wait a moment, initially.") is None


@pytest.mark.parametrize(("a", "b"), [
    ("The bridge is not safe; do not cross it.", "The bridge isn't safe, so don't cross it."),
    ("Never store secrets in the repository.", "Secrets should never be stored in the repository."),
    ("The method returns True when the list is empty.", "When the list is empty, the method returns True."),
    ("There are seven nodes in the cluster.", "The cluster has seven nodes."),
    ("No, it is not supported.", "No: that is not supported."),
])
def test_a_reworded_answer_that_keeps_its_negations_and_values_does_not_flag(a: str, b: str) -> None:
    assert signals.negation(a, b) is None
    assert signals.boolean(a, b) is None
    assert signals.numbers(a, b) is None
    assert triage(a, b, compare(a, b), margin=0.1).suggested != "factual"


# -- the searches in folded text find what the case-ignoring patterns find ----------------

# the ignoring-case originals the folded searches stand for
_STARTS_IGNORING_CASE = re.compile(signals._STARTS.pattern.removeprefix("(?=[otfsenhza])"), re.IGNORECASE)


def _negations_ignoring_case(text: str) -> Counter[str]:
    text = signals._NOT_NEGATING.sub(" ", signals._FENCE.sub("", text))
    return Counter(m.group(0).lower().replace("’", "'") for m in signals._NEGATION.finditer(text))


def _booleans_ignoring_case(text: str) -> list[str]:
    text = signals._FENCE.sub("", text)
    found = [(m.start(), m.group(0)) for m in signals._TRUE_FALSE.finditer(text)]
    found += [(m.start("word"), m.group("word")) for m in signals._ALONE.finditer(text)]
    return [word.lower() for _, word in sorted(found)]


_WORDY = st.lists(st.sampled_from(["no", "On", "OFF", "not", "NOT only", "isn't", "don’t", "true", "Yes", "False",
                                   "is", "set to", "seven", "Twenty-one", "a hundred", "thousand", "third", "ones",
                                   "sıx", "ſeven", "İs", "\u212a", "5", "3.2 km", "$4", "-7", ".", ",", ":", "\n",
                                   " ", "\t", "(", "nothing", "cannot", "x", "é"]), max_size=30).map("".join)


@given(_WORDY)
def test_folded_searches_find_what_the_case_ignoring_patterns_find(text: str) -> None:
    assert signals._negations(text) == _negations_ignoring_case(text)
    assert signals._booleans(text) == _booleans_ignoring_case(text)
    starts = [m.start() for m in signals._STARTS.finditer(fold(text))]
    assert starts == [m.start() for m in _STARTS_IGNORING_CASE.finditer(text)]


@given(_WORDY)
def test_numbers_blank_the_digits_they_read_before_the_words(text: str) -> None:
    blanked = signals._NUMBER.sub(lambda m: " " * len(m.group(0)), text)
    digits: Counter[str] = Counter()
    for m in signals._NUMBER.finditer(text):
        sign = "-" if m.group("sign") in ("-", "−") else ""
        unit = (m.group("currency") or "") + (m.group("unit") or "").lower()
        digits[f"{sign}{m.group('num').replace(',', '')}{(' ' + unit) if unit else ''}"] += 1
    assert signals._numbers(text) == digits + Counter(signals._word_number_keys(blanked))


def test_number_words_with_a_letter_that_only_matches_ignoring_case_are_read() -> None:
    # "ı" (dotless) and "ſ" (long s) are "i" and "s" to a pattern ignoring case: they once raised here
    assert signals.numbers("sıx apples", "six apples") is None
    assert signals.numbers("the thırd day", "the ſeventh day") == signals.numbers("the third day", "the seventh day")

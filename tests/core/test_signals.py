"""Each triage signal on hand-written pairs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shadowdiff import signals
from shadowdiff.compare import compare
from shadowdiff.signals import triage


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
    assert signals.code(a, a.replace("x = 1", "x  =  1")) is None
    assert signals.truncation("stop", "length") is not None
    assert "candidate was cut" in signals.truncation("stop", "length").reason  # type: ignore[union-attr]
    assert signals.truncation("stop", "stop") is None
    assert signals.refusal("Sure, here it is.", "I'm sorry, I can't help with that.") is not None
    assert signals.length("a" * 100, "a" * 40) is not None
    assert signals.length("a" * 100, "a" * 95) is None


def test_triage_orders_a_number_before_code_before_wording() -> None:
    number = triage("It costs 5 dollars.", "It costs 6 dollars.", compare("It costs 5 dollars.", "It costs 6 dollars."))
    code_pair = ("```python\nprint(1)\n```", "```python\nprint(2)\n```")
    code_triage = triage(*code_pair, compare(*code_pair))
    wording = ("It is usually fine.", "It is typically fine.")
    wording_triage = triage(*wording, compare(*wording))
    assert number.priority > code_triage.priority > wording_triage.priority

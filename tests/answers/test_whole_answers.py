"""Comparing whole answers: a pair that differs anywhere is never identical.

Reasoning, tool calls, refusals and every choice count; tool-call ids (random per
request) do not; a plain one-choice answer compares exactly as its text did.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.compare import compare, compare_answers, render
from shadowdiff.answers.records import Answer, Choice
from shadowdiff.replay.offline import compare_files
from shadowdiff.store import Store
from shadowdiff.triage.signals import triage_answers
from shadowdiff.vocabulary import Outcome, Side


def call(arguments: str, name: str = "get_weather", call_id: str = "chatcmpl-tool-1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def side(side: Side = Side.BASELINE, text: str = "", **parts: Any) -> Answer:
    return Answer(side, "m", text, parts.pop("finish_reason", "stop"), 10, 20, **parts)


def kinds(base: Answer, cand: Answer) -> set[str]:
    comparison = compare_answers(base, cand)
    return {s["kind"] for s in triage_answers(base, cand, comparison, None)["signals"] or ()}


def test_a_plain_answer_compares_as_its_text() -> None:
    a, b = side(text="The total is 42 dollars."), side(Side.CANDIDATE, "The total is 43 dollars.")
    assert render(a.choices) == a.text
    assert compare_answers(a, b) == compare(a.text, b.text, finish_a="stop", finish_b="stop")


def test_a_changed_tool_argument_is_never_identical() -> None:
    a = side(tool_calls=[call('{"city": "Paris", "unit": "celsius"}')], finish_reason="tool_calls")
    b = side(Side.CANDIDATE, tool_calls=[call('{"city": "Paris", "unit": "fahrenheit"}')], finish_reason="tool_calls")
    assert compare_answers(a, b).outcome in (Outcome.NEAR, Outcome.DIVERGENT)
    assert "structured" in kinds(a, b)


def test_tool_call_ids_do_not_count_and_key_order_is_equivalent() -> None:
    a = side(tool_calls=[call('{"city": "Paris", "unit": "celsius"}', call_id="chatcmpl-tool-a")])
    same = side(Side.CANDIDATE, tool_calls=[call('{"city": "Paris", "unit": "celsius"}', call_id="chatcmpl-tool-b")])
    reordered = side(Side.CANDIDATE, tool_calls=[call('{"unit": "celsius", "city": "Paris"}')])
    assert compare_answers(a, same).outcome is Outcome.IDENTICAL
    assert compare_answers(a, reordered).outcome is Outcome.EQUIVALENT
    other_tool = side(Side.CANDIDATE, tool_calls=[call('{"city": "Paris", "unit": "celsius"}', name="get_time")])
    assert compare_answers(a, other_tool).outcome in (Outcome.NEAR, Outcome.DIVERGENT)


def test_answers_cut_off_inside_the_thinking() -> None:
    """The issue's example: both ``content`` null, the thinking says 391 and 381."""
    a = side(reasoning="17 * 23 = 391", finish_reason="length")
    b = side(Side.CANDIDATE, reasoning="17 * 23 = 381", finish_reason="length")
    assert a.text == b.text == ""
    assert compare_answers(a, b).outcome is not Outcome.IDENTICAL
    assert "numbers" in kinds(a, b)


def test_a_change_in_the_reasoning_only_is_its_own_lower_kind() -> None:
    a = side(text="391", reasoning="17 * 20 = 340, plus 51")
    b = side(Side.CANDIDATE, text="391", reasoning="17 * 23: 340 and 51")
    comparison = compare_answers(a, b)
    assert comparison.outcome is not Outcome.IDENTICAL
    triage = triage_answers(a, b, comparison, None)
    assert {s["kind"] for s in triage["signals"]} >= {"reasoning"} and triage["suggested"] == "wording"
    text_change = triage_answers(a, side(Side.CANDIDATE, "381", reasoning=a.reasoning),
                                 compare_answers(a, side(Side.CANDIDATE, "381", reasoning=a.reasoning)), None)
    assert text_change["priority"] > triage["priority"]


def test_reasoning_and_text_do_not_stand_in_for_each_other() -> None:
    """The same words as the answer on one side and as the thinking on the other are a change."""
    a, b = side(text="<think>x</think>"), side(Side.CANDIDATE, reasoning="x")
    assert render(a.choices) == render(b.choices)
    assert compare_answers(a, b).outcome is Outcome.NEAR


def test_a_refusal_and_every_choice_count() -> None:
    a, b = side(text="Sure."), side(Side.CANDIDATE, "Sure.", refusal="I can't help with that.")
    assert compare_answers(a, b).outcome is not Outcome.IDENTICAL and "refusal" in kinds(a, b)
    two = side(text="391", others=(Choice(1, "The answer is 391."),))
    changed = side(Side.CANDIDATE, "391", others=(Choice(1, "The answer is 381."),))
    assert compare_answers(two, changed).outcome is not Outcome.IDENTICAL
    assert {"choices", "numbers"} <= kinds(two, changed)
    assert compare_answers(two, side(Side.CANDIDATE, "391")).outcome is not Outcome.IDENTICAL


def test_identical_in_every_part_stays_identical() -> None:
    whole = {"reasoning": "think", "tool_calls": [call('{"a": 1}')], "others": (Choice(1, "x", "y"),)}
    a, b = side(text="t", **whole), side(Side.CANDIDATE, "t", **whole)
    assert compare_answers(a, b).outcome is Outcome.IDENTICAL
    assert triage_answers(a, b, compare_answers(a, b), None)["signals"] == []


def test_compare_on_run_batch_output_finds_a_changed_tool_call(tmp_path: Path) -> None:
    """``shadowdiff compare`` of two vLLM run-batch outputs whose only difference is a tool argument."""
    def output(unit: str, call_id: Any = "chatcmpl-tool-1") -> Path:
        body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "reasoning": None,
                                                     "tool_calls": [call(json.dumps({"unit": unit}),
                                                                         call_id=call_id)]},
                             "logprobs": None, "finish_reason": "tool_calls", "stop_reason": None}],
                "usage": {"prompt_tokens": 5, "total_tokens": 14, "completion_tokens": 9}}
        path = tmp_path / f"{unit}-{call_id}.jsonl"
        path.write_text(json.dumps({"id": "vllm-1", "custom_id": "q1", "response": {
            "status_code": 200, "request_id": "vllm-batch-1", "body": body}, "error": None}) + "\n")
        return path

    store = Store.open(tmp_path / "store")
    try:
        run_id, _, _ = compare_files(output("celsius"), output("fahrenheit"), store)
        [pair] = store.pairs(run_id)
        assert pair["outcome"] in ("near", "divergent")
        assert "structured" in {s["kind"] for s in pair["signals"]}
        # a body the reader refuses (a tool call's id that is a number) is an errored pair, never left out
        run_id, _, _ = compare_files(output("celsius"), output("fahrenheit", call_id=7), store)
        [pair] = store.pairs(run_id)
        assert pair["outcome"] == "error" and "tool call's id" in (pair.answers[Side.CANDIDATE].error or "")
    finally:
        store.close()


def test_tokens_per_second_is_per_choice() -> None:
    """The usage counts every choice's tokens, decoded side by side: two choices of 11
    tokens whose first and last came 1 s apart decode at 10 tokens/s each, as one choice
    of 11 tokens does."""
    one = Answer(Side.CANDIDATE, "m", "x", completion_tokens=11, ttft=0.0, duration=1.1, ttlt=1.0)
    two = replace(one, completion_tokens=22, others=(Choice(1, "y"),))
    assert one.tokens_per_second == two.tokens_per_second == pytest.approx(10.0)


@pytest.mark.parametrize(("x", "y"), [
    ('{"confirm": false, "dry_run": true}', '{"confirm": 0, "dry_run": 1}'),   # true is not 1
    ('{"n": 1}', '{"n": 1.0}'),
    ('"paris hotels"', "paris hotels"),                                       # JSON text is not raw text
    ('{"to": "alice", "to": "bob"}', '{"to": "bob"}'),                        # a repeated key is kept
    ('{"x": 1e400}', '{"x": 1e500}'),                                         # both overflow a float
    ("not json:  two spaces", "not json: two spaces"),                        # a tool reads every character
])
def test_arguments_equal_only_up_to_key_order_and_spacing(x: str, y: str) -> None:
    a = side(tool_calls=[call(x)], finish_reason="tool_calls")
    b = side(Side.CANDIDATE, tool_calls=[call(y)], finish_reason="tool_calls")
    assert compare_answers(a, b).outcome in (Outcome.NEAR, Outcome.DIVERGENT)
    assert "structured" in kinds(a, b)


def test_equal_decimals_written_differently_are_equivalent() -> None:
    a = side(tool_calls=[call('{"x": 1.50, "y": 2}')], finish_reason="tool_calls")
    b = side(Side.CANDIDATE, tool_calls=[call('{"y":2,"x":1.5}')], finish_reason="tool_calls")
    assert compare_answers(a, b).outcome is Outcome.EQUIVALENT


def test_a_changed_finish_reason_alone_is_a_change() -> None:
    tool = [call('{"city": "Paris"}')]
    a, b = side(tool_calls=tool, finish_reason="tool_calls"), side(Side.CANDIDATE, tool_calls=tool)
    assert compare_answers(a, b).outcome is Outcome.NEAR and "truncation" in kinds(a, b)
    cut = side(Side.CANDIDATE, "Paris.", finish_reason="length")
    assert compare_answers(side(text="Paris."), cut).outcome is Outcome.NEAR


def test_deeply_nested_arguments_cost_nothing_but_the_comparison_of_their_text() -> None:
    deep = "[" * 3000 + "]" * 3000
    for x, y in ((deep, deep[:-1] + "1]"), ("[" * 600 + "1" + "]" * 600, "[" * 600 + "2" + "]" * 600)):
        a = side(tool_calls=[call(x)], finish_reason="tool_calls")
        b = side(Side.CANDIDATE, tool_calls=[call(y)], finish_reason="tool_calls")
        assert compare_answers(a, b).outcome in (Outcome.NEAR, Outcome.DIVERGENT)
        assert "structured" in kinds(a, b)
        assert compare_answers(a, a).outcome is Outcome.IDENTICAL


def test_an_empty_reasoning_is_no_reasoning_and_choices_match_by_index() -> None:
    assert compare_answers(side(text="x", reasoning=""), side(Side.CANDIDATE, "x")).outcome is Outcome.IDENTICAL
    a = side(text="x", others=(Choice(1, "y"),))
    b = side(Side.CANDIDATE, "x", others=(Choice(2, "y"),))
    assert compare_answers(a, b).outcome is not Outcome.IDENTICAL


def test_choice_signals_read_well_and_blind() -> None:
    a = side(text="The total is 42.", others=(Choice(1, "It is 7."),))
    b = side(Side.CANDIDATE, "The total is 42.", others=(Choice(1, "It is 8."),))
    found = triage_answers(a, b, compare_answers(a, b), None)["signals"]
    assert [s["reason"] for s in found if s["kind"] == "choices"] == ["choice 1 differs"]
    shorter = side(Side.CANDIDATE, "The total is 42.")
    found = triage_answers(a, shorter, compare_answers(a, shorter), None)["signals"]
    assert [s["reason"] for s in found if s["kind"] == "choices"] == ["1 and 2 choices"]
    numbers = [s for s in found if s["kind"] == "numbers"]   # "7" is the model's; "--- choice 1 ---" is not
    assert numbers and "1" not in numbers[0]["value"]["baseline_only"]


def test_both_cut_off_inside_the_thinking_is_said_so() -> None:
    a = side(reasoning="17 * 23 = 391", finish_reason="length")
    b = side(Side.CANDIDATE, reasoning="17 * 23 = 381", finish_reason="length")
    found = triage_answers(a, b, compare_answers(a, b), None)["signals"]
    assert [s["reason"] for s in found if s["kind"] == "reasoning"] == [
        "the reasoning differs; both answers were cut off inside it"]


def test_compare_on_run_batch_output_reads_every_choice_and_the_thinking(tmp_path: Path) -> None:
    """``shadowdiff compare`` of run-batch outputs: a two-prompt completions answer whose
    second choice changed, and a chat answer cut off inside its thinking (content null)."""
    def output(name: str, second: str, product: str) -> Path:
        listed = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
                  "choices": [{"index": i, "text": t, "logprobs": None, "finish_reason": "stop", "stop_reason": None}
                              for i, t in enumerate([" Paris.", second])],
                  "usage": {"prompt_tokens": 8, "total_tokens": 12, "completion_tokens": 4}}
        thought = {"id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": "m",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                        "reasoning": f"17 * 23 = {product}", "tool_calls": []},
                                "logprobs": None, "finish_reason": "length", "stop_reason": None}],
                   "usage": {"prompt_tokens": 5, "total_tokens": 21, "completion_tokens": 16,
                             "completion_tokens_details": {"reasoning_tokens": 16}}}
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"vllm-{k}", "custom_id": k, "response": {
            "status_code": 200, "request_id": f"vllm-batch-{k}", "body": body}, "error": None}) + "\n"
            for k, body in (("listed", listed), ("thought", thought))))
        return path

    store = Store.open(tmp_path / "store")
    try:
        run_id, stored, _ = compare_files(output("a", " Rome.", "391"), output("b", " Oslo.", "381"), store)
        pairs = {p["key"]: p for p in store.pairs(run_id)}
        assert stored == 2 and {p["outcome"] for p in pairs.values()} <= {"near", "divergent"}
        assert [c.text for c in pairs["listed"].answers[Side.CANDIDATE].choices] == [" Paris.", " Oslo."]
        assert "choices" in {s["kind"] for s in pairs["listed"]["signals"]}
        assert pairs["thought"].answers[Side.BASELINE].reasoning_tokens == 16
        assert "reasoning" in {s["kind"] for s in pairs["thought"]["signals"]}
        run_id, _, _ = compare_files(output("c", " Rome.", "391"), output("d", " Rome.", "391"), store)
        # the same thinking cut by the cap before any answer is not "identical": no answer was compared
        assert {p["key"]: p["outcome"] for p in store.pairs(run_id)} == {"listed": "identical", "thought": "unanswered"}
    finally:
        store.close()


def test_a_changed_tool_argument_in_a_later_choice_is_a_structured_change() -> None:
    a = side(text="ok", others=(Choice(1, "", tool_calls=[call('{"unit": "celsius"}')], finish_reason="tool_calls"),))
    b = side(Side.CANDIDATE, "ok",
             others=(Choice(1, "", tool_calls=[call('{"unit": "fahrenheit"}')], finish_reason="tool_calls"),))
    found = triage_answers(a, b, compare_answers(a, b), None)
    assert "structured" in {s["kind"] for s in found["signals"]} and found["suggested"] == "factual"

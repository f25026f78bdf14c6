"""Reading whole answers: every choice and every part, from bodies and from streams.

The conformance tier checks these readers on bytes vLLM's own models build; these tests
need no vLLM and cover what 0.34 does not send (``reasoning_content``, refusals,
completions with a list of prompts).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from shadowdiff.answers import parse
from shadowdiff.answers.parse import finished, read_answer
from shadowdiff.answers.records import Answer, Choice
from shadowdiff.vocabulary import Side


def stream(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def answer(raw: bytes, streamed: bool) -> Answer:
    reading = read_answer(raw, streamed)
    assert reading.error is None, reading.error
    return finished(Answer(Side.BASELINE, None), reading)


def test_older_servers_reasoning_content_and_a_refusal() -> None:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "reasoning_content": "think",
                                                 "refusal": "I can't help with that."},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": 4}}}
    got = answer(json.dumps(body).encode(), False)
    assert (got.text, got.reasoning, got.refusal, got.reasoning_tokens) == ("", "think", "I can't help with that.", 4)
    streamed = answer(stream({"choices": [{"index": 0, "delta": {"reasoning_content": "thi"}}]},
                             {"choices": [{"index": 0, "delta": {"reasoning_content": "nk"}}]},
                             {"choices": [{"index": 0, "delta": {"refusal": "I can't help with that."},
                                           "finish_reason": "stop"}]}), True)
    assert (streamed.reasoning, streamed.refusal) == ("think", "I can't help with that.")


def test_no_reasoning_parser_means_no_reasoning() -> None:
    """vLLM 0.34 writes ``"reasoning": null`` in every message: that is no reasoning, not an empty one."""
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "<think>x</think>42",
                                                 "reasoning": None}, "finish_reason": "stop"}]}
    got = answer(json.dumps(body).encode(), False)
    assert (got.text, got.reasoning) == ("<think>x</think>42", None)


def test_a_completions_prompt_list_gives_every_choice() -> None:
    body = {"choices": [{"index": 0, "text": " Paris.", "finish_reason": "stop"},
                        {"index": 1, "text": " Rome.", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    got = answer(json.dumps(body).encode(), False)
    assert got.choices == [Choice(0, " Paris.", finish_reason="stop"), Choice(1, " Rome.", finish_reason="length")]
    streamed = answer(stream({"choices": [{"index": 1, "text": " Ro"}]}, {"choices": [{"index": 0, "text": " Par"}]},
                             {"choices": [{"index": 0, "text": "is.", "finish_reason": "stop"}]},
                             {"choices": [{"index": 1, "text": "me.", "finish_reason": "length"}]}), True)
    assert streamed.choices == got.choices


def test_tool_calls_have_one_shape_from_bodies_and_streams() -> None:
    call = {"id": "call-1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
        {**call, "index": 0}]}, "finish_reason": "tool_calls"}]}   # a server may add fields: the shape is kept
    streamed = stream(
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call-1", "type": "function",
                                                             "function": {"name": "f"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
                      "finish_reason": "tool_calls"}]})
    assert answer(json.dumps(body).encode(), False).tool_calls == [call]
    assert answer(streamed, True).tool_calls == [call]


def test_a_choice_index_that_is_not_a_number_is_a_malformed_answer() -> None:
    reading = read_answer(stream({"choices": [{"index": "zero", "delta": {"content": "x"}}]}), True)
    assert reading.error is not None and "index" in reading.error


def test_a_hostile_index_costs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A choice or tool-call index is a key, never a length: a sparse index costs one entry;
    past the limits (lowered here) the answer is malformed, with or without a choice 0."""
    got = answer(stream({"choices": [{"index": 3000, "delta": {"content": "x"}, "finish_reason": "stop"}]}), True)
    assert [c.index for c in got.choices] == [0, 3000]
    assert read_answer(stream({"choices": [{"index": 10**9, "delta": {"content": "x"}}]}), True).error
    monkeypatch.setattr(parse, "MAX_CHOICES", 4)
    for first in (0, 1):   # with and without a choice 0
        many = stream(*({"choices": [{"index": i, "delta": {"content": "x"}}]} for i in range(first, first + 5)))
        reading = read_answer(many, True)
        assert reading.error is not None and "index" in reading.error, reading.error
    call = {"index": 10**7, "function": {"name": "f", "arguments": "{}"}}
    reading = read_answer(stream({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}), True)
    assert reading.error is not None and "tool call's index" in reading.error


def test_odd_values_are_malformed_or_left_out() -> None:
    """Indexes that are not numbers (``true`` included) and duplicate choices are malformed;
    usage that is not a count is left out, never stored."""
    for index in (True, -1, "1", 1.5):
        assert read_answer(stream({"choices": [{"index": index, "delta": {"content": "x"}}]}), True).error
        body = {"choices": [{"index": index, "message": {"content": "x"}}]}
        assert read_answer(json.dumps(body).encode(), False).error
    twice = {"choices": [{"index": 0, "message": {"content": "a"}}, {"index": 0, "message": {"content": "b"}}]}
    assert "two choices" in (read_answer(json.dumps(twice).encode(), False).error or "")
    odd_usage = {"choices": [{"index": 0, "message": {"content": "x"}}],
                 "usage": {"prompt_tokens": "many", "completion_tokens": 3.5,
                           "completion_tokens_details": {"reasoning_tokens": {"a": 1}}}}
    got = answer(json.dumps(odd_usage).encode(), False)
    assert (got.prompt_tokens, got.completion_tokens, got.reasoning_tokens) == (None, None, None)


def test_tool_call_arguments_are_a_string_from_bodies_and_streams() -> None:
    def body(arguments: Any) -> bytes:
        return json.dumps({"choices": [{"index": 0, "message": {"tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]}}]}).encode()
    assert answer(body(None), False).tool_calls == [{"id": "c", "type": "function",
                                                     "function": {"name": "f", "arguments": ""}}]
    assert answer(body({"a": 1}), False).tool_calls[0]["function"]["arguments"] == '{"a": 1}'   # type: ignore[index]
    streamed = stream({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": None}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert answer(streamed, True).tool_calls == answer(body(None), False).tool_calls


def test_a_stream_that_ends_in_done_without_a_finish_reason_was_cut_short() -> None:
    """llama.cpp's server ends a running stream with [DONE] and no finish chunk when
    another request arrives (tests/answers/data/llamacpp/README.md): its text is a prefix."""
    cut = read_answer(stream(_chunk("The answer"), _chunk(" is")), True)
    assert cut.error is not None and "without a finish reason for choice 0" in cut.error
    assert "--interrupt_requests false" in cut.error
    # with n = 2, the choice that did not finish is named; one that did is not enough
    one = read_answer(stream(_chunk("a", finish="stop"), _chunk("b", index=1)), True)
    assert one.error is not None and "for choice 1:" in one.error
    assert read_answer(stream(_chunk("a", finish="stop"), _chunk("b", index=1, finish="length")), True).error is None
    assert read_answer(stream(), True).error == "the stream ended without a choice"
    # a body's missing finish reason is not a cut (nothing streams); its answer stands
    body = {"choices": [{"index": 0, "message": {"content": "x"}}]}
    assert read_answer(json.dumps(body).encode(), False).error is None


def test_a_null_reasoning_beside_reasoning_content() -> None:
    body = {"choices": [{"index": 0, "message": {"content": "x", "reasoning": None, "reasoning_content": "r"}}]}
    assert answer(json.dumps(body).encode(), False).reasoning == "r"


def test_the_first_answer_token_comes_after_the_thinking_and_one_clock_reading_serves_both() -> None:
    reading = parse.Reading()
    parse.read_chunk(reading, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    assert reading.first is None   # an empty delta is no token
    parse.read_chunk(reading, {"choices": [{"index": 0, "delta": {"reasoning": "17 * 23"}}]})
    assert reading.first is not None and reading.first_answer is None
    parse.read_chunk(reading, {"choices": [{"index": 0, "delta": {"content": "391"}}]})
    assert reading.first_answer is not None and reading.first_answer > reading.first
    called = parse.Reading()
    parse.read_chunk(called, {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "x", "type": "function", "function": {"name": "f"}}]}}]})
    assert called.first is not None and called.first == called.first_answer   # no thinking: one time


def test_timed_answers_have_no_first_answer_token_when_cut_off_in_the_thinking() -> None:
    cut = parse.timed(Answer(Side.BASELINE, None, reasoning="17 * 23 = ", finish_reason="length"), 0.0, 0.5, None, 2.0)
    assert (cut.ttft, cut.ttfat, cut.duration) == (0.5, None, 2.0)
    body = parse.timed(Answer(Side.BASELINE, None, text="391"), 0.0, None, None, 2.0)
    assert (body.ttft, body.ttfat) == (2.0, 2.0)   # a body's tokens all arrive at its end


def test_streamed_tool_call_names_are_joined_and_an_empty_reasoning_gives_way() -> None:
    """As the openai client's stream reader does: name pieces join like the arguments."""
    got = answer(stream(
        {"choices": [{"index": 0, "delta": {"reasoning": "", "reasoning_content": "391"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "x", "function": {"name": "get_"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "weather",
                                                                                    "arguments": "{}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}), True)
    assert got.reasoning == "391" and got.tool_calls is not None
    assert got.tool_calls[0]["function"] == {"name": "get_weather", "arguments": "{}"}


def test_a_body_with_more_tool_calls_than_the_bound_is_malformed_like_a_stream() -> None:
    calls = [{"id": str(i), "type": "function", "function": {"name": "f", "arguments": "{}"}}
             for i in range(parse.MAX_TOOL_CALLS + 1)]
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": calls},
                         "finish_reason": "tool_calls"}]}
    reading = read_answer(json.dumps(body).encode(), False)
    assert reading.error is not None and "tool calls" in reading.error


def _chunk(content: str | None = None, *, index: int = 0, finish: str | None = None,
           logprobs: Any = None, usage: Any = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": index, "delta": {} if content is None else {"content": content},
                              "finish_reason": finish}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    chunk: dict[str, Any] = {"choices": [choice]}
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def _streamed(*chunks: dict[str, Any]) -> Answer:
    reading = parse.Reading()
    for at, chunk in enumerate(chunks):
        parse.read_chunk(reading, chunk, at=1.0 + at)
    return parse.timed(finished(Answer(Side.CANDIDATE, "m"), reading), 0.0, reading.first, reading.first_answer,
                       10.0, reading.last)


def test_output_tokens_come_from_usage_then_logprobs_then_the_streamed_pieces() -> None:
    """llama.cpp's server sends no usage chunk in a stream: the count then
    comes from the logprobs' tokens, else from the pieces that carried output, and the
    answer says which."""
    usage = _streamed(_chunk("Hel"), _chunk("lo"), _chunk(finish="stop"),
                      {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    assert (usage.completion_tokens, usage.token_source) == (2, "usage")
    tokens = [{"token": t, "logprob": -0.1, "top_logprobs": []} for t in ("Hel", "lo", "!")]
    logprobs = _streamed(_chunk("Hel", logprobs={"content": tokens[:1]}),
                         _chunk("lo!", logprobs={"content": tokens[1:]}), _chunk(finish="stop"))
    assert (logprobs.completion_tokens, logprobs.token_source) == (3, "logprobs")   # 2 pieces, 3 tokens
    pieces = _streamed(_chunk(""), _chunk("Hel"), _chunk("lo"), _chunk(" there"), _chunk(finish="stop"))
    assert (pieces.completion_tokens, pieces.token_source) == (3, "stream")        # empty deltas carry nothing
    assert pieces.inter_token_latency == pytest.approx(1.0)                          # pieces at 2, 3, 4 s
    # several choices: the logprobs are the first choice's, so every choice's pieces count
    two = _streamed(_chunk("a", logprobs={"content": tokens[:1]}), _chunk("b", index=1), _chunk("c", index=1))
    assert (two.completion_tokens, two.token_source) == (3, "stream")
    nothing = _streamed(_chunk(finish="stop"))
    assert (nothing.completion_tokens, nothing.token_source) == (None, None)
    body = parse.read_body({"choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}]})
    assert finished(Answer(Side.BASELINE, "m"), body).token_source is None         # a body without usage: unknown
    assert Answer(Side.BASELINE, "m", completion_tokens=4).token_source == "usage"  # a count made elsewhere


def test_answer_from_is_the_finished_reading_timed_in_one_copy() -> None:
    from dataclasses import replace

    from shadowdiff.answers.parse import answer_from, timed

    raws = [
        (stream(_chunk("The answer"), _chunk(" is 4.", finish="stop")), True),
        (stream(_chunk("a", finish="stop"), _chunk("b", index=1, finish="length")), True),
        (stream({"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}, "finish_reason": "length"}]}), True),
        (stream({"choices": [{"index": 0, "delta": {"refusal": "no"}, "finish_reason": "stop"}]}), True),
        (json.dumps({"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode(), False),
        (json.dumps({"choices": [{"index": 0, "message": {"content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}]}).encode(), False),
        (b"not json", False),
    ]
    base = Answer(Side.CANDIDATE, "m")
    for raw, streamed in raws:
        reading = read_answer(raw, streamed)
        for first, first_answer, last in ((None, None, None), (1.5, 1.7, 2.5), (1.5, None, 2.0)):
            made = answer_from(base, reading, 200, 1.0, first, 3.0, first_answer, last)
            if reading.error is None:
                assert made == timed(finished(replace(base, status=200), reading), 1.0, first, first_answer, 3.0,
                                     last)
            else:
                assert made == replace(base, status=200, error=reading.error, duration=2.0)

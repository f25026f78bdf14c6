"""Tool calls: ``--enable-auto-tool-choice --tool-call-parser hermes``, and vLLM's 400s without,
over HTTP (the conformance tier checks the bytes against vLLM's own hermes parser)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest

from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.expected import Expected
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.tools import Tool, ToolRequest, arguments, change_argument, change_tool, decide
from tests.support.fixtures import MODEL
from tests.support.servers import serve_app
from tests.support.simulating import FLAGS, TOOLS, chunks, post

CHAT = "/v1/chat/completions"
CALL_ID = re.compile(r"chatcmpl-tool-[0-9a-f]{16}")


@pytest.fixture(scope="module")
def hermes() -> Iterator[str]:
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,), **FLAGS))) as url:
        yield url


def ask(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}], "temperature": 0, **extra}


def calling(calls: int, **extra: Any) -> str:
    """A question the model answers with ``calls`` tool calls (with these request fields)."""
    expected = Expected(SimulatorSettings(served_model_names=(MODEL,), **FLAGS))
    for n in range(300):
        question = f"What is the weather in place {n}?"
        [plan] = expected.plans(CHAT, ask(question, tools=TOOLS, **extra))
        if [t.text for t in plan.tokens].count("<tool_call>") == calls:
            return question
    raise AssertionError(calls)


def first(url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = post(url, CHAT, body)
    assert r.status_code == 200, r.text
    return dict(r.json()["choices"][0])


def test_a_tool_call_in_vllms_shape(hermes: str) -> None:
    choice = first(hermes, ask(calling(1), tools=TOOLS))
    message = choice["message"]
    assert list(message) == ["role", "content", "refusal", "audio", "function_call", "tool_calls", "reasoning"]
    assert message["content"] is None and choice["finish_reason"] == "tool_calls"
    [call] = message["tool_calls"]
    assert CALL_ID.fullmatch(call["id"]) and call["type"] == "function" and list(call) == ["id", "type", "function"]
    args = json.loads(call["function"]["arguments"])
    # arguments follow the tool's schema, written as json.dumps writes them
    assert call["function"]["arguments"] == json.dumps(args)
    if call["function"]["name"] == "get_weather":
        assert args["unit"] in ("celsius", "fahrenheit") and isinstance(args["city"], str)
    else:
        assert isinstance(args["zone"], str)


def test_parallel_calls_unless_the_request_says_no(hermes: str) -> None:
    question = calling(2)
    calls = first(hermes, ask(question, tools=TOOLS))["message"]["tool_calls"]
    assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"]
    assert len(first(hermes, ask(question, tools=TOOLS, parallel_tool_calls=False))["message"]["tool_calls"]) == 1


def test_a_streamed_call_comes_in_fragments_joined_by_index(hermes: str) -> None:
    question = calling(2)
    whole = first(hermes, ask(question, tools=TOOLS))["message"]["tool_calls"]
    found = chunks(post(hermes, CHAT, ask(question, tools=TOOLS, stream=True)).content)
    calls: dict[int, dict[str, Any]] = {}
    fragments = 0
    for delta in (c["choices"][0]["delta"] for c in found):
        for call in delta.get("tool_calls", ()):
            if "id" in call:   # the first delta of a call: its id, type, index and name, no arguments
                assert set(call) == {"id", "type", "index", "function"} and list(call["function"]) == ["name"]
                calls[call["index"]] = {"id": call["id"], "name": call["function"]["name"], "arguments": ""}
            else:
                assert set(call) == {"index", "function"} and list(call["function"]) == ["arguments"]
                calls[call["index"]]["arguments"] += call["function"]["arguments"]
                fragments += 1
            assert delta["content"] is None   # hermes sets it: "content": null beside the calls
    assert [(c["name"], c["arguments"]) for c in calls.values()] == \
        [(c["function"]["name"], c["function"]["arguments"]) for c in whole]
    assert fragments > 4 and found[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_required_always_calls_and_a_named_tool_is_that_tool(hermes: str) -> None:
    story = "Tell me a story about a lighthouse."
    required = first(hermes, ask(story, tools=TOOLS, tool_choice="required"))
    assert required["message"]["tool_calls"] and required["finish_reason"] == "tool_calls"
    assert required["message"]["content"] == ""   # vLLM: content or "" when a call is forced
    named = first(hermes, ask(story, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}}))
    assert [c["function"]["name"] for c in named["message"]["tool_calls"]] == ["get_time"]
    assert named["finish_reason"] == "stop"   # OpenAI reports stop for a named tool


def test_tool_choice_none_and_a_tool_result_get_text_answers(hermes: str) -> None:
    question = calling(1)
    plain = first(hermes, ask(question, tools=TOOLS, tool_choice="none"))
    assert "tool_calls" not in plain["message"] and plain["message"]["content"]
    assert plain["finish_reason"] == "stop"
    call = first(hermes, ask(question, tools=TOOLS))["message"]["tool_calls"][0]
    messages = [{"role": "user", "content": question},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": '{"temperature": 18}'}]
    after = first(hermes, {"model": MODEL, "messages": messages, "tools": TOOLS, "temperature": 0})
    assert "tool_calls" not in after["message"] and after["message"]["content"]


@pytest.mark.parametrize(("extra", "message", "param"), [
    ({"tools": TOOLS}, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
     None),
    ({"tools": TOOLS, "tool_choice": "required"}, 'tool_choice="required" requires --tool-call-parser to be set',
     None),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_time"}}},
     'tool_choice=function "get_time" requires --tool-call-parser to be set', None),
    ({"tool_choice": "auto"}, "When using `tool_choice`, `tools` must be set. (parameter=tool_choice)",
     "tool_choice"),
    ({"tools": TOOLS, "tool_choice": "sometimes"}, 'Invalid value for `tool_choice`: sometimes! Only named tools, '
     '"none", "auto" or "required" are supported. (parameter=tool_choice)', "tool_choice"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "The tool `nope` specified in `tool_choice` does not match any of the specified `tools` "
     "(parameter=tool_choice)", "tool_choice"),
])
def test_without_the_flags_tools_get_vllms_400(sim_url: str, extra: dict[str, Any], message: str,
                                               param: str | None) -> None:
    r = post(sim_url, CHAT, ask("Weather?", **extra))
    assert r.status_code == 400
    assert r.json() == {"error": {"message": message, "type": "BadRequestError", "param": param, "code": 400}}


def test_without_the_flags_tool_choice_none_is_a_plain_answer(sim_url: str) -> None:
    plain = first(sim_url, ask("Weather in Paris?", tools=TOOLS, tool_choice="none"))
    assert plain["message"]["content"] and "tool_calls" not in plain["message"]
    # an empty tools list is no tools at all, whatever tool_choice says
    assert first(sim_url, ask("Weather in Paris?", tools=[], tool_choice="required"))["message"]["content"]


def test_offered_tools_are_part_of_the_prompt(hermes: str) -> None:
    without = post(hermes, CHAT, ask("Weather in Paris?")).json()["usage"]["prompt_tokens"]
    with_tools = post(hermes, CHAT, ask("Weather in Paris?", tools=TOOLS)).json()["usage"]["prompt_tokens"]
    assert with_tools > without + 100


def test_the_decision_and_the_arguments_are_the_prompts() -> None:
    request = ToolRequest(tuple(Tool.of(t) for t in TOOLS), "auto")
    decisions = [decide(request, f"Weather in place {n}?", key) for n, key in enumerate(range(400))]
    called = [d for d in decisions if d is not None]
    assert 0.65 < len(called) / len(decisions) < 0.85 and any(len(d) == 2 for d in called)
    assert decide(request, "Weather in Oslo?", 7) == decide(request, "Weather in Oslo?", 7)
    # the best match for the question comes first
    assert all(d[0].name == "get_weather" for d in called)
    assert decide(ToolRequest(request.tools, "none"), "x", 1) is None
    assert decide(ToolRequest(request.tools, "auto", answered=True), "x", 1) is None
    assert all(decide(ToolRequest(request.tools, "required"), "x", k) for k in range(50))
    schema = Tool("t", "", {"type": "object", "required": ["n", "when", "tags", "mode", "ratio", "nested"],
                            "properties": {
                                "n": {"type": "integer", "minimum": 3, "maximum": 5}, "when": {"format": "date"},
                                "tags": {"type": "array", "items": {"type": "string"}},
                                "mode": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},
                                "ratio": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                                "nested": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
    args = arguments(schema, "about rivers", 5, 0)
    assert 3 <= args["n"] <= 5 and re.fullmatch(r"2025-\d\d-\d\d", args["when"]) and args["mode"] in ("a", "b")
    assert isinstance(args["tags"], list) and 0 <= args["ratio"] <= 1 and isinstance(args["nested"]["ok"], bool)


def test_tool_drift_changes_one_argument_or_the_tool() -> None:
    request = ToolRequest(tuple(Tool.of(t) for t in TOOLS), "auto")
    calls = decide(ToolRequest(request.tools, "required", parallel=False), "Weather in Oslo?", 3)
    assert calls is not None
    changed = change_argument(calls, request.tools, random.Random(1))
    assert changed is not None and changed[0].name == calls[0].name
    diff = [k for k in calls[0].arguments if calls[0].arguments[k] != changed[0].arguments.get(k)]
    assert len(diff) == 1
    other = change_tool(calls, request, "Weather in Oslo?", 3, random.Random(1))
    assert other is not None and other[0].name != calls[0].name
    named = ToolRequest(request.tools, "named", "get_time")
    assert change_tool(calls, named, "x", 3, random.Random(1)) is None   # a forced tool stays
    assert change_tool(calls, ToolRequest(request.tools[:1], "auto"), "x", 3, random.Random(1)) is None


def test_tokenize_counts_a_chat_with_tools_as_the_chat_does(hermes: str) -> None:
    body = ask("Weather in Paris?", tools=TOOLS)
    counted = post(hermes, "/tokenize", {"messages": body["messages"], "tools": TOOLS}).json()["count"]
    assert counted == post(hermes, CHAT, body).json()["usage"]["prompt_tokens"]

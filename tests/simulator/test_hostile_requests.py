"""Requests a hostile client sends, over HTTP: odd tool schemas get tool calls (vLLM takes
any dict as ``parameters``), a body nested past Python's recursion limit and the fields
vLLM's ``ChatCompletionRequest`` refuses get vLLM's 400s, ``enable_thinking`` values act as
Qwen3's template and vLLM's qwen3 parser read them, and ``Expected.drift`` names only
changes the request's answer shows."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.cli import settings_from_options
from shadowdiff.simulator.expected import Expected
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.tools import Tool, arguments
from tests.support.fixtures import MODEL
from tests.support.servers import serve_app
from tests.support.simulating import chunks, post

CHAT = "/v1/chat/completions"
FLAGS = {"reasoning_parser": "qwen3", "enable_auto_tool_choice": True, "tool_call_parser": "hermes"}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@pytest.fixture(scope="module")
def qwen3() -> Iterator[str]:
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,), **FLAGS))) as url:
        yield url


def ask(question: str = "What is the weather in Oslo?", **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}], "temperature": 0, **extra}


def _tool(parameters: Any) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "f", "parameters": parameters}}]


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {"type": "object", "properties": {}, "required": ["x"]}
    node = root
    for _ in range(levels):
        child: dict[str, Any] = {"type": "object", "properties": {}, "required": ["x"]}
        node["properties"]["x"] = child
        node = child
    return root


def _prop(schema: dict[str, Any], required: Any = ("a",)) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": schema}, "required": list(required)}


SCHEMAS = {
    "minimum-string": _prop({"type": "integer", "minimum": "x"}),
    "minimum-null": _prop({"type": "integer", "minimum": None, "maximum": None}),
    "number-maximum-string": _prop({"type": "number", "maximum": "big"}),
    "number-huge-range": _prop({"type": "number", "minimum": -1e308, "maximum": 1e308}),
    "integer-float-bounds": _prop({"type": "integer", "minimum": 1.5, "maximum": 1.7}),
    "required-unhashable": _prop({"type": "string"}, [["a"]]),
    "required-dict": _prop({"type": "string"}, [{"a": 1}]),
    "enum-inf-only": _prop({"enum": [float("inf")]}),
    "type-is-a-dict": _prop({"type": {"x": 1}}),
    "deep-properties": _deep(400),
    "deep-any-of": _prop(functools.reduce(lambda acc, _: {"anyOf": [acc]}, range(450), {"type": "string"})),
    "deep-items": _prop(functools.reduce(lambda acc, _: {"type": "array", "items": acc}, range(300),
                                         {"type": "string"})),
}


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_any_tool_schema_gets_valid_json_arguments(schema: dict[str, Any]) -> None:
    for key in range(20):
        args = arguments(Tool("f", "", schema), "weather in Oslo", key, 0)
        assert isinstance(args, dict)
        assert json.loads(json.dumps(args, allow_nan=False)) == args


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("choice", ["auto", "required"])
def test_hostile_tool_schemas_are_answered_200_with_a_call(qwen3: str, choice: str, stream: bool) -> None:
    for name, schema in SCHEMAS.items():
        # json.dumps writes the infinity of enum-inf-only as Infinity, which Python's parser reads
        r = httpx.post(qwen3 + CHAT, content=json.dumps(ask(tools=_tool(schema), tool_choice=choice, stream=stream)),
                       headers={"content-type": "application/json"}, timeout=10)
        assert r.status_code == 200, (name, r.text[:300])
        if stream:
            chunks(r.content)   # whole, ends in [DONE]
        elif choice == "required":
            calls = r.json()["choices"][0]["message"]["tool_calls"]
            assert calls and all(isinstance(json.loads(c["function"]["arguments"]), dict) for c in calls)
    # a bound written as 1e400 (Python reads it as infinity)
    raw = json.dumps(ask(tools=_tool(_prop({"type": "integer", "minimum": 0}))
                         , tool_choice="required")).replace('"minimum": 0', '"minimum": 1e400')
    r = httpx.post(qwen3 + CHAT, content=raw, headers={"content-type": "application/json"}, timeout=10)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("levels", [2000, 100_000])
def test_a_body_nested_past_the_recursion_limit_is_fastapis_400(qwen3: str, levels: int) -> None:
    head = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})[:-1]
    raw = head + ', "logit_bias": ' + '{"a":' * levels + "1" + "}" * levels + "}"
    r = httpx.post(qwen3 + CHAT, content=raw, headers={"content-type": "application/json"}, timeout=10)
    assert r.status_code == 400
    assert r.json() == {"error": {"message": "There was an error parsing the body", "type": "Bad Request",
                                  "param": None, "code": 400}}


def test_a_body_that_is_not_utf8_is_fastapis_400(qwen3: str) -> None:
    r = httpx.post(qwen3 + CHAT, content=b'{"model": "\xff"}', headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"]["message"] == "There was an error parsing the body"


def _error(url: str, body: dict[str, Any]) -> str:
    r = post(url, CHAT, body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] in ("Bad Request", "BadRequestError")
    return str(r.json()["error"]["message"])


def test_vllms_request_model_refusals(qwen3: str) -> None:
    """Messages as vLLM 0.34 words them (checked against its ChatCompletionRequest in
    FastAPI with its validation handler)."""
    message = _error(qwen3, ask(tools=[WEATHER], tool_choice={"type": "x", "function": {"name": "get_weather"}}))
    assert message == (
        "4 validation errors:\n"
        "  {'type': 'literal_error', 'loc': 'body.tool_choice', 'msg': \"Input should be 'none'\", "
        "'input': '<dict of 2 items>', 'ctx': {'expected': \"'none'\"}}\n"
        "  {'type': 'literal_error', 'loc': 'body.tool_choice', 'msg': \"Input should be 'auto'\", "
        "'input': '<dict of 2 items>', 'ctx': {'expected': \"'auto'\"}}\n"
        "  {'type': 'literal_error', 'loc': 'body.tool_choice', 'msg': \"Input should be 'required'\", "
        "'input': '<dict of 2 items>', 'ctx': {'expected': \"'required'\"}}\n"
        "  {'type': 'literal_error', 'loc': 'body.tool_choice.type', 'msg': \"Input should be 'function'\", "
        "'input': 'x', 'ctx': {'expected': \"'function'\"}}")
    efforts = "'none', 'minimal', 'low', 'medium', 'high', 'xhigh' or 'max'"
    assert _error(qwen3, ask(reasoning_effort="huge")) == (
        "1 validation error:\n  {'type': 'literal_error', 'loc': 'body.reasoning_effort', "
        f"'msg': \"Input should be {efforts}\", 'input': 'huge', 'ctx': {{'expected': \"{efforts}\"}}}}")
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "tool_calls": [{"id": 1, "type": "function",
                                                     "function": {"name": "f", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "1", "content": "x"}]
    assert _error(qwen3, {**ask(), "messages": history}) == (
        "4 validation errors:\n"
        "  {'type': 'string_type', 'loc': 'body.0.ChatCompletionMessageFunctionToolCallParam.id', "
        "'msg': 'Input should be a valid string', 'input': '1'}\n"
        "  {'type': 'string_type', 'loc': 'body.0.ChatCompletionMessageCustomToolCallParam.id', "
        "'msg': 'Input should be a valid string', 'input': '1'}\n"
        "  {'type': 'missing', 'loc': 'body.0.ChatCompletionMessageCustomToolCallParam.custom', "
        "'msg': 'Field required', 'input': '<dict of 3 items>'}\n"
        "  {'type': 'literal_error', 'loc': 'body.0.ChatCompletionMessageCustomToolCallParam.type', "
        "'msg': \"Input should be 'custom'\", 'input': 'function', 'ctx': {'expected': \"'custom'\"}}")
    as_string = [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": "abc"}]
    assert _error(qwen3, {**ask(), "messages": as_string}) == (
        "2 validation errors:\n"
        "  {'type': 'dict_type', 'loc': 'body.0.ChatCompletionMessageFunctionToolCallParam', "
        "'msg': 'Input should be a valid dictionary', 'input': 'a'}\n"
        "  {'type': 'dict_type', 'loc': 'body.0.ChatCompletionMessageCustomToolCallParam', "
        "'msg': 'Input should be a valid dictionary', 'input': 'a'}")
    assert _error(qwen3, ask(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "get_weather"}},
                             structured_outputs={"json": {"type": "object"}})) == \
        "You can only either use constraints for structured outputs or tools, not both."
    assert _error(qwen3, ask(structured_outputs={"json": {}, "regex": "a"})) == \
        "You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice')."
    assert _error(qwen3, ask(logit_bias={"a": {"b": 1}})) == (
        "1 validation error:\n  {'type': 'float_type', 'loc': 'body.logit_bias.a', "
        "'msg': 'Input should be a valid number', 'input': '<dict of 1 items>'}")
    # what vLLM accepts still passes
    for fine in (ask(tools=[WEATHER], tool_choice={"function": {"name": "get_weather"}}),
                 ask(reasoning_effort="none"), ask(logit_bias={"1": 2}),
                 ask(tools=[WEATHER], tool_choice="auto", structured_outputs={"json": {"type": "object"}})):
        assert post(qwen3, CHAT, {**fine, "max_tokens": 5}).status_code == 200


@pytest.mark.parametrize(("value", "thinks", "parsed"), [
    (False, False, False), (None, True, False), (0, True, False), ("", True, False), ([], True, False),
    ("false", True, True), (True, True, True), (1, True, True)])
def test_enable_thinking_is_read_as_qwen3s_template_and_vllms_parser_read_it(
        qwen3: str, value: Any, thinks: bool, parsed: bool) -> None:
    """The template skips thinking only for ``false`` itself; vLLM's qwen3 parser reads the
    value by truthiness, so for null, 0, "" the model thinks and it all stays content."""
    r = post(qwen3, CHAT, ask("What is 17 * 23?", chat_template_kwargs={"enable_thinking": value}))
    message = r.json()["choices"][0]["message"]
    assert (message["reasoning"] is not None) == parsed
    assert ("<think>" in (message["content"] or "") or parsed) == thinks


def _fp8() -> SimulatorSettings:
    return settings_from_options(
        served_model_name=("Qwen/Qwen3-8B-FP8",), model=None, profile="fp8", profile_file=None,
        drift=("reasoning_number=0.3", "tool_argument=0.3", "tool_name=0.3", "wording=0", "formatting=0",
               "early_stop=0"), drift_seed=None, replica_rate=None, seed=0, max_model_len=32768, max_logprobs=20,
        api_key=(), latency="zero", ttft=None, prefill_per_token=None, tpot=None, batch_slowdown=None, speed=None,
        max_num_seqs=256, fault=(), fault_seed=None, fault_after_tokens=3, fault_hang_seconds=1,
        fault_slow_seconds=0.5, enable_request_id_headers=False, sse_keep_alive_interval=0,
        default_temperature=1.0, **FLAGS)


def test_expected_drift_names_only_changes_the_answer_shows(qwen3: str) -> None:
    candidate = _fp8()
    expected = Expected(candidate)
    with serve_app(build_app(candidate)) as fp8:
        for extra in ({}, {"include_reasoning": False}, {"max_tokens": 20}):
            named = shown = 0
            for i in range(60):
                body = ask(f"Question {i}: explain the weather in Oslo and 17*{i}.", **extra)
                [kind] = expected.drift(CHAT, {**body, "model": "Qwen/Qwen3-8B-FP8"})
                a = post(qwen3, CHAT, body).json()["choices"][0]["message"]
                b = post(fp8, CHAT, {**body, "model": "Qwen/Qwen3-8B-FP8"}).json()["choices"][0]["message"]
                differs = any(a.get(k) != b.get(k) for k in ("reasoning", "content"))
                differs = differs or [c["function"] for c in a.get("tool_calls") or []] != \
                    [c["function"] for c in b.get("tool_calls") or []]
                assert (kind is not None) == differs, (extra, i, kind)
                named += kind is not None
                shown += differs
            if not extra:
                assert named > 5   # the check has changes to look at

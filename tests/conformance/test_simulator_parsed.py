"""Reasoning and tool calls are vLLM's: a simulator running with ``--reasoning-parser`` and
``--enable-auto-tool-choice --tool-call-parser hermes`` sends, for what its model wrote,
the bytes vLLM 0.34 sends when its own parsers read the same tokens.

The oracle gets the tokens the simulator's model generated for a request (taken from the
simulator's engine in this process, not from its answer) and runs vLLM's ``qwen3``,
``deepseek_r1`` and ``hermes`` parsers over them the way vLLM's chat serving code drives
them, whole or a token at a time; the simulator's answer must match it byte for byte.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from shadowdiff.simulator import logprobs
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.expected import Expected
from shadowdiff.simulator.intake import prepare
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.vocab import ADDED_TOKENS, SPECIAL_TOKENS, vocabulary
from tests.support.conformance.fixtures import Oracle
from tests.support.fixtures import MODEL
from tests.support.servers import serve_app

CHAT = "/v1/chat/completions"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The local time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
TOOLS = [WEATHER, TIME]
SERVERS: dict[str, dict[str, Any]] = {
    "qwen3-hermes": {"reasoning_parser": "qwen3", "enable_auto_tool_choice": True, "tool_call_parser": "hermes"},
    "qwen3": {"reasoning_parser": "qwen3"},
    "deepseek_r1": {"reasoning_parser": "deepseek_r1"},
    "hermes-thinking": {"enable_auto_tool_choice": True, "tool_call_parser": "hermes", "thinking": True},
    "hermes": {"enable_auto_tool_choice": True, "tool_call_parser": "hermes"},
}


def ask(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}], "temperature": 0, **extra}


def tool_prompt(calls: int, parallel: bool = True) -> tuple[str, int]:
    """A question whose answer is a tool call (``calls`` calls), found among a few, and
    where in the answer the first call starts (in tokens)."""
    expected = Expected(SimulatorSettings(served_model_names=(MODEL,), **SERVERS["qwen3-hermes"]))
    for n in range(200):
        question = f"What is the weather like in city number {n} today?"
        [plan] = expected.plans(CHAT, ask(question, tools=TOOLS, parallel_tool_calls=parallel))
        texts = [t.text for t in plan.tokens]
        if texts.count("<tool_call>") == calls:
            return question, texts.index("<tool_call>")
    raise AssertionError(f"no question among 200 gets {calls} tool calls")


(ONE_CALL, CALL_AT), (TWO_CALLS, _) = tool_prompt(1), tool_prompt(2)
USAGE = {"stream_options": {"include_usage": True}}
CASES: list[tuple[str, str, dict[str, Any]]] = [
    # reasoning, then the answer
    ("reasoning", "qwen3-hermes", ask("What is 17 * 23?")),
    ("reasoning-stream", "qwen3-hermes", ask("What is 17 * 23?", stream=True, **USAGE)),
    ("reasoning-cut-in-thinking", "qwen3-hermes", ask("What is 17 * 23?", max_tokens=12)),
    ("reasoning-cut-in-thinking-stream", "qwen3-hermes", ask("What is 17 * 23?", max_tokens=12, stream=True)),
    ("reasoning-logprobs", "qwen3", ask("What is 17 * 23?", logprobs=True, top_logprobs=2)),
    ("reasoning-logprobs-stream", "qwen3", ask("What is 17 * 23?", logprobs=True, top_logprobs=1, stream=True)),
    ("reasoning-token-ids-stream", "qwen3", ask("What is 17 * 23?", return_token_ids=True, stream=True)),
    ("reasoning-continuous-usage", "qwen3", ask("What is 17 * 23?", stream=True, stream_options={
        "include_usage": True, "continuous_usage_stats": True})),
    ("reasoning-n2", "qwen3", ask("Name three rivers.", n=2, temperature=1.0, seed=7)),
    ("reasoning-n2-stream", "qwen3", ask("Name three rivers.", n=2, temperature=1.0, seed=7, stream=True, **USAGE)),
    ("reasoning-hidden", "qwen3", ask("What is 17 * 23?", include_reasoning=False, logprobs=True)),
    ("reasoning-hidden-stream", "qwen3", ask("What is 17 * 23?", include_reasoning=False, stream=True,
                                             return_token_ids=True)),
    ("thinking-off", "qwen3", ask("What is 17 * 23?", chat_template_kwargs={"enable_thinking": False})),
    ("thinking-off-stream", "qwen3", ask("What is 17 * 23?", chat_template_kwargs={"enable_thinking": False},
                                         stream=True)),
    ("deepseek", "deepseek_r1", ask("What is 17 * 23?")),
    ("deepseek-stream", "deepseek_r1", ask("What is 17 * 23?", stream=True, **USAGE)),
    ("deepseek-cut-in-thinking", "deepseek_r1", ask("What is 17 * 23?", max_tokens=9)),
    ("deepseek-thinking-off", "deepseek_r1", ask("What is 17 * 23?", chat_template_kwargs={"enable_thinking": False})),
    ("deepseek-thinking-off-stream", "deepseek_r1", ask("What is 17 * 23?", stream=True,
                                                        chat_template_kwargs={"enable_thinking": False})),
    # tool calls
    ("tool-call", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS)),
    ("tool-call-stream", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, stream=True, **USAGE)),
    ("parallel-tool-calls", "qwen3-hermes", ask(TWO_CALLS, tools=TOOLS)),
    ("parallel-tool-calls-stream", "qwen3-hermes", ask(TWO_CALLS, tools=TOOLS, stream=True)),
    ("tool-call-cut", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, max_tokens=CALL_AT + 14)),
    ("tool-call-cut-stream", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, max_tokens=CALL_AT + 14, stream=True)),
    ("tool-required", "qwen3-hermes", ask("Tell me a story about a lighthouse.", tools=TOOLS, tool_choice="required")),
    ("tool-required-stream", "qwen3-hermes", ask("Tell me a story about a lighthouse.", tools=TOOLS,
                                                 tool_choice="required", stream=True)),
    ("tool-named", "qwen3-hermes", ask("Tell me a story.", tools=TOOLS,
                                       tool_choice={"type": "function", "function": {"name": "get_time"}})),
    ("tool-named-stream", "qwen3-hermes", ask("Tell me a story.", tools=TOOLS, stream=True,
                                              tool_choice={"type": "function", "function": {"name": "get_time"}})),
    ("tool-choice-none", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, tool_choice="none")),
    ("tool-choice-none-stream", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, tool_choice="none", stream=True)),
    ("tools-no-call-stream", "qwen3-hermes", ask("Write a short poem about autumn leaves.", tools=TOOLS,
                                                 stream=True)),
    ("tool-call-logprobs-stream", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, logprobs=True, stream=True)),
    ("tool-call-n2-stream", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, n=2, temperature=0.7, seed=3, stream=True)),
    ("tool-call-not-parallel", "qwen3-hermes", ask(TWO_CALLS, tools=TOOLS, parallel_tool_calls=False)),
    ("tool-call-no-reasoning-parser", "hermes", ask(ONE_CALL, tools=TOOLS)),
    ("tool-call-no-reasoning-parser-stream", "hermes", ask(ONE_CALL, tools=TOOLS, stream=True)),
    ("thinking-in-content-tool-call", "hermes-thinking", ask(ONE_CALL, tools=TOOLS)),
    ("thinking-in-content-tool-call-stream", "hermes-thinking", ask(ONE_CALL, tools=TOOLS, stream=True)),
    ("thinking-in-content", "hermes-thinking", ask("What is 17 * 23?", stream=True)),
    # Qwen3's template skips thinking only for enable_thinking false; vLLM's qwen3 parser
    # reads the value by truthiness, so 0 and null think and the parser keeps it as content
    ("thinking-kwarg-zero", "qwen3", ask("What is 17 * 23?", chat_template_kwargs={"enable_thinking": 0})),
    ("thinking-kwarg-null-stream", "qwen3-hermes", ask("What is 17 * 23?", stream=True,
                                                       chat_template_kwargs={"enable_thinking": None})),
    # stop strings: vLLM's detokenizer holds back len(stop) - 1 characters while streaming,
    # so the markers' text reaches the parsers split across deltas
    ("stop-in-thinking", "qwen3-hermes", ask("What is 17 * 23?", stop=["17"])),
    ("stop-in-thinking-stream", "qwen3-hermes", ask("What is 17 * 23?", stop=["17"], stream=True, **USAGE)),
    ("stop-held-reasoning-stream", "qwen3-hermes", ask("What is 17 * 23?", stop=["@@@@@@@@@"], stream=True)),
    ("stop-held-reasoning-2-stream", "qwen3", ask("Name three rivers.", stop=["@@", "nope"], stream=True,
                                                  logprobs=True)),
    ("stop-held-continuous-usage-stream", "qwen3", ask("What is 17 * 23?", stop=["@@@@@@@"], stream=True,
                                                       stream_options={"include_usage": True,
                                                                       "continuous_usage_stats": True})),
    ("stop-held-hidden-stream", "qwen3", ask("What is 17 * 23?", stop=["@@@@"], include_reasoning=False,
                                             stream=True)),
    ("stop-held-thinking-off-stream", "qwen3", ask("What is 17 * 23?", stop=["@@@@"], stream=True,
                                                   chat_template_kwargs={"enable_thinking": False})),
    ("stop-held-deepseek-stream", "deepseek_r1", ask("What is 17 * 23?", stop=["@@@@@"], stream=True)),
    ("stop-held-tool-call-stream", "qwen3-hermes", ask(ONE_CALL, tools=TOOLS, stop=["@@@@@@"], stream=True)),
    ("stop-held-parallel-tool-calls-stream", "qwen3-hermes", ask(TWO_CALLS, tools=TOOLS, stop=["@@@"],
                                                                 stream=True)),
    ("stop-held-tool-call-no-reasoning-parser-stream", "hermes", ask(ONE_CALL, tools=TOOLS, stop=["@@@@"],
                                                                     stream=True)),
    ("stop-in-content-stream", "qwen3-hermes", ask("What is 17 * 23?", stop=["."], stream=True)),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, tuple[str, Starlette]]]:
    running: dict[str, tuple[str, Starlette]] = {}
    contexts = []
    for name, flags in SERVERS.items():
        app = build_app(SimulatorSettings(served_model_names=(MODEL,), max_model_len=8192, **flags))
        context = serve_app(app)
        running[name] = (context.__enter__(), app)
        contexts.append(context)
    yield running
    for context in reversed(contexts):
        context.__exit__(None, None, None)


def generated(app: Starlette, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """What the simulator's model wrote for ``body``: each choice's tokens, read from its engine."""
    engine = app.state.engine
    job = prepare(engine, chat=True, headers={"content-type": "application/json"}, body=json.dumps(body).encode())
    vocab = vocabulary()
    [prompt] = job.prompts
    choices = []
    for choice in engine.generator.generate(prompt.sampling):
        tokens = [[t.id, t.text] for t in choice.tokens]
        if choice.hidden_id is not None:
            tokens.append([choice.hidden_id, vocab.decode([choice.hidden_id], skip_special=False)])
        choices.append({"tokens": tokens, "hidden": choice.hidden_id is not None,
                        "finish_reason": choice.finish_reason, "stop_reason": choice.stop_reason,
                        "logprobs": None if choice.positions is None
                        else logprobs.chat_content(choice.positions, job.top_n)["content"]})
    return choices, list(prompt.ids)


def compare(oracle: Oracle, url: str, app: Starlette, server: dict[str, Any], body: dict[str, Any]) -> str:
    response = httpx.post(url + CHAT, json=body, timeout=30)
    assert response.status_code == 200, response.text
    choices, prompt_ids = generated(app, body)
    vocab = vocabulary()
    markers = {text: vocab.token_id(text) for text in (*SPECIAL_TOKENS, *ADDED_TOKENS)}
    rebuilt = oracle("rebuild_parsed", request=body, raw=response.text, server=server, choices=choices,
                     prompt_ids=prompt_ids, eos=vocab.eos_id, markers=markers)
    found = []
    if rebuilt["raw"] != response.text:
        ours, theirs = response.text.split("\n\n"), rebuilt["raw"].split("\n\n")
        found.append("\n".join(difflib.unified_diff(theirs, ours, f"vLLM {oracle.version}", "simulator", lineterm="")))
    if rebuilt["problems"]:
        found.append(f"what vLLM's serving code would not do: {rebuilt['problems']}")
    if found:
        pytest.fail(f"{server} {body} differs from vLLM {oracle.version}:\n" + "\n".join(found))
    return response.text


@pytest.mark.parametrize(("server", "body"), [pytest.param(s, b, id=i) for i, s, b in CASES])
def test_reasoning_and_tool_calls_are_vllms(oracle: Oracle, servers: dict[str, tuple[str, Starlette]], server: str,
                                            body: dict[str, Any]) -> None:
    url, app = servers[server]
    compare(oracle, url, app, SERVERS[server], body)


def test_the_cases_show_what_they_are_named_for(servers: dict[str, tuple[str, Starlette]]) -> None:
    """The answers the cases check have the parts their names promise, so a case cannot
    pass by checking nothing (a tool call that never came, thinking that was not cut)."""
    url, _ = servers["qwen3-hermes"]

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return dict(httpx.post(url + CHAT, json=body, timeout=30).json()["choices"][0])

    cut = answer(ask("What is 17 * 23?", max_tokens=12))
    assert cut["message"]["content"] is None and cut["message"]["reasoning"] and cut["finish_reason"] == "length"
    assert len(answer(ask(ONE_CALL, tools=TOOLS))["message"]["tool_calls"]) == 1
    assert len(answer(ask(TWO_CALLS, tools=TOOLS))["message"]["tool_calls"]) == 2
    assert len(answer(ask(TWO_CALLS, tools=TOOLS, parallel_tool_calls=False))["message"]["tool_calls"]) == 1
    tool_cut = answer(ask(ONE_CALL, tools=TOOLS, max_tokens=CALL_AT + 14))
    assert tool_cut["finish_reason"] == "length" and "<tool_call>" in tool_cut["message"]["content"]
    assert answer(ask("Tell me a story.", tools=TOOLS, tool_choice={"type": "function", "function": {
        "name": "get_time"}}))["message"]["tool_calls"][0]["function"]["name"] == "get_time"


def test_a_wrong_split_is_caught(oracle: Oracle, servers: dict[str, tuple[str, Starlette]]) -> None:
    """The check can fail: the simulator's own tool-call answers with vLLM's quirks
    smoothed away (a whole answer's content "" instead of null; a stream without the
    "\\n\\n" of content before its call) are refused."""
    url, app = servers["qwen3-hermes"]
    vocab = vocabulary()
    markers = {text: vocab.token_id(text) for text in (*SPECIAL_TOKENS, *ADDED_TOKENS)}
    for stream in (False, True):
        body = ask(ONE_CALL, tools=TOOLS, stream=stream)
        raw = httpx.post(url + CHAT, json=body, timeout=30).text
        smoothed = raw.replace('"content":null,"refusal"', '"content":"","refusal"') if not stream else \
            "\n\n".join(f for f in raw.split("\n\n") if '"delta":{"content":"\\n\\n"}' not in f)
        assert smoothed != raw
        choices, prompt_ids = generated(app, body)
        rebuilt = oracle("rebuild_parsed", request=body, raw=smoothed, server=SERVERS["qwen3-hermes"],
                         choices=choices, prompt_ids=prompt_ids, eos=vocab.eos_id, markers=markers)
        assert rebuilt["raw"] == raw != smoothed

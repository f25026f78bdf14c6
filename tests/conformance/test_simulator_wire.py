"""The simulator's bytes are vLLM's bytes: every response shape it implements, rebuilt from
the same values by vLLM's own models and serialization calls, must match byte for byte.

A mismatch names the frame and shows both versions; ``extras`` lists fields the
simulator sends that vLLM's models do not have (which ``extra="allow"`` would otherwise
carry through unnoticed).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.faults import Fault, FaultSettings
from shadowdiff.simulator.scheduler import LatencyModel
from shadowdiff.simulator.settings import SimulatorSettings
from tests.support.conformance.fixtures import Oracle
from tests.support.fixtures import MODEL
from tests.support.servers import serve_app

CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"
MESSAGES = [{"role": "user", "content": "List three facts about the Moon, with numbers."}]
PROMPT = "The capital of France is"
SAMPLED = {"temperature": 1.0, "seed": 7}
TWO_PROMPTS = {"prompt": [PROMPT, "Name a long river in Europe."]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]

# (id, path, body): every shape the simulator implements, each once.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("chat", CHAT, {"max_tokens": 24}),
    ("chat-length", CHAT, {"max_tokens": 3}),
    ("chat-stop", CHAT, {"max_tokens": 40, "stop": ["."]}),
    ("chat-stop-included", CHAT, {"max_tokens": 40, "stop": ["."], "include_stop_str_in_output": True}),
    ("chat-logprobs", CHAT, {"max_tokens": 8, "logprobs": True, "top_logprobs": 2}),
    ("chat-n2", CHAT, {"max_tokens": 8, "n": 2, **SAMPLED}),
    ("chat-token-ids", CHAT, {"max_tokens": 8, "return_token_ids": True}),
    ("chat-prompt-logprobs", CHAT, {"max_tokens": 4, "prompt_logprobs": 1}),
    ("chat-max-completion-tokens", CHAT, {"max_completion_tokens": 5}),
    ("chat-min-tokens-ignore-eos", CHAT, {"max_tokens": 30, "min_tokens": 30, "ignore_eos": True}),
    ("chat-stream", CHAT, {"max_tokens": 12, "stream": True}),
    ("chat-stream-length", CHAT, {"max_tokens": 2, "stream": True}),
    ("chat-stream-stop", CHAT, {"max_tokens": 40, "stop": ["."], "stream": True}),
    ("chat-stream-usage", CHAT, {"max_tokens": 12, "stream": True, "stream_options": {"include_usage": True}}),
    ("chat-stream-continuous-usage", CHAT, {"max_tokens": 6, "stream": True,
                                            "stream_options": {"include_usage": True,
                                                               "continuous_usage_stats": True}}),
    ("chat-stream-logprobs", CHAT, {"max_tokens": 6, "stream": True, "logprobs": True, "top_logprobs": 2}),
    ("chat-stream-n2", CHAT, {"max_tokens": 6, "stream": True, "n": 2, **SAMPLED,
                              "stream_options": {"include_usage": True}}),
    ("chat-stream-token-ids", CHAT, {"max_tokens": 6, "stream": True, "return_token_ids": True}),
    ("completion", COMPLETIONS, {"max_tokens": 16}),
    ("completion-logprobs", COMPLETIONS, {"max_tokens": 6, "logprobs": 2}),
    ("completion-echo", COMPLETIONS, {"max_tokens": 6, "echo": True}),
    ("completion-echo-only", COMPLETIONS, {"max_tokens": 0, "echo": True}),
    ("completion-n2", COMPLETIONS, {"max_tokens": 6, "n": 2, **SAMPLED}),
    ("completion-prompt-logprobs", COMPLETIONS, {"max_tokens": 4, "prompt_logprobs": 1}),
    ("completion-token-ids", COMPLETIONS, {"max_tokens": 6, "return_token_ids": True}),
    ("completion-stop", COMPLETIONS, {"max_tokens": 40, "stop": ["."]}),
    ("completion-stream", COMPLETIONS, {"max_tokens": 12, "stream": True}),
    ("completion-stream-usage", COMPLETIONS, {"max_tokens": 8, "stream": True,
                                              "stream_options": {"include_usage": True}}),
    ("completion-stream-continuous-usage", COMPLETIONS, {"max_tokens": 5, "stream": True,
                                                         "stream_options": {"include_usage": True,
                                                                            "continuous_usage_stats": True}}),
    ("completion-stream-logprobs", COMPLETIONS, {"max_tokens": 5, "stream": True, "logprobs": 2}),
    ("completion-stream-echo", COMPLETIONS, {"max_tokens": 5, "stream": True, "echo": True}),
    ("completion-stream-n2", COMPLETIONS, {"max_tokens": 5, "stream": True, "n": 2, **SAMPLED}),
    ("completion-stream-token-ids", COMPLETIONS, {"max_tokens": 5, "stream": True, "return_token_ids": True}),
    # every sampled token has logprobs, the end of sequence included
    ("chat-logprobs-to-the-end", CHAT, {"logprobs": True, "top_logprobs": 1}),
    ("chat-stream-logprobs-to-the-end", CHAT, {"logprobs": True, "stream": True}),
    ("completion-logprobs-to-the-end", COMPLETIONS, {"max_tokens": 200, "logprobs": 1}),
    ("completion-stream-logprobs-to-the-end", COMPLETIONS, {"max_tokens": 200, "logprobs": 0, "stream": True}),
    ("completion-echo-logprobs", COMPLETIONS, {"max_tokens": 4, "echo": True, "logprobs": 2}),
    # the prompt's tokens at their true ranks, with the top k
    ("chat-prompt-logprobs-top-5", CHAT, {"max_tokens": 2, "prompt_logprobs": 5}),
    ("completion-prompt-logprobs-top-3", COMPLETIONS, {"max_tokens": 2, "prompt_logprobs": 3}),
    # several prompts in one completions request: a choice each (n each), usage summed
    ("completion-two-prompts", COMPLETIONS, {"max_tokens": 8, **TWO_PROMPTS}),
    ("completion-two-prompts-logprobs", COMPLETIONS, {"max_tokens": 40, "logprobs": 1, **TWO_PROMPTS}),
    ("completion-two-prompts-n2", COMPLETIONS, {"max_tokens": 6, "n": 2, **SAMPLED, **TWO_PROMPTS}),
    ("completion-stream-two-prompts", COMPLETIONS, {"max_tokens": 6, "stream": True, **TWO_PROMPTS,
                                                    "stream_options": {"include_usage": True}}),
    ("completion-stream-two-prompts-n2", COMPLETIONS, {"max_tokens": 5, "stream": True, "n": 2, **SAMPLED,
                                                       **TWO_PROMPTS}),
    # tools on a server without --enable-auto-tool-choice: "none" is answered, the rest refused
    ("chat-tool-choice-none", CHAT, {"max_tokens": 8, "tools": TOOLS, "tool_choice": "none"}),
    ("error-tools-auto", CHAT, {"tools": TOOLS}),
    ("error-tools-required", CHAT, {"tools": TOOLS, "tool_choice": "required"}),
    ("error-tools-named", CHAT, {"tools": TOOLS, "tool_choice": {"type": "function",
                                                                   "function": {"name": "get_weather"}}}),
    ("error-tool-choice-unknown-tool", CHAT, {"tools": TOOLS, "tool_choice": {"type": "function",
                                                                                "function": {"name": "nope"}}}),
    ("error-tool-choice-without-tools", CHAT, {"tool_choice": "auto"}),
    ("error-tool-without-function", CHAT, {"tools": [{"type": "function"}]}),
    # errors before the answer, and after the 200
    ("error-unknown-model", CHAT, {"model": "no-such-model"}),
    ("error-validation", CHAT, {"messages": "not a list"}),
    ("error-top-logprobs-alone", CHAT, {"top_logprobs": 2}),
    ("error-stream-options-alone", CHAT, {"stream_options": {"include_usage": True}}),
    ("error-max-tokens", COMPLETIONS, {"max_tokens": 10**6}),
    ("error-logprobs-over-limit", CHAT, {"logprobs": True, "top_logprobs": 21}),
    ("error-frame-logprobs-over-limit", CHAT, {"stream": True, "logprobs": True, "top_logprobs": 21}),
    ("error-frame-completion-logprobs", COMPLETIONS, {"stream": True, "logprobs": 21}),
]
FAULT_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("fault-error-frame-chat", CHAT, {"max_tokens": 8, "stream": True}),
    ("fault-error-frame-completion", COMPLETIONS, {"max_tokens": 8, "stream": True}),
    ("fault-error-500", CHAT, {"max_tokens": 8}),
]


def request_body(path: str, extra: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {"model": MODEL, "temperature": 0}
    base.update({"messages": MESSAGES} if path == CHAT else {"prompt": PROMPT})
    return {**base, **extra}


def compare(oracle: Oracle, url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    """Send ``body``; fail with everything that differs from what vLLM would have sent."""
    response = httpx.post(url + path, json=body, timeout=30)
    rebuilt = oracle("rebuild", request=body, path=path, status=response.status_code, raw=response.text)
    found = []
    if rebuilt["raw"] != response.text:
        ours, theirs = response.text.split("\n\n"), rebuilt["raw"].split("\n\n")
        found.append("\n".join(difflib.unified_diff(theirs, ours, f"vLLM {oracle.version}", "simulator",
                                                    lineterm="")))
    if rebuilt["extras"]:
        found.append(f"fields vLLM's models do not have: {rebuilt['extras']}")
    if rebuilt["problems"]:
        found.append(f"what vLLM's serving code would not do: {rebuilt['problems']}")
    if response.status_code != rebuilt["status"]:
        found.append(f"HTTP {response.status_code}, where vLLM answers {rebuilt['status']}")
    if response.headers["content-type"] != rebuilt["content_type"]:
        found.append(f"Content-Type {response.headers['content-type']!r}, vLLM's is {rebuilt['content_type']!r}")
    if found:
        pytest.fail(f"{path} {body} differs from vLLM {oracle.version}:\n" + "\n".join(found))
    return response


@pytest.fixture(scope="module")
def simulator() -> Iterator[str]:
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,), max_model_len=4096))) as url:
        yield url


@pytest.mark.parametrize(("path", "extra"), [pytest.param(p, e, id=i) for i, p, e in CASES])
def test_the_simulator_sends_vllms_bytes(oracle: Oracle, simulator: str, path: str, extra: dict[str, Any]) -> None:
    compare(oracle, simulator, path, request_body(path, extra))


@pytest.mark.parametrize(("path", "extra"), [pytest.param(p, e, id=i) for i, p, e in FAULT_CASES])
def test_injected_faults_look_like_vllms(oracle: Oracle, path: str, extra: dict[str, Any]) -> None:
    fault = Fault.ERROR_FRAME if extra.get("stream") else Fault.ERROR_500
    settings = SimulatorSettings(served_model_names=(MODEL,), faults=FaultSettings(rates={fault: 1.0}, seed=1))
    with serve_app(build_app(settings)) as url:
        compare(oracle, url, path, request_body(path, extra))


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/v1/models", None),
    ("POST", "/tokenize", {"model": MODEL, "prompt": PROMPT}),
    ("POST", "/tokenize", {"model": MODEL, "messages": MESSAGES, "return_token_strs": True}),
    ("POST", "/detokenize", {"model": MODEL, "tokens": [1, 2, 3]}),
], ids=["models", "tokenize", "tokenize-chat", "detokenize"])
def test_the_other_routes_send_vllms_bytes(oracle: Oracle, simulator: str, method: str, path: str,
                                           body: dict[str, Any] | None) -> None:
    response = httpx.request(method, simulator + path, json=body, timeout=30)
    assert response.status_code == 200, response.text
    rebuilt = oracle("rebuild_body", path=path, raw=response.text)
    assert rebuilt["extras"] == []
    assert rebuilt["raw"] == response.text


def test_a_stop_token_ends_the_answer_as_in_vllm(oracle: Oracle, simulator: str) -> None:
    """``stop_token_ids``: the stop reason is the token id (an integer), streamed and not."""
    plain = request_body(CHAT, {"max_tokens": 12, "return_token_ids": True})
    token_ids = httpx.post(simulator + CHAT, json=plain, timeout=30).json()["choices"][0]["token_ids"]
    for stream in (False, True):
        body = request_body(CHAT, {"max_tokens": 12, "stop_token_ids": [token_ids[3]], "stream": stream})
        answer = compare(oracle, simulator, CHAT, body).text
        assert f'"stop_reason":{token_ids[3]},' in answer   # the id itself, a number



def test_keep_alive_comments_are_vllms(oracle: Oracle) -> None:
    settings = SimulatorSettings(served_model_names=(MODEL,), sse_keep_alive_interval=0.02,
                                 latency=LatencyModel(ttft=0.1, tpot=0.05))
    with serve_app(build_app(settings)) as url:
        body = request_body(CHAT, {"max_tokens": 3, "stream": True})
        response = httpx.post(url + CHAT, json=body, timeout=30)
        assert response.text.startswith(": keep-alive\n\n")   # the case is exercised
        compare(oracle, url, CHAT, body)


def test_a_changed_field_order_is_caught(oracle: Oracle, simulator: str) -> None:
    """The check can fail: the simulator's own answer, with two keys swapped, is refused."""
    body = request_body(CHAT, {"max_tokens": 4})
    response = httpx.post(simulator + CHAT, json=body, timeout=30)
    swapped = response.text.replace('"object":"chat.completion","created":', '"created":', 1)
    swapped = swapped.replace(',"model":', ',"object":"chat.completion","model":', 1)
    assert swapped != response.text
    rebuilt = oracle("rebuild", request=body, path=CHAT, status=200, raw=swapped)["raw"]
    assert rebuilt == oracle("rebuild", request=body, path=CHAT, status=200, raw=response.text)["raw"] != swapped


def test_a_missing_frame_is_caught(oracle: Oracle, simulator: str) -> None:
    """The sequence is vLLM's too: a stream without its usage chunk, its role chunk or
    [DONE] is refused, though every frame it has is right."""
    body = request_body(CHAT, {"max_tokens": 4, "stream": True, "stream_options": {"include_usage": True}})
    frames = httpx.post(simulator + CHAT, json=body, timeout=30).text.split("\n\n")
    for left_out, problem in ((0, "delta before its role chunk"), (-3, "include_usage asked for a usage chunk"),
                              (-2, "no [DONE]")):
        rebuilt = oracle("rebuild", request=body, path=CHAT, status=200,
                         raw="\n\n".join(f for i, f in enumerate(frames) if i != left_out % len(frames)))
        assert any(problem in p for p in rebuilt["problems"]), (left_out, rebuilt["problems"])

"""A reasoning model: ``--reasoning-parser``, ``--thinking``, over HTTP (vLLM 0.34's shapes; the
conformance tier checks the bytes against vLLM's own parsers)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from shadowdiff.errors import ConfigError
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.cli import simulate
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.thinking import write
from tests.support.fixtures import MODEL
from tests.support.servers import serve_app
from tests.support.simulating import chunks, post

CHAT = "/v1/chat/completions"
ARITHMETIC = re.compile(r"(\d+) \* (\d+) = (\d+)")
QUESTION = [{"role": "user", "content": "What is 17 * 23?"}]


@pytest.fixture(scope="module")
def qwen3() -> Iterator[str]:
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,), reasoning_parser="qwen3"))) as url:
        yield url


@pytest.fixture(scope="module")
def thinking_without_parser() -> Iterator[str]:
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,), thinking=True))) as url:
        yield url


def chat(url: str, messages: list[dict[str, Any]] = QUESTION, **extra: Any) -> dict[str, Any]:
    r = post(url, CHAT, {"model": MODEL, "messages": messages, "temperature": 0, **extra})
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_the_thinking_works_through_correct_arithmetic() -> None:
    for prompt in ("What is 17 * 23?", "Plan a trip to Lisbon.", "Explain rivers."):
        thought = write(f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n")
        steps = ARITHMETIC.findall(thought)
        assert steps and all(int(a) * int(b) == int(c) for a, b, c in steps)
        assert "<" not in thought and ">" not in thought
    assert "17 * 23 = 391" in write("<|im_start|>user\nWhat is 17 * 23?<|im_end|>\n")


def test_the_thinking_is_the_reasoning_and_the_answer_the_content(qwen3: str) -> None:
    body = chat(qwen3)
    message, usage = body["choices"][0]["message"], body["usage"]
    assert list(message) == ["role", "content", "refusal", "audio", "function_call", "reasoning"]
    # vLLM's qwen3 parser keeps the newlines around the markers: "\n…\n" and "\n\n…"
    assert message["reasoning"].startswith("\n") and message["reasoning"].endswith("\n")
    assert "17 * 23 = 391" in message["reasoning"]
    assert message["content"].startswith("\n\n") and "391" in message["content"]
    assert "<think>" not in message["content"] + message["reasoning"]
    assert body["choices"][0]["finish_reason"] == "stop"
    # the reasoning tokens are those between <think> and </think>
    assert usage["completion_tokens_details"] == {"reasoning_tokens": usage["completion_tokens_details"][
        "reasoning_tokens"]}
    assert 10 < usage["completion_tokens_details"]["reasoning_tokens"] < usage["completion_tokens"]


def test_an_answer_cut_off_in_its_thinking_has_no_content(qwen3: str) -> None:
    body = chat(qwen3, max_tokens=12)
    choice, usage = body["choices"][0], body["usage"]
    assert choice["message"]["content"] is None and choice["finish_reason"] == "length"
    assert choice["message"]["reasoning"].startswith("\n")
    # the <think> marker is one of the 12 tokens, and not a reasoning token
    assert usage["completion_tokens"] == 12 and usage["completion_tokens_details"] == {"reasoning_tokens": 11}


def test_a_stream_sends_the_role_then_reasoning_then_content(qwen3: str) -> None:
    whole = chat(qwen3)["choices"][0]["message"]
    found = chunks(post(qwen3, CHAT, {"model": MODEL, "messages": QUESTION, "temperature": 0, "stream": True,
                                      "stream_options": {"include_usage": True}}).content)
    deltas = [c["choices"][0]["delta"] for c in found if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    kinds = [next(iter(d)) for d in deltas[1:] if d]
    first_content = kinds.index("content")
    assert set(kinds[:first_content]) == {"reasoning"} and set(kinds[first_content:]) == {"content"}
    assert "".join(d.get("reasoning", "") for d in deltas) == whole["reasoning"]
    assert "".join(d.get("content") or "" for d in deltas) == whole["content"]
    assert found[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0


def test_thinking_turned_off_in_the_template_gives_a_plain_answer(qwen3: str) -> None:
    thinking = chat(qwen3)
    plain = chat(qwen3, chat_template_kwargs={"enable_thinking": False})
    message = plain["choices"][0]["message"]
    assert message["reasoning"] is None and not message["content"].startswith("\n")
    assert plain["usage"]["completion_tokens_details"] == {"reasoning_tokens": 0}
    # Qwen3's template closes an empty thinking block in the prompt: "<think>\n\n</think>\n\n"
    assert plain["usage"]["prompt_tokens"] == thinking["usage"]["prompt_tokens"] + 4
    assert chat(qwen3, reasoning_effort="none")["choices"][0]["message"]["reasoning"] is None


def test_include_reasoning_false_leaves_the_reasoning_out(qwen3: str) -> None:
    body = chat(qwen3, include_reasoning=False, logprobs=True, return_token_ids=True)
    choice = body["choices"][0]
    assert choice["message"]["reasoning"] is None and choice["message"]["content"].startswith("\n\n")
    # and what would show it: the logprobs and token ids of the thinking
    assert choice["logprobs"] is None and choice["token_ids"] is None


def test_without_a_parser_the_thinking_stays_in_the_content(thinking_without_parser: str) -> None:
    body = chat(thinking_without_parser)
    message = body["choices"][0]["message"]
    assert message["reasoning"] is None
    assert re.fullmatch(r"<think>\n.*17 \* 23 = 391.*\n</think>\n\n.+", message["content"], re.S)
    assert body["usage"]["completion_tokens_details"] is None


def test_completions_have_no_thinking(qwen3: str) -> None:
    r = post(qwen3, "/v1/completions", {"model": MODEL, "prompt": "What is 17 * 23?", "max_tokens": 30,
                                        "temperature": 0})
    body = r.json()
    assert "<think>" not in body["choices"][0]["text"] and body["usage"]["completion_tokens_details"] is None


def test_logprobs_and_token_ids_cover_the_thinking(qwen3: str) -> None:
    body = chat(qwen3, logprobs=True, return_token_ids=True)
    choice = body["choices"][0]
    entries = choice["logprobs"]["content"]
    assert len(entries) == len(choice["token_ids"]) == body["usage"]["completion_tokens"]
    assert entries[0]["token"] == "<think>" and "</think>" in [e["token"] for e in entries]
    assert entries[-1]["token"] == "<|im_end|>"


@pytest.mark.parametrize(("settings", "message"), [
    ({"reasoning_parser": "granite"}, "invalid reasoning parser: granite (chose from { deepseek_r1,qwen3 })"),
    ({"enable_auto_tool_choice": True}, "Error: --enable-auto-tool-choice requires --tool-call-parser"),
    ({"enable_auto_tool_choice": True, "tool_call_parser": "mistral"},
     "invalid tool call parser: mistral (chose from { hermes })"),
])
def test_unknown_parsers_are_refused_at_start_up_as_vllm_refuses_them(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SimulatorSettings(**settings)
    assert str(caught.value) == message
    flags = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in settings.items()]
    result = CliRunner().invoke(simulate, flags)
    assert result.exit_code == 2 and message in result.output


def test_the_flags_are_documented_and_none_means_unset() -> None:
    help_text = CliRunner().invoke(simulate, ["--help"]).output
    for flag in ("--reasoning-parser", "--enable-auto-tool-choice", "--tool-call-parser", "--thinking",
                 "--quantization"):
        assert flag in help_text
    from shadowdiff.simulator.cli import settings_from_options
    options: dict[str, Any] = {
        "served_model_name": (), "model": None, "profile": "baseline", "profile_file": None, "drift": (),
        "drift_seed": None, "replica_rate": None, "seed": 0, "max_model_len": 4096, "max_logprobs": 20,
        "api_key": (), "latency": "zero", "ttft": None, "prefill_per_token": None, "tpot": None,
        "batch_slowdown": None, "speed": None, "max_num_seqs": 8, "fault": (), "fault_seed": None,
        "fault_after_tokens": 3, "fault_hang_seconds": 1.0, "fault_slow_seconds": 0.1,
        "enable_request_id_headers": False, "sse_keep_alive_interval": 0.0, "default_temperature": 1.0}
    assert settings_from_options(**options, reasoning_parser="none").reasoning_parser is None
    settings = settings_from_options(**options, reasoning_parser="qwen3")
    assert settings.thinks and settings.parsers.reasoning == "qwen3"
    assert not settings_from_options(**options, reasoning_parser="qwen3", thinking=False).thinks
    # --tool-call-parser without --enable-auto-tool-choice is accepted, and does nothing (as in vLLM)
    assert settings_from_options(**options, tool_call_parser="hermes").parsers.tools is None


def test_the_reasoning_is_json_safe_in_every_frame(qwen3: str) -> None:
    r = post(qwen3, CHAT, {"model": MODEL, "messages": QUESTION, "temperature": 0, "stream": True,
                           "logprobs": True})
    for frame in r.content.decode().split("\n\n")[:-2]:
        json.loads(frame.removeprefix("data: "))

"""What tests/answers/data/llamacpp/README.md says llama.cpp's server sends, checked on the captured bytes.

A re-capture with another llama-cpp-python that changes one of these facts fails here,
so the README (and whatever shadowdiff does about the fact) is revisited.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.llamacpp_capture import EXCHANGES, read


def chunks(name: str) -> list[dict[str, Any]]:
    events = read(name).events()
    assert events[-1] == b"[DONE]"
    return [json.loads(event) for event in events[:-1]]


def test_every_exchange_was_captured_and_reads_back() -> None:
    for name in EXCHANGES:
        captured = read(name)
        kind = dict(captured.headers).get("content-type", "")
        if kind.startswith("text/event-stream"):
            assert captured.status == 200 and captured.events()[-1] == b"[DONE]", name
        else:
            assert kind == "application/json", name
            assert isinstance(captured.json(), dict), name


def test_streams_carry_no_usage_even_when_asked() -> None:
    asked = chunks("chat-stream-usage")
    assert all("usage" not in chunk for chunk in asked)
    strip = [{k: v for k, v in chunk.items() if k != "id"} for chunk in asked]
    assert strip == [{k: v for k, v in chunk.items() if k != "id"} for chunk in chunks("chat-stream")]


def test_a_stream_is_a_role_chunk_one_chunk_a_token_and_an_empty_finish() -> None:
    stream = chunks("chat-stream")
    deltas = [chunk["choices"][0]["delta"] for chunk in stream]
    assert deltas[0] == {"role": "assistant"} and deltas[-1] == {}
    assert stream[-1]["choices"][0]["finish_reason"] == "length"
    [body] = read("chat-length").json()["choices"]
    assert "".join(delta["content"] for delta in deltas[1:-1]) == body["message"]["content"]
    assert len(deltas) - 2 == read("chat-length").json()["usage"]["completion_tokens"]
    with_logprobs = chunks("chat-stream-logprobs")[1:-1]
    assert all(len(chunk["choices"][0]["logprobs"]["content"]) == 1 for chunk in with_logprobs)


def test_frames_are_spaced_json_and_bodies_compact() -> None:
    assert read("chat-stream").events()[0].startswith(b'{"id": "chatcmpl-')
    assert read("chat").body.startswith(b'{"id":"chatcmpl-')


def test_n_is_ignored_and_unknown_fields_and_models_are_accepted() -> None:
    assert len(read("chat-n2").json()["choices"]) == 1
    assert read("chat-unknown-field").status == 200
    assert read("chat-unknown-model").json()["model"] == "no-such-model"


@pytest.mark.parametrize("name", ["version", "health", "metrics", "tokenize-vllm-style"])
def test_vllm_routes_are_missing(name: str) -> None:
    assert read(name).status == 404


def test_models_list_is_minimal() -> None:
    assert read("models").json() == {"object": "list", "data": [
        {"id": "smol-f16", "object": "model", "owned_by": "me", "permissions": []}]}


def test_tokenizer_route_counts_like_usage() -> None:
    tokens = read("tokenize").json()["tokens"]
    assert read("tokenize-count").json() == {"count": len(tokens)}


def test_greedy_is_not_argmax_under_the_default_repeat_penalty() -> None:
    def off_top(name: str) -> int:
        entries = read(name).json()["choices"][0]["logprobs"]["content"]
        return sum(entry["token"] != entry["top_logprobs"][0]["token"] for entry in entries)

    assert off_top("chat-logprobs") > 0
    assert off_top("chat-logprobs-no-penalty") == 0


def test_chat_logprobs_have_null_bytes_and_a_refusal_key() -> None:
    logprobs = read("chat-logprobs").json()["choices"][0]["logprobs"]
    assert logprobs["refusal"] is None
    assert all(entry["bytes"] is None for entry in logprobs["content"])


def test_echoed_logprobs_are_shifted_by_one() -> None:
    plain = read("completions-logprobs").json()["choices"][0]["logprobs"]
    echoed = read("completions-logprobs-echo").json()["choices"][0]["logprobs"]
    prompt = len(echoed["tokens"]) - len(plain["tokens"]) + 1   # one generated token is missing
    assert echoed["tokens"][prompt:] == plain["tokens"][:-1]
    assert echoed["token_logprobs"][prompt] != plain["token_logprobs"][0]


def test_errors() -> None:
    invalid = read("chat-bad-request")
    assert invalid.status == 500 and invalid.json()["error"]["type"] == "internal_server_error"
    too_long = read("chat-too-long")
    assert too_long.status == 400 and too_long.json()["error"]["code"] == "context_length_exceeded"

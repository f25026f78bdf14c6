"""Exact bytes on the wire, compared with vLLM 0.34's wire format."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.fixtures import MODEL
from tests.support.servers import HTTP
from tests.support.simulating import CHAT, chunks, post

CHAT_KEYS = ["id", "object", "created", "model", "choices", "service_tier", "system_fingerprint", "usage",
             "prompt_logprobs", "prompt_token_ids", "prompt_text", "kv_transfer_params", "ec_transfer_params",
             "metrics"]
CHAT_CHOICE_KEYS = ["index", "message", "logprobs", "finish_reason", "stop_reason", "token_ids",
                    "routed_experts", "weight_versions"]
MESSAGE_KEYS = ["role", "content", "refusal", "audio", "function_call", "reasoning"]
USAGE_KEYS = ["prompt_tokens", "total_tokens", "completion_tokens", "completion_tokens_details"]
COMPLETION_KEYS = ["id", "object", "created", "model", "choices", "service_tier", "system_fingerprint", "usage",
                   "kv_transfer_params", "ec_transfer_params", "metrics"]
COMPLETION_CHOICE_KEYS = ["index", "text", "logprobs", "finish_reason", "stop_reason", "token_ids",
                          "prompt_logprobs", "prompt_token_ids", "routed_experts", "weight_versions"]


def test_chat_body_has_vllm_fields_in_order(sim_url: str) -> None:
    r = post(sim_url, "/v1/chat/completions", {"model": MODEL, "messages": CHAT, "temperature": 0})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert list(body) == CHAT_KEYS
    assert list(body["choices"][0]) == CHAT_CHOICE_KEYS
    assert list(body["choices"][0]["message"]) == MESSAGE_KEYS
    assert list(body["usage"]) == USAGE_KEYS
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{16}", body["id"])
    assert body["object"] == "chat.completion"
    assert body["model"] == MODEL
    assert body["system_fingerprint"].startswith("vllm-0.34.0-")
    assert body["choices"][0]["finish_reason"] == "stop"
    # Compact JSON, UTF-8 kept: the em dash of the synthetic intro is not escaped.
    assert b'", "' not in r.content and b"\\u2014" not in r.content
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_completion_body_has_vllm_fields_in_order(sim_url: str) -> None:
    r = post(sim_url, "/v1/completions", {"model": MODEL, "prompt": "The capital of France is"})
    body = r.json()
    assert list(body) == COMPLETION_KEYS
    assert list(body["choices"][0]) == COMPLETION_CHOICE_KEYS
    assert re.fullmatch(r"cmpl-[0-9a-f]{16}", body["id"])
    # max_tokens defaults to 16 for completions
    assert body["usage"]["completion_tokens"] == 16
    assert body["choices"][0]["finish_reason"] == "length"


def test_eos_counts_as_a_completion_token(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0}).json()
    content = body["choices"][0]["message"]["content"]
    tokens = HTTP.post(sim_url + "/tokenize", json={"prompt": content, "add_special_tokens": False}).json()
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == tokens["count"] + 1


def test_chat_stream_frames(sim_url: str) -> None:
    r = post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "temperature": 0, "max_tokens": 4, "stream": True,
        "stream_options": {"include_usage": True}})
    assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
    raw = r.content
    found = chunks(raw)
    role, *content, last, usage = found
    assert len({c["id"] for c in found}) == 1 and len({c["created"] for c in found}) == 1
    assert list(role) == ["id", "object", "created", "model", "choices", "prompt_token_ids", "prompt_text"]
    assert role["choices"] == [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                "finish_reason": None}]
    for chunk in content:
        assert list(chunk) == ["id", "object", "created", "model", "choices", "kv_transfer_params"]
        assert list(chunk["choices"][0]) == ["index", "delta", "logprobs", "finish_reason", "token_ids"]
    assert list(last["choices"][0]) == ["index", "delta", "logprobs", "finish_reason", "stop_reason",
                                        "token_ids", "weight_versions"]
    assert last["choices"][0]["finish_reason"] == "length"
    # With a usage chunk to follow, the finish chunk carries no fingerprint.
    assert list(last) == ["id", "object", "created", "model", "choices", "kv_transfer_params"]
    assert list(usage) == ["id", "object", "created", "model", "choices", "usage", "system_fingerprint"]
    assert usage["choices"] == []
    assert list(usage["usage"]) == ["prompt_tokens", "total_tokens", "completion_tokens"]
    assert usage["usage"]["completion_tokens"] == 4
    text = "".join(c["choices"][0]["delta"]["content"] for c in [*content, last])
    plain = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "max_tokens": 4}).json()
    assert text == plain["choices"][0]["message"]["content"]
    assert raw.endswith(b"data: [DONE]\n\n")


def test_stream_without_usage_has_fingerprint_on_finish_chunk(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "temperature": 0, "max_tokens": 2, "stream": True}).content)
    assert "usage" not in found[-1]
    assert list(found[-1]) == ["id", "object", "created", "model", "choices", "system_fingerprint",
                               "kv_transfer_params"]


def test_stream_ending_in_eos_sends_an_empty_final_delta(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}).content)
    final = found[-2]["choices"][0]
    assert final["finish_reason"] == "stop" and final["stop_reason"] is None
    assert final["delta"] == {"content": ""}
    visible = len(found) - 3  # role, final, usage
    assert found[-1]["usage"]["completion_tokens"] == visible + 1


def test_continuous_usage_stats(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "temperature": 0, "max_tokens": 3, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}}).content)
    role, *rest, usage = found
    prompt = usage["usage"]["prompt_tokens"]
    assert list(role) == ["id", "object", "created", "model", "choices", "usage", "prompt_token_ids",
                          "prompt_text"]
    assert role["usage"] == {"prompt_tokens": prompt, "total_tokens": prompt, "completion_tokens": 0,
                             "completion_tokens_details": None}
    for i, chunk in enumerate(rest, start=1):
        assert list(chunk)[-2:] == ["usage", "kv_transfer_params"]
        assert chunk["usage"]["completion_tokens"] == i
    # continuous_usage_stats without include_usage does nothing
    found = chunks(post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "temperature": 0, "max_tokens": 2, "stream": True,
        "stream_options": {"continuous_usage_stats": True}}).content)
    assert all("usage" not in c for c in found)


def test_completion_stream_frames(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/completions", {
        "prompt": "Once upon a time", "temperature": 0, "max_tokens": 3, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}}).content)
    *content, usage = found
    assert len(content) == 3  # no role chunk
    for chunk in content:
        assert chunk["object"] == "text_completion"
        assert list(chunk["choices"][0]) == ["index", "text", "logprobs", "finish_reason", "stop_reason",
                                             "prompt_token_ids", "token_ids", "weight_versions"]
        assert list(chunk["usage"]) == ["prompt_tokens", "total_tokens", "completion_tokens"]
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    assert list(usage) == ["id", "object", "created", "model", "choices", "usage", "system_fingerprint"]


def test_n_greater_than_one_streams_a_role_chunk_per_index(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "temperature": 0.8, "seed": 7, "n": 3, "max_tokens": 5, "stream": True,
        "stream_options": {"include_usage": True}}).content)
    assert [c["choices"][0]["index"] for c in found[:3]] == [0, 1, 2]
    assert all(c["choices"][0]["delta"].get("role") == "assistant" for c in found[:3])
    assert all(len(c["choices"]) == 1 for c in found[:-1])
    finals = [c["choices"][0]["index"] for c in found if c["choices"] and c["choices"][0]["finish_reason"]]
    assert sorted(finals) == [0, 1, 2]
    assert found[-1]["usage"]["completion_tokens"] == 15


def test_greedy_with_n_above_one_is_rejected(sim_url: str) -> None:
    r = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "n": 2})
    assert r.status_code == 400
    assert r.json() == {"error": {"message": "n must be 1 when using greedy sampling, got 2.",
                                  "type": "BadRequestError", "param": None, "code": 400}}


def test_stop_string_sets_stop_reason_and_cuts_text(sim_url: str) -> None:
    full = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0}).json()
    text = full["choices"][0]["message"]["content"]
    stop = "basics"
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "stop": [stop]}).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["stop_reason"] == stop
    assert choice["message"]["content"] == text[: text.index(stop)]
    kept = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "stop": stop,
                                                  "include_stop_str_in_output": True}).json()
    assert kept["choices"][0]["message"]["content"] == text[: text.index(stop) + len(stop)]
    # Streamed, the same text arrives, never including the stop string.
    found = chunks(post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "stop": [stop],
                                                          "stream": True}).content)
    streamed = "".join(c["choices"][0]["delta"].get("content", "") for c in found)
    assert streamed == choice["message"]["content"]
    assert found[-1]["choices"][0]["stop_reason"] == stop


def test_stop_token_ids(sim_url: str) -> None:
    full = post(sim_url, "/v1/completions", {"prompt": "Hello", "temperature": 0, "max_tokens": 30,
                                             "return_token_ids": True}).json()
    ids = full["choices"][0]["token_ids"]
    body = post(sim_url, "/v1/completions", {"prompt": "Hello", "temperature": 0, "max_tokens": 30,
                                             "stop_token_ids": [ids[5]]}).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["stop_reason"] == ids[5]
    assert body["usage"]["completion_tokens"] == ids.index(ids[5]) + 1


def test_max_tokens_gives_length(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "max_tokens": 7}).json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 7
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0,
                                                  "max_completion_tokens": 5, "max_tokens": 50}).json()
    assert body["usage"]["completion_tokens"] == 5


def test_ignore_eos_and_min_tokens(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "max_tokens": 900,
                                                  "ignore_eos": True}).json()
    assert body["usage"]["completion_tokens"] == 900
    assert body["choices"][0]["finish_reason"] == "length"
    natural = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0}).json()
    longer = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0,
                                                    "min_tokens": natural["usage"]["completion_tokens"] + 20}).json()
    assert longer["usage"]["completion_tokens"] >= natural["usage"]["completion_tokens"] + 20
    assert longer["choices"][0]["finish_reason"] == "stop"


def test_request_id_header_sets_the_id(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 1},
                headers={"X-Request-Id": "abc-123"}).json()
    assert body["id"] == "chatcmpl-abc-123"
    body = post(sim_url, "/v1/completions", {"prompt": "x", "max_tokens": 1, "request_id": "r9"}).json()
    assert body["id"] == "cmpl-r9"
    found = chunks(post(sim_url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 2, "stream": True},
                        headers={"X-Request-Id": "s1"}).content)
    assert {c["id"] for c in found} == {"chatcmpl-s1"}


def test_request_id_header_echo_is_opt_in(start_simulator: Any) -> None:
    plain = start_simulator()
    echoing = start_simulator(enable_request_id_headers=True)
    body = {"messages": CHAT, "max_tokens": 1}
    assert "x-request-id" not in post(plain, "/v1/chat/completions", body, headers={"X-Request-Id": "q"}).headers
    r = post(echoing, "/v1/chat/completions", body, headers={"X-Request-Id": "q"})
    assert r.headers["x-request-id"] == "q"
    assert re.fullmatch(r"[0-9a-f]{32}", post(echoing, "/v1/chat/completions", body).headers["x-request-id"])


def test_chat_logprobs_join_to_the_content(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "logprobs": True,
                                                  "top_logprobs": 5, "max_tokens": 40}).json()
    choice = body["choices"][0]
    content = choice["logprobs"]["content"]
    assert "".join(e["token"] for e in content) == choice["message"]["content"]
    assert len(content) == body["usage"]["completion_tokens"]
    for entry in content:
        assert list(entry) == ["token", "logprob", "bytes", "top_logprobs"]
        assert entry["bytes"] == list(entry["token"].encode())
        top = entry["top_logprobs"]
        assert len(top) == 5
        assert top[0]["token"] == entry["token"] and top[0]["logprob"] == entry["logprob"]
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert sum(2.718281828 ** t["logprob"] for t in top) <= 1.0 + 1e-9


def test_chat_logprobs_stream_per_delta(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "temperature": 0, "logprobs": True, "top_logprobs": 2, "max_tokens": 6,
        "stream": True}).content)
    for chunk in found[1:]:
        choice = chunk["choices"][0]
        assert [e["token"] for e in choice["logprobs"]["content"]] == [choice["delta"]["content"]]


def test_completion_logprobs(sim_url: str) -> None:
    body = post(sim_url, "/v1/completions", {"prompt": "Tell me about rivers", "temperature": 0,
                                             "logprobs": 3, "max_tokens": 12}).json()
    choice = body["choices"][0]
    lp = choice["logprobs"]
    assert list(lp) == ["text_offset", "token_logprobs", "tokens", "top_logprobs"]
    assert "".join(lp["tokens"]) == choice["text"]
    offsets = [0]
    for token in lp["tokens"][:-1]:
        offsets.append(offsets[-1] + len(token))
    assert lp["text_offset"] == offsets
    for token, logprob, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"], strict=True):
        assert top[token] == logprob
        assert 1 <= len(top) <= 4


def test_completion_echo_with_logprobs(sim_url: str) -> None:
    body = post(sim_url, "/v1/completions", {"prompt": "Tell me about rivers", "temperature": 0, "echo": True,
                                             "logprobs": 1, "max_tokens": 4}).json()
    choice = body["choices"][0]
    assert choice["text"].startswith("Tell me about rivers")
    assert choice["logprobs"]["token_logprobs"][0] is None
    assert "".join(choice["logprobs"]["tokens"]) == choice["text"]


def test_prompt_logprobs(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "max_tokens": 1,
                                                  "prompt_logprobs": 2}).json()
    prompt_lp = body["prompt_logprobs"]
    assert len(prompt_lp) == body["usage"]["prompt_tokens"]
    assert prompt_lp[0] is None
    for entry in prompt_lp[1:]:
        assert 2 <= len(entry) <= 3
        for token_id, info in entry.items():
            assert int(token_id) >= 0 and list(info) == ["logprob", "rank", "decoded_token"]
    completion = post(sim_url, "/v1/completions", {"prompt": "Hello there", "max_tokens": 1,
                                                   "prompt_logprobs": 1}).json()
    assert completion["choices"][0]["prompt_logprobs"][0] is None


def test_return_token_ids(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "max_tokens": 5,
                                                  "return_token_ids": True}).json()
    ids = body["choices"][0]["token_ids"]
    assert len(ids) == 5
    decoded = HTTP.post(sim_url + "/detokenize", json={"tokens": ids}).json()["prompt"]
    assert decoded == body["choices"][0]["message"]["content"]
    assert len(body["prompt_token_ids"]) == body["usage"]["prompt_tokens"]


def test_completions_accepts_every_prompt_form(sim_url: str) -> None:
    ids = HTTP.post(sim_url + "/tokenize", json={"prompt": "Hello world"}).json()["tokens"]
    by_text = post(sim_url, "/v1/completions", {"prompt": "Hello world", "temperature": 0, "max_tokens": 5}).json()
    by_ids = post(sim_url, "/v1/completions", {"prompt": ids, "temperature": 0, "max_tokens": 5}).json()
    assert by_ids["choices"][0]["text"] == by_text["choices"][0]["text"]
    several = post(sim_url, "/v1/completions", {"prompt": ["a b c", "d e f"], "temperature": 0.5, "seed": 1,
                                                "n": 2, "max_tokens": 3}).json()
    assert [c["index"] for c in several["choices"]] == [0, 1, 2, 3]
    assert post(sim_url, "/v1/completions", {"prompt": [ids, ids], "max_tokens": 2}).status_code == 200


def test_tokenize_and_detokenize_round_trip(sim_url: str) -> None:
    text = "Déjà vu: 3.14 × 2 — «ok» 漢字"
    r = HTTP.post(sim_url + "/tokenize", json={"model": MODEL, "prompt": text, "return_token_strs": True})
    body = r.json()
    assert list(body) == ["count", "max_model_len", "tokens", "token_strs"]
    assert body["count"] == len(body["tokens"]) == len(body["token_strs"])
    assert body["max_model_len"] == 32768
    back = HTTP.post(sim_url + "/detokenize", json={"model": MODEL, "tokens": body["tokens"]}).json()
    assert back == {"prompt": text}
    chat = HTTP.post(sim_url + "/tokenize", json={"messages": CHAT}).json()
    plain = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 1}).json()
    assert chat["count"] == plain["usage"]["prompt_tokens"]
    assert HTTP.post(sim_url + "/detokenize", json={"tokens": [10**9]}).status_code == 400


def test_models_health_version_load(sim_url: str) -> None:
    models = HTTP.get(sim_url + "/v1/models").json()
    assert models["object"] == "list"
    card = models["data"][0]
    assert list(card) == ["id", "object", "created", "owned_by", "root", "parent", "max_model_len", "permission"]
    assert card["id"] == MODEL and card["owned_by"] == "vllm"
    assert list(card["permission"][0]) == [
        "id", "object", "created", "allow_create_engine", "allow_sampling", "allow_logprobs",
        "allow_search_indices", "allow_view", "allow_fine_tuning", "organization", "group", "is_blocking"]
    health = HTTP.get(sim_url + "/health")
    assert health.status_code == 200 and health.content == b""
    assert HTTP.get(sim_url + "/version").json() == {"version": "0.34.0"}
    assert HTTP.get(sim_url + "/load").json() == {"server_load": 0}


def test_metrics_have_vllm_names_and_real_values(start_simulator: Any) -> None:
    url = start_simulator()
    for _ in range(3):
        post(url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "max_tokens": 5})
    text = HTTP.get(url + "/metrics").text
    label = f'engine="0",model_name="{MODEL}"'
    assert f"vllm:generation_tokens_total{{{label}}} 15.0" in text
    assert f'vllm:request_success_total{{engine="0",finished_reason="length",model_name="{MODEL}"}} 3.0' in text
    assert f"vllm:e2e_request_latency_seconds_count{{{label}}} 3.0" in text
    assert f"vllm:prefix_cache_hits_total{{{label}}}" in text
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
                 "vllm:request_queue_time_seconds_bucket", "vllm:request_prefill_time_seconds_bucket",
                 "vllm:request_decode_time_seconds_bucket", "vllm:request_inference_time_seconds_bucket",
                 "vllm:request_prompt_tokens_bucket", "vllm:request_generation_tokens_bucket",
                 "vllm:request_params_max_tokens_bucket", "vllm:request_time_per_output_token_seconds_bucket",
                 "vllm:prompt_tokens_total", "vllm:num_preemptions_total", "vllm:prefix_cache_queries_total"):
        assert name in text, name


@pytest.mark.parametrize(("path", "method"), [("/nope", "GET"), ("/v1/models", "POST")])
def test_unknown_routes_answer_like_fastapi(sim_url: str, path: str, method: str) -> None:
    r = HTTP.request(method, sim_url + path)
    expected = (404, "Not Found") if path == "/nope" else (405, "Method Not Allowed")
    assert (r.status_code, r.json()) == (expected[0], {"detail": expected[1]})


def test_fast_token_frame_matches_the_model_dump() -> None:
    from shadowdiff.simulator.bodies import Context
    from shadowdiff.simulator.streaming import ChatChunks, Delta, frame

    ctx = Context("chatcmpl-x", 1, "m/é", "vllm-0.34.0-00000000")
    chunks_ = ChatChunks(ctx, continuous_usage=False, include_usage=False)
    expected = frame({"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m/é",
                      "choices": [{"index": 2, "delta": {"content": 'a "quoted" — \n'}, "logprobs": None,
                                   "finish_reason": None, "token_ids": None}], "kv_transfer_params": None})
    assert chunks_.delta(Delta(2, 'a "quoted" — \n', 1, 5)) == expected


def test_several_stop_strings_pick_the_earliest_end_then_list_order(sim_url: str) -> None:
    text = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0}).json()[
        "choices"][0]["message"]["content"]
    assert "basics" in text
    for stops, winner in ((["basics", "sic"], "sic"), (["ics", "sics"], "ics"), (["sics", "ics"], "sics")):
        body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "stop": stops}).json()
        assert body["choices"][0]["stop_reason"] == winner, stops
        assert body["choices"][0]["message"]["content"] == text[: text.index(winner)]


def test_min_tokens_protects_the_first_tokens_from_stop_strings(sim_url: str) -> None:
    base = {"messages": CHAT, "temperature": 0, "min_tokens": 1}
    one = post(sim_url, "/v1/chat/completions", {**base, "stop": ["e"]}).json()
    both = post(sim_url, "/v1/chat/completions", {**base, "stop": ["e", "ZZZZZZZZ"]}).json()
    assert one["choices"][0]["message"] == both["choices"][0]["message"]
    assert one["choices"][0]["message"]["content"].startswith("Let us look at")


def test_streaming_holds_back_what_could_start_a_stop_string(sim_url: str) -> None:
    body = {"messages": CHAT, "temperature": 0, "max_tokens": 8, "stream": True}
    plain = [c["choices"][0]["delta"].get("content") for c in chunks(post(sim_url, "/v1/chat/completions",
                                                                         body).content)[1:]]
    held = [c["choices"][0]["delta"].get("content") for c in chunks(post(sim_url, "/v1/chat/completions",
                                                                        {**body, "stop": ["ZZZZZ"]}).content)[1:]]
    assert "".join(held) == "".join(plain)
    # four characters (len("ZZZZZ") - 1) lag behind until the final chunk releases them
    sent = 0
    for i, piece in enumerate(held[:-1]):
        sent += len(piece)
        assert sent == max(0, len("".join(plain[: i + 1])) - 4)


def test_a_stop_string_in_the_first_token_still_sends_content(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "stop": ["Let"],
                                                          "stream": True}).content)
    final = found[-1]["choices"][0]
    assert final["delta"] == {"content": ""}
    assert final["stop_reason"] == "Let"


def test_token_ids_count_the_end_of_sequence(sim_url: str) -> None:
    body = post(sim_url, "/v1/completions", {"prompt": "Hello", "temperature": 0, "max_tokens": 500,
                                             "return_token_ids": True}).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert len(choice["token_ids"]) == body["usage"]["completion_tokens"]
    eos = HTTP.post(sim_url + "/tokenize", json={"prompt": "<|im_end|>"}).json()["tokens"]
    assert choice["token_ids"][-1] == eos[0]


def test_streamed_token_ids(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/completions", {"prompt": "Hello", "temperature": 0, "max_tokens": 4,
                                                     "return_token_ids": True, "stream": True}).content)
    plain = post(sim_url, "/v1/completions", {"prompt": "Hello", "temperature": 0, "max_tokens": 4,
                                              "return_token_ids": True}).json()["choices"][0]
    assert [i for c in found for i in c["choices"][0]["token_ids"]] == plain["token_ids"]
    assert found[0]["choices"][0]["prompt_token_ids"] == plain["prompt_token_ids"]
    assert all(c["choices"][0]["prompt_token_ids"] is None for c in found[1:])
    chat = chunks(post(sim_url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 3,
                                                         "return_token_ids": True, "stream": True}).content)
    assert isinstance(chat[0]["prompt_token_ids"], list)
    assert all(len(c["choices"][0]["token_ids"]) == 1 for c in chat[1:])


def test_null_top_logprobs_means_zero(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "max_tokens": 3,
                                                  "logprobs": True, "top_logprobs": None}).json()
    content = body["choices"][0]["logprobs"]["content"]
    assert len(content) == 3
    assert all(entry["top_logprobs"] == [] for entry in content)


def test_continuous_usage_counts_each_prompt_on_its_own(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/completions", {
        "prompt": ["one two three four five six", "x"], "temperature": 0, "max_tokens": 2, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}}).content)
    per_index = {c["choices"][0]["index"]: c["usage"]["prompt_tokens"] for c in found if c["choices"]}
    assert per_index[0] > per_index[1] == 1
    assert found[-1]["usage"]["prompt_tokens"] == per_index[0] + per_index[1]


def test_echo_with_zero_max_tokens_returns_the_prompt(sim_url: str) -> None:
    body = post(sim_url, "/v1/completions", {"prompt": "Say hello", "echo": True, "max_tokens": 0}).json()
    assert body["choices"][0]["text"] == "Say hello"
    assert body["choices"][0]["finish_reason"] == "length"


def test_echoed_logprobs_are_the_prompt_logprobs(sim_url: str) -> None:
    body = {"prompt": "Tell me about rivers", "temperature": 0, "echo": True, "logprobs": 1, "max_tokens": 3}
    plain = post(sim_url, "/v1/completions", body).json()["choices"][0]
    streamed = chunks(post(sim_url, "/v1/completions", {**body, "stream": True}).content)
    first = streamed[0]["choices"][0]["logprobs"]
    assert first["tokens"] == plain["logprobs"]["tokens"][: len(first["tokens"])]
    assert [t for c in streamed for t in c["choices"][0]["logprobs"]["tokens"]] == plain["logprobs"]["tokens"]
    prompt_lp = plain["prompt_logprobs"]
    assert prompt_lp[0] is None
    second = next(iter(prompt_lp[1].values()))
    assert second["logprob"] == plain["logprobs"]["token_logprobs"][1]

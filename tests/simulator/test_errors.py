"""Errors with vLLM 0.34's shapes, messages and status codes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.fixtures import MODEL
from tests.support.servers import HTTP
from tests.support.simulating import CHAT, chunks, post


def error(r: httpx.Response) -> dict[str, Any]:
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert list(body) == ["error"]
    assert list(body["error"]) == ["message", "type", "param", "code"]
    assert body["error"]["code"] == r.status_code
    return dict(body["error"])


def test_validation_error_lists_pydantic_errors(sim_url: str) -> None:
    r = post(sim_url, "/v1/chat/completions", {"model": MODEL})
    assert r.status_code == 400
    assert error(r) == {
        "message": "1 validation error:\n  {'type': 'missing', 'loc': 'body.messages', 'msg': 'Field required', "
                   "'input': '<dict of 1 items>'}",
        "type": "Bad Request", "param": "body.messages", "code": 400}
    r = post(sim_url, "/v1/chat/completions", {"messages": "x", "max_tokens": "abc", "temperature": "hot"})
    err = error(r)
    assert err["message"].startswith("3 validation errors:\n")
    assert "'loc': 'body.max_tokens'" in err["message"] and "'input': 'abc'" in err["message"]
    assert err["param"] == "body.messages"


def test_broken_json_and_empty_body(sim_url: str) -> None:
    r = HTTP.post(sim_url + "/v1/chat/completions", content=b'{"messages":',
                   headers={"content-type": "application/json"})
    assert error(r) == {
        "message": "1 validation error:\n  {'type': 'json_invalid', 'loc': 'body.12', 'msg': 'JSON decode error', "
                   "'input': '<dict of 0 items>', 'ctx': {'error': 'Expecting value'}}",
        "type": "Bad Request", "param": "body.12", "code": 400}
    r = HTTP.post(sim_url + "/v1/chat/completions", content=b"", headers={"content-type": "application/json"})
    assert error(r)["message"] == ("1 validation error:\n  {'type': 'missing', 'loc': 'body', "
                                   "'msg': 'Field required', 'input': 'None'}")


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded"])
def test_wrong_content_type(sim_url: str, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    r = HTTP.post(sim_url + "/v1/chat/completions", content=b'{"messages": []}', headers=headers)
    assert r.status_code == 400
    assert error(r) == {"message": "1 validation error:\n  Unsupported Media Type: Only 'application/json' is "
                                   "allowed", "type": "Bad Request", "param": None, "code": 400}


def test_unknown_model(sim_url: str) -> None:
    r = post(sim_url, "/v1/chat/completions", {"model": "foo", "messages": CHAT})
    assert r.status_code == 404
    assert error(r) == {"message": f"The model `foo` does not exist. Valid aliases: {MODEL}.",
                        "type": "NotFoundError", "param": "model", "code": 404}
    # Omitting the model is fine: the response names the served model.
    assert post(sim_url, "/v1/completions", {"prompt": "x", "max_tokens": 1}).json()["model"] == MODEL


@pytest.mark.parametrize(("body", "message", "param"), [
    ({"stream_options": {"include_usage": True}},
     "Stream options can only be defined when `stream=True`. (parameter=stream_options)", "stream_options"),
    ({"top_logprobs": 3}, "when using `top_logprobs`, `logprobs` must be set to true. (parameter=top_logprobs)",
     "top_logprobs"),
    ({"logprobs": True, "top_logprobs": -2},
     "`top_logprobs` must be a positive value or -1. (parameter=top_logprobs, value=-2)", "top_logprobs"),
    ({"prompt_logprobs": 2, "stream": True},
     "`prompt_logprobs` are not available when `stream=True`. (parameter=prompt_logprobs)", "prompt_logprobs"),
    ({"prompt_logprobs": "x"}, "`prompt_logprobs` must be an integer. (parameter=prompt_logprobs, value=x)",
     "prompt_logprobs"),
    ({"temperature": -1}, "temperature must be non-negative, got -1.0. (parameter=temperature, value=-1.0)",
     "temperature"),
    ({"top_p": 0}, "top_p must be in (0, 1], got 0.0. (parameter=top_p, value=0.0)", "top_p"),
    ({"max_tokens": 0}, "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)", "max_tokens"),
    ({"n": 0}, "n must be at least 1, got 0.", None),
    ({"stop": ["x", ""]}, "stop cannot contain an empty string.", None),
])
def test_request_checks(sim_url: str, body: dict[str, Any], message: str, param: str | None) -> None:
    r = post(sim_url, "/v1/chat/completions", {"messages": CHAT, **body})
    assert r.status_code == 400
    assert error(r) == {"message": message, "type": "BadRequestError", "param": param, "code": 400}


def test_completion_prompt_required(sim_url: str) -> None:
    r = post(sim_url, "/v1/completions", {"prompt": ""})
    assert error(r)["message"] == ("Either prompt or prompt_embeds must be provided and non-empty. "
                                   "(parameter=prompt)")
    assert error(post(sim_url, "/v1/completions", {"prompt": [10**9]}))["message"] == (
        f"Token id {10**9} is out of vocabulary (parameter=prompt)")


def test_too_many_logprobs(start_simulator: Any) -> None:
    url = start_simulator(max_logprobs=5)
    r = post(url, "/v1/chat/completions", {"messages": CHAT, "logprobs": True, "top_logprobs": 6})
    assert r.status_code == 400
    assert error(r) == {"message": "Requested sample logprobs of 6, which is greater than max allowed: 5 "
                                   "(parameter=logprobs, value=6)",
                        "type": "BadRequestError", "param": "logprobs", "code": 400}
    r = post(url, "/v1/completions", {"prompt": "x", "prompt_logprobs": 9})
    assert error(r)["message"] == ("Requested prompt logprobs of 9, which is greater than max allowed: 5 "
                                   "(parameter=prompt_logprobs, value=9)")
    # Streamed, vLLM finds out in the engine: 200, then an error event and [DONE].
    r = post(url, "/v1/chat/completions", {"messages": CHAT, "logprobs": True, "top_logprobs": 6, "stream": True})
    assert r.status_code == 200
    assert r.content == (
        b'data: {"error":{"message":"Requested sample logprobs of 6, which is greater than max allowed: 5 '
        b'(parameter=logprobs, value=6)","type":"BadRequestError","param":"logprobs","code":400}}\n\n'
        b"data: [DONE]\n\n")
    r = post(url, "/v1/completions", {"prompt": "x", "logprobs": 6, "stream": True})
    assert r.content.startswith(b'data: {"error": {"message": "Requested sample logprobs of 6')
    assert post(url, "/v1/completions", {"prompt": "x", "logprobs": 5, "max_tokens": 2}).status_code == 200
    unlimited = start_simulator(max_logprobs=-1)
    assert post(unlimited, "/v1/completions", {"prompt": "x", "logprobs": 50, "max_tokens": 2}).status_code == 200


def test_context_length_rules(start_simulator: Any) -> None:
    url = start_simulator(max_model_len=64)
    r = post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 65})
    assert error(r) == {"message": "max_tokens=65 cannot be greater than max_model_len=64. Please request fewer "
                                   "output tokens. (parameter=max_tokens, value=65)",
                        "type": "BadRequestError", "param": "max_tokens", "code": 400}
    r = post(url, "/v1/chat/completions", {"messages": CHAT, "max_completion_tokens": 65})
    assert error(r)["param"] == "max_completion_tokens"
    long_prompt = [{"role": "user", "content": "word " * 100}]
    r = post(url, "/v1/chat/completions", {"messages": long_prompt})
    assert error(r) == {
        "message": "This model's maximum context length is 64 tokens. However, your prompt contains at least 65 "
                   "input tokens, which exceeds this limit even without any output tokens. Please reduce the length "
                   "of the input prompt. (parameter=input_tokens, value=65)",
        "type": "BadRequestError", "param": "input_tokens", "code": 400}
    # P + K > M is clamped to M - P (0.34), ending with "length".
    body = post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 60, "temperature": 0,
                                              "ignore_eos": True}).json()
    assert body["usage"]["total_tokens"] == 64
    assert body["choices"][0]["finish_reason"] == "length"


def test_api_key_guards_v1_only(start_simulator: Any) -> None:
    url = start_simulator(api_keys=("sekret", "other"))
    r = post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 1})
    assert (r.status_code, r.content) == (401, b'{"error":"Unauthorized"}')
    assert HTTP.get(url + "/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert HTTP.get(url + "/v1/models", headers={"Authorization": "bearer sekret"}).status_code == 200
    ok = post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 1},
              headers={"Authorization": "Bearer sekret"})
    assert ok.status_code == 200
    for path in ("/health", "/metrics", "/version"):
        assert HTTP.get(url + path).status_code == 200
    assert HTTP.post(url + "/tokenize", json={"prompt": "x"}).status_code == 200


def test_tokenize_errors(sim_url: str) -> None:
    assert HTTP.post(sim_url + "/tokenize", json={"model": "nope", "prompt": "x"}).status_code == 404
    assert HTTP.post(sim_url + "/tokenize", content=b"x", headers={"content-type": "text/plain"}).status_code == 400
    r = HTTP.post(sim_url + "/tokenize", json={"messages": CHAT, "continue_final_message": True})
    assert error(r)["message"] == "Cannot set both `continue_final_message` and `add_generation_prompt` to True."


def test_image_content_is_rejected(sim_url: str) -> None:
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]}]
    assert post(sim_url, "/v1/chat/completions", {"messages": messages}).status_code == 400


def test_text_content_parts_are_accepted(sim_url: str) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "Explain why the sky is blue."}]}]
    parts = post(sim_url, "/v1/chat/completions", {"messages": messages, "temperature": 0}).json()
    plain = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0}).json()
    assert parts["choices"][0]["message"] == plain["choices"][0]["message"]


def test_unknown_fields_are_ignored(sim_url: str) -> None:
    found = chunks(post(sim_url, "/v1/chat/completions", {
        "messages": CHAT, "max_tokens": 2, "stream": True, "frobnicate": {"x": 1}, "best_of": 3}).content)
    assert found[-1]["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize(("body", "message"), [
    ({"prompt": []}, "The decoder prompt cannot be empty"),
    ({"prompt": [[]]}, "The decoder prompt cannot be empty"),
    ({"prompt": ["a", ""]}, "The decoder prompt cannot be empty"),
    ({"prompt": "x", "n": 20000, "temperature": 1},
     "n must be at most 16384, got 20000. To increase this limit, set the VLLM_MAX_N_SEQUENCES environment variable."),
])
def test_completion_bodies_vllm_rejects(sim_url: str, body: dict[str, Any], message: str) -> None:
    r = post(sim_url, "/v1/completions", body)
    assert r.status_code == 400
    assert error(r)["message"] == message


def test_nan_temperature_and_null_fields(sim_url: str) -> None:
    r = HTTP.post(sim_url + "/v1/chat/completions", headers={"content-type": "application/json"},
                  content=b'{"messages":[{"role":"user","content":"x"}],"temperature":NaN}')
    assert error(r)["message"] == "temperature must be a finite number, got nan. (parameter=temperature, value=nan)"
    assert post(sim_url, "/v1/chat/completions", {"messages": CHAT, "n": None, "max_tokens": 2}).status_code == 200
    assert post(sim_url, "/v1/completions", {"prompt": "x", "echo": None, "max_tokens": 2}).status_code == 200


def test_odd_prompts_do_not_crash(sim_url: str) -> None:
    for content in ("What is the product of " + "9" * 400 + " and " + "9" * 400 + "?",
                    "List " + "7" * 5000 + " tips for sleeping well.", "Explain \u00e9\u0301 and 漢字 and 🙂"):
        r = post(sim_url, "/v1/chat/completions", {"messages": [{"role": "user", "content": content}],
                                                   "temperature": 0})
        assert r.status_code == 200, content[:40]
    r = HTTP.post(sim_url + "/v1/chat/completions", headers={"content-type": "application/json"},
                  content=b'{"messages":[{"role":"user","content":"\\ud800"}]}')
    assert r.status_code == 400
    assert "surrogates not allowed" in error(r)["message"]
    r = HTTP.post(sim_url + "/v1/completions", headers={"content-type": "application/json"},
                  content=b'{"prompt":"\\ud800"}')
    assert r.status_code == 400


def test_headers_are_vllms_middlewares_and_starlettes_order(start_simulator: Any) -> None:
    """vLLM's CORS middleware (no origin allowed by default) adds ``vary: Origin`` to every
    answer but the API key's 401, whose middleware is outside it; a JSON body's length comes
    before its type, as Starlette's JSONResponse writes them (tests/answers/data/vllm/)."""
    url = start_simulator(api_keys=("sekret",))
    names = {"date", "server"}   # uvicorn's
    answered = post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 1},
                    headers={"Authorization": "Bearer sekret"})
    refused = post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 0},
                   headers={"Authorization": "Bearer sekret"})
    for response in (answered, refused, HTTP.get(url + "/health"), HTTP.get(url + "/no-such-route")):
        assert [k for k, _ in response.headers.multi_items() if k not in names][-1:] == ["vary"], response.url
        assert response.headers["vary"] == "Origin"
    for response in (answered, refused):
        assert [k for k, _ in response.headers.multi_items() if k not in names] == ["content-length", "content-type",
                                                                                    "vary"]
    unauthorized = post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 1})
    assert unauthorized.status_code == 401 and "vary" not in unauthorized.headers
    preflight = HTTP.options(url + "/v1/chat/completions", headers={"Origin": "http://elsewhere.example",
                                                                   "Access-Control-Request-Method": "POST"})
    assert (preflight.status_code, preflight.text) == (400, "Disallowed CORS origin")

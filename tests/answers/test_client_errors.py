"""What the replay client records of an HTTP error: enough to act on, nothing secret."""

from __future__ import annotations

import asyncio

import httpx

from shadowdiff.answers.client import Caller, RetryPolicy, Upstream
from shadowdiff.vocabulary import Side


def test_a_404_names_the_url_called_without_credentials_or_query() -> None:
    async def ask() -> str | None:
        transport = httpx.MockTransport(lambda request: httpx.Response(404, json={"detail": "Not Found"}))
        async with httpx.AsyncClient(transport=transport) as client:
            upstream = Upstream(Side.CANDIDATE, "http://user:secret@host:8000/v1/chat/completions", "m")
            answer = await Caller(client, RetryPolicy(attempts=1)).call(
                upstream, "/v1/chat/completions", {"messages": [], "stream": False})
        return answer.error

    error = asyncio.run(ask())
    assert error is not None
    assert error.startswith("HTTP 404 from http://host:8000/v1/chat/completions/v1/chat/completions (give each "
                            "side's base URL"), error
    assert "secret" not in error and "user" not in error


def test_a_404_for_a_model_the_server_does_not_serve_gets_no_base_url_hint() -> None:
    """vLLM's answer to a wrong model name (a judge's, say): the URL is right."""
    body = {"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError", "param": "model",
                      "code": 404}}

    async def ask() -> str | None:
        transport = httpx.MockTransport(lambda request: httpx.Response(404, json=body))
        async with httpx.AsyncClient(transport=transport) as client:
            answer = await Caller(client, RetryPolicy(attempts=1)).call(
                Upstream(Side.CANDIDATE, "http://host:8000", "nope"), "/v1/chat/completions",
                {"messages": [], "stream": False})
        return answer.error

    error = asyncio.run(ask())
    assert error is not None and error.startswith("HTTP 404: ") and "does not exist" in error
    assert "base URL" not in error


def test_a_stream_cut_short_with_done_is_retried_and_then_an_error() -> None:
    """llama.cpp's server ends a stream with [DONE] but no finish chunk when another request
    arrives: not an answer. Retried like a dropped stream; an error when it keeps happening."""
    def frames(*chunks: str) -> bytes:
        return b"".join(b'data: {"choices": [{"index": 0, "delta": %s}]}\n\n' % c.encode() for c in chunks)

    cut = frames('{"role": "assistant"}', '{"content": "The answer"}') + b"data: [DONE]\n\n"
    whole = (frames('{"role": "assistant"}', '{"content": "The answer is 391."}')
             + b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n')

    async def ask(bodies: list[bytes], attempts: int) -> tuple[str | None, str, int]:
        def respond(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, headers={"content-type": "text/event-stream"},
                                  stream=httpx.ByteStream(bodies.pop(0)))
        async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
            answer = await Caller(client, RetryPolicy(attempts=attempts, backoff=0.0)).call(
                Upstream(Side.CANDIDATE, "http://host:8000", "m"), "/v1/chat/completions",
                {"messages": [], "stream": True})
        return answer.error, answer.text, answer.attempts

    assert asyncio.run(ask([cut, whole], 2)) == (None, "The answer is 391.", 2)
    error, text, attempts = asyncio.run(ask([cut], 1))
    assert error is not None and "without a finish reason" in error and attempts == 1
    assert text == ""   # the prefix is not kept as if it were the answer

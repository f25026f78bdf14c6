"""What the replay client records of an HTTP error: enough to act on, nothing secret."""

from __future__ import annotations

import asyncio

import httpx

from shadowdiff.client import Caller, RetryPolicy, Upstream
from shadowdiff.records import Side


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

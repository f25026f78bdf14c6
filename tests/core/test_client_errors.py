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

"""The answers' HTTP client keeps no cookies: each request stands alone, whatever an
earlier answer's ``Set-Cookie`` said (a cookie must not route or change the next one)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from shadowdiff.answers import arrivals
from tests.support.servers import read_body, serve_app


class CookieSetter:
    """Sets a cookie on every answer; keeps the Cookie header each request came with."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        self.seen.append(dict(scope["headers"]).get(b"cookie", b"").decode() or None)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"set-cookie", b"route=replica-2; Path=/")]})
        await send({"type": "http.response.body", "body": b"{}"})


def test_a_cookie_an_answer_sets_is_not_sent_back() -> None:
    app = CookieSetter()

    async def twice(url: str) -> list[str]:
        async with arrivals.http_client(2, httpx.Timeout(10)) as client:
            responses = [await client.post(url + "/v1/chat/completions", json={}) for _ in range(2)]
            return [r.headers["set-cookie"] for r in responses]

    with serve_app(app) as url:
        set_cookies = asyncio.run(twice(url))
    assert set_cookies == ["route=replica-2; Path=/"] * 2    # the server did set one, each time
    assert app.seen == [None, None]


def test_a_plain_httpx_client_would_have_sent_it() -> None:
    """The test above can fail: httpx's own jar sends the cookie back."""
    app = CookieSetter()

    async def twice(url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            for _ in range(2):
                await client.post(url + "/v1/chat/completions", json={})

    with serve_app(app) as url:
        asyncio.run(twice(url))
    assert app.seen == [None, "route=replica-2"]

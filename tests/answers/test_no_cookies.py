"""The answers' HTTP client keeps no cookies: each request stands alone, whatever an
earlier answer's ``Set-Cookie`` said (a cookie must not route or change the next one)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

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
        set_cookies = []
        async with arrivals.answers_session(2, 10) as session:
            for _ in range(2):
                async with session.post(url + "/v1/chat/completions", json={}) as response:
                    set_cookies.append(response.headers["set-cookie"])
        return set_cookies

    with serve_app(app) as url:
        set_cookies = asyncio.run(twice(url))
    assert set_cookies == ["route=replica-2; Path=/"] * 2    # the server did set one, each time
    assert app.seen == [None, None]


def test_a_session_with_a_cookie_jar_would_have_sent_it() -> None:
    """The test above can fail: a jar that keeps cookies (as aiohttp's own does, from a
    host's name; from an address such as the test's, when unsafe) sends it back."""
    app = CookieSetter()

    async def twice(url: str) -> None:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            for _ in range(2):
                async with session.post(url + "/v1/chat/completions", json={}):
                    pass

    with serve_app(app) as url:
        asyncio.run(twice(url))
    assert app.seen == [None, "route=replica-2"]

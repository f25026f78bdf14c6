"""Counting an answer's tokens with the server's tokenizer (shadowdiff.answers.tokencount), against
the simulator's vLLM-shaped /tokenize on loopback; llama.cpp's route is tested against the
real engine (tests/engines/test_realengine_engines.py) and a llama-shaped server (tests/proxy/test_other_engines.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from shadowdiff.answers import tokencount
from shadowdiff.answers.client import Upstream
from shadowdiff.answers.records import Answer, Choice
from shadowdiff.answers.tokencount import TokenCounter
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.vocabulary import Side
from tests.support.servers import serve_app

MODEL = "Qwen/Qwen3-8B"


def test_vllm_tokenize_counts_every_choice_once_and_leaves_counted_answers_alone() -> None:
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,)))) as url:
        def direct(text: str) -> int:
            response = httpx.post(url + "/tokenize", json={"model": MODEL, "prompt": text,
                                                           "add_special_tokens": False})
            count: int = response.json()["count"]
            return count

        async def count(answer: Answer, base: str) -> Answer:
            async with httpx.AsyncClient() as client:
                return await TokenCounter(client).count(Upstream(Side.BASELINE, base).root, MODEL, answer, {})

        two = Answer(Side.BASELINE, MODEL, text="The answer is 391.",
                     others=(Choice(1, "Three hundred and ninety-one.", None, None, None, "stop"),))
        counted = asyncio.run(count(two, url + "/v1"))      # a base URL with /v1, as OpenAI clients take
        assert counted.token_source == "tokenizer"
        assert counted.completion_tokens == direct("The answer is 391.") + direct("Three hundred and ninety-one.")
        assert counted.completion_tokens and counted.completion_tokens > 2
        given = Answer(Side.BASELINE, MODEL, text="x", completion_tokens=7)
        assert asyncio.run(count(given, url)) is given
        assert asyncio.run(count(Answer(Side.BASELINE, MODEL, text=""), url)).completion_tokens is None
        failed = Answer(Side.BASELINE, MODEL, text="x", error="HTTP 500")
        assert asyncio.run(count(failed, url)) is failed


def test_a_server_without_a_tokenizer_or_down_leaves_the_count_unknown() -> None:
    async def count(transport: httpx.BaseTransport | httpx.AsyncBaseTransport) -> Answer:
        async with httpx.AsyncClient(transport=transport) as client:   # type: ignore[arg-type]
            counter = TokenCounter(client)
            answer = Answer(Side.CANDIDATE, "m", text="some text")
            first = await counter.count("http://host:8000", "m", answer, {})
            assert await counter.count("http://host:8000", "m", answer, {}) == first   # the route is not asked again
            return first

    asked: list[str] = []

    def missing(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(404, json={"detail": "Not Found"})

    assert asyncio.run(count(httpx.MockTransport(missing))).completion_tokens is None
    assert asked == ["/tokenize", "/extras/tokenize/count"]          # each route tried once, then never

    def garbage(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"count": "many"} if request.url.path == "/tokenize" else [1, 2])

    assert asyncio.run(count(httpx.MockTransport(garbage))).completion_tokens is None

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    assert asyncio.run(count(httpx.MockTransport(down))).completion_tokens is None


def test_a_tokenizer_that_hangs_or_talks_nonsense_is_given_up_after_one_try(monkeypatch: pytest.MonkeyPatch,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """One call's wait at most, then the server's answers go uncounted (one warning), so a
    replay is never held up answer after answer; counts no text can have are refused."""
    monkeypatch.setattr(tokencount, "ASK_TIMEOUT", 0.2)
    asked: list[str] = []

    async def run(respond: Any, answers: int) -> list[int | None]:
        async def handler(request: httpx.Request) -> httpx.Response:
            asked.append(request.url.path)
            return await respond(request)

        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            counter = TokenCounter(client)
            return [(await counter.count("http://host:8000", "m", Answer(Side.BASELINE, "m", text="four words of text"),
                                         {})).completion_tokens for _ in range(answers)]

    given_up: list[str] = []

    async def hang(request: httpx.Request) -> httpx.Response:
        try:
            await asyncio.Event().wait()       # never answers
        except asyncio.CancelledError:         # ... until the call's own bound gives up on it
            given_up.append(request.url.path)
            raise
        raise AssertionError("not reached")

    async def hung(answers: int) -> list[int | None]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(hang)) as client:
            counter = TokenCounter(client)
            return [(await counter.count("http://user:secret@host:8000", "m",
                                         Answer(Side.BASELINE, "m", text="four words"), {})).completion_tokens
                    for _ in range(answers)]

    assert asyncio.run(hung(5)) == [None] * 5
    assert given_up == ["/tokenize", "/extras/tokenize/count"]   # each route tried once, then never again
    assert "no tokenizer route" in caplog.text and "secret" not in caplog.text

    for count in (10 ** 30, 0, -1, 2.5):
        asked.clear()

        async def nonsense(request: httpx.Request, count: Any = count) -> httpx.Response:
            return httpx.Response(200, json={"count": count})

        assert asyncio.run(run(nonsense, 3)) == [None] * 3, count
        assert len(asked) == 2, count

    # a route that worked and then fails: given up from there, with a warning
    calls = iter([4, 4, 500])

    async def flaky(request: httpx.Request) -> httpx.Response:
        value = next(calls, 4)
        return httpx.Response(value, json={}) if value == 500 else httpx.Response(200, json={"count": value})

    asked.clear()
    assert asyncio.run(run(flaky, 5)) == [4, 4, None, None, None]
    assert len(asked) == 3 and "failed or answered a count that cannot be right" in caplog.text

"""Counting an answer's tokens with the server's tokenizer (shadowdiff.answers.tokencount), against
the simulator's vLLM-shaped /tokenize on loopback; llama.cpp's route is tested against the
real engine (tests/engines/test_realengine_engines.py) and a llama-shaped server (tests/proxy/test_other_engines.py)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from shadowdiff.answers import tokencount
from shadowdiff.answers.arrivals import answers_session
from shadowdiff.answers.client import Upstream
from shadowdiff.answers.records import Answer, Choice
from shadowdiff.answers.tokencount import TokenCounter
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.vocabulary import Side
from tests.support.servers import Answering, Reply, free_port, json_reply, serve_app

MODEL = "Qwen/Qwen3-8B"


def test_vllm_tokenize_counts_every_choice_once_and_leaves_counted_answers_alone() -> None:
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,)))) as url:
        def direct(text: str) -> int:
            response = httpx.post(url + "/tokenize", json={"model": MODEL, "prompt": text,
                                                           "add_special_tokens": False})
            count: int = response.json()["count"]
            return count

        async def count(answer: Answer, base: str) -> Answer:
            async with answers_session(2, 10) as session:
                return await TokenCounter(session).count(Upstream(Side.BASELINE, base).root, MODEL, answer, {})

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
    def count(url: str) -> Answer:
        async def twice() -> Answer:
            async with answers_session(2, 10) as session:
                counter = TokenCounter(session)
                answer = Answer(Side.CANDIDATE, "m", text="some text")
                first = await counter.count(url, "m", answer, {})
                assert await counter.count(url, "m", answer, {}) == first   # the route is not asked again
                return first
        return asyncio.run(twice())

    missing = Answering(lambda path, body: json_reply(404, {"detail": "Not Found"}))
    with serve_app(missing) as url:
        assert count(url).completion_tokens is None
    assert [path for path, _ in missing.seen] == ["/tokenize", "/extras/tokenize/count"]   # each once, then never

    garbage = Answering(lambda path, body: json_reply(200, {"count": "many"} if path == "/tokenize" else [1, 2]))
    with serve_app(garbage) as url:
        assert count(url).completion_tokens is None
    assert count(f"http://127.0.0.1:{free_port()}").completion_tokens is None   # down


def test_a_tokenizer_that_hangs_or_talks_nonsense_is_given_up_after_one_try(monkeypatch: pytest.MonkeyPatch,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """One call's wait at most, then the server's answers go uncounted (one warning), so a
    replay is never held up answer after answer; counts no text can have are refused."""
    # (1 s: at 0.2 s a loaded CI machine answered a count late, read as a hang, in one run of many)
    monkeypatch.setattr(tokencount, "ASK_TIMEOUT", 1.0)
    replies: list[Reply] = []
    app = Answering(lambda path, body: replies.pop(0) if replies else None)   # none left: it never answers

    def run(root: str, answers: int, text: str = "four words of text") -> list[int | None]:
        async def each() -> list[int | None]:
            async with answers_session(2, 10) as session:
                counter = TokenCounter(session)
                return [(await counter.count(root, "m", Answer(Side.BASELINE, "m", text=text), {})).completion_tokens
                        for _ in range(answers)]
        app.seen.clear()
        return asyncio.run(each())

    with serve_app(app) as url:
        hung = run(url.replace("http://", "http://user:secret@"), 5, "four words")
        assert hung == [None] * 5
        # each route tried once, then never again
        assert [path for path, _ in app.seen] == ["/tokenize", "/extras/tokenize/count"]
        assert "no tokenizer route" in caplog.text and "secret" not in caplog.text

        for count in (10 ** 30, 0, -1, 2.5):
            replies[:] = [json_reply(200, {"count": count})] * 2
            assert run(url, 3) == [None] * 3, count
            assert len(app.seen) == 2, count

        # a route that worked and then fails: given up from there, with a warning
        replies[:] = [json_reply(200, {"count": 4})] * 2 + [json_reply(500, {})]
        assert run(url, 5) == [4, 4, None, None, None]
        assert len(app.seen) == 3 and "failed or answered a count that cannot be right" in caplog.text

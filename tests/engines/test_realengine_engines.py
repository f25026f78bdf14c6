"""What llama.cpp's real server does that vLLM does not, and what shadowdiff makes of it:
a stream cut short by the next request (``--interrupt_requests``, its default) is an
error, not an answer; an answer without a count is counted by the server's own tokenizer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from shadowdiff.answers.arrivals import answers_session
from shadowdiff.answers.client import Upstream
from shadowdiff.answers.parse import read_answer
from shadowdiff.answers.records import Answer
from shadowdiff.answers.tokencount import TokenCounter
from shadowdiff.vocabulary import Side
from tests.support.realengine import Models, Server, serve

pytestmark = pytest.mark.realengine

QUESTION = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]


def test_a_stream_the_next_request_cuts_short_is_an_error(llamacpp_python: Path, smollm2: Models,
                                                          tmp_path: Path) -> None:
    """The server as llama.cpp starts it by default: a request that arrives while a
    stream runs ends that stream with [DONE] and no finish chunk. Read with shadowdiff's
    parser, the cut stream is an error naming the cause; the newcomer's stream is whole."""
    # (the fixtures' servers run with interruption off; the last option given wins)
    with serve(llamacpp_python, smollm2.f16, "smol-f16", tmp_path / "server.log", "--interrupt_requests", "true") \
            as server, \
            httpx.Client(timeout=120) as client:
        body = {"model": server.model, "messages": QUESTION, "temperature": 0, "max_tokens": 200, "stream": True,
                "repeat_penalty": 1.0}
        raw = b""
        with client.stream("POST", f"{server.url}/v1/chat/completions", json=body) as first:
            chunks = first.iter_raw()
            while raw.count(b"data: ") < 4:          # the stream is running: a few tokens are out
                raw += next(chunks)
            second = client.post(f"{server.url}/v1/chat/completions", json={**body, "max_tokens": 8})
            raw += b"".join(chunks)
    assert raw.rstrip().endswith(b"data: [DONE]") and b'"finish_reason": "length"' not in raw
    cut = read_answer(raw, True)
    assert cut.error is not None and "without a finish reason" in cut.error, cut.error
    whole = read_answer(second.content, True)
    assert whole.error is None and whole.choices[0].finish_reason == "length"


def test_the_servers_tokenizer_counts_what_it_generated(f16: Server) -> None:
    """The count shadowdiff asks of /extras/tokenize/count for an answer with none, against
    the server's own usage for the same answer (which, on llama.cpp, leaves the
    end-of-sequence token out: measured, 39 and 39 for a finished answer)."""
    response = httpx.post(f"{f16.url}/v1/chat/completions", timeout=120, json={
        "model": f16.model, "messages": [{"role": "user", "content": "What is 17 times 23?"}], "temperature": 0,
        "max_tokens": 48, "repeat_penalty": 1.0})
    body = response.json()
    text, usage = body["choices"][0]["message"]["content"], body["usage"]["completion_tokens"]

    async def count() -> Answer:
        async with answers_session(4, 60) as session:
            return await TokenCounter(session).count(Upstream(Side.BASELINE, f16.url + "/v1").root, f16.model,
                                                    Answer(Side.BASELINE, f16.model, text=text), {})

    counted = asyncio.run(count())
    assert counted.token_source == "tokenizer" and counted.completion_tokens is not None
    assert counted.completion_tokens == usage > 0, (text, usage, counted.completion_tokens)

"""Answers timed as their bytes arrive, not as the client reads them."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import random
import time

import pytest

from shadowdiff.answers import arrivals
from shadowdiff.answers.client import Caller, RetryPolicy, Upstream
from shadowdiff.answers.parse import EventStream, sse_data
from shadowdiff.answers.records import Answer
from shadowdiff.vocabulary import Side
from tests.support.rawupstream import raw_server, read_request
from tests.support.servers import Answering, Drip, free_port, serve_app


def token(text: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def test_bytes_are_stamped_when_they_arrive_not_when_they_are_read() -> None:
    first, second = token("a"), token("b")

    async def read(url: str) -> tuple[float, float, float, float]:
        async with arrivals.answers_session(2, 10) as session:
            with arrivals.watching() as clock:
                async with session.post(url, json={}) as response:
                    await asyncio.sleep(1.0)   # a busy client: both pieces are in before it reads
                    read_at = time.perf_counter()
                    body = await response.read()
        assert body == first + second + b"data: [DONE]\n\n"
        assert clock.sent is not None
        return clock.sent, clock.at(len(first)), clock.at(len(first + second)), read_at

    with serve_app(Drip([0.1, first, 0.3, second, b"data: [DONE]\n\n"])) as url:
        sent, one, two, read_at = asyncio.run(read(url))
    assert sent < one < two < read_at
    assert 0.25 <= two - one < 0.8   # the server's 0.3 s between them, though read together a second later
    assert read_at - two > 0.3


def test_a_slow_drip_is_cut_at_the_timeout_of_the_whole_request() -> None:
    """The session's timeout bounds each read: a token every 0.2 s never trips it."""
    pieces: list[bytes | float] = [x for i in range(100) for x in (token(f"w{i}"), 0.2)]

    async def call(url: str) -> tuple[str | None, float]:
        async with arrivals.answers_session(2, 5) as session:
            started = time.perf_counter()
            answer = await Caller(session, RetryPolicy(attempts=1), timeout=1.0).call(
                Upstream(Side.CANDIDATE, url, "m"), "/v1/chat/completions", {"messages": [], "stream": True})
            return answer.error, time.perf_counter() - started

    with serve_app(Drip(pieces)) as url:
        error, seconds = asyncio.run(call(url))
    assert error == "timed out: no whole answer within 1 s"
    assert seconds < 5   # not the 20 s of the drip


def test_a_refused_connection_says_so() -> None:
    async def call() -> str | None:
        async with arrivals.answers_session(2, 5) as session:
            answer = await Caller(session, RetryPolicy(attempts=1)).call(
                Upstream(Side.BASELINE, f"http://127.0.0.1:{free_port()}", "m"), "/v1/chat/completions",
                {"messages": [], "stream": True})
            return answer.error

    error = asyncio.run(call())
    assert error is not None and error.startswith("connection refused by 127.0.0.1:"), error


@pytest.mark.parametrize("body", [
    b"".join(token(f"w{i}") for i in range(20)) + b"data: [DONE]\n\n",
    (b"".join(token(f"w{i}") for i in range(5)) + b"data: [DONE]\n\n").replace(b"\n", b"\r\n"),
    (b"".join(token(f"w{i}") for i in range(5))).replace(b"\n", b"\r"),
    b"\xef\xbb\xbf" + token("bom") + b": a comment\n\ndata: one\ndata: two\n\n\n\ndata: unterminated",
])
def test_events_are_the_same_however_the_body_is_cut(body: bytes) -> None:
    whole = EventStream()
    expected = whole.feed(body) + whole.close()
    assert [data for data, _ in expected] == list(sse_data(body))
    for _, end in expected:   # each event ends where its blank line (or the body) ends
        assert end == len(body) or body[end - 1:end] in (b"\n", b"\r")
    rng = random.Random(5)
    for _ in range(100):
        events, got, at = EventStream(), [], 0
        while at < len(body):
            step = rng.randint(1, 9)
            got += events.feed(body[at:at + step])
            at += step
        assert got + events.close() == expected


def test_a_body_that_turns_invalid_after_its_head_fails_at_once() -> None:
    """aiohttp leaves such a body waiting with no error and no read timeout when the bad
    bytes come in a read of their own; the session fails it when its connection closes."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await read_request(reader, None)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.05)
            event = token("a")
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"zz\r\n")    # a chunk size that is not hex
            await writer.drain()
            await reader.read()        # open until the client closes it
        writer.close()

    async def call(url: str) -> Answer:
        async with arrivals.answers_session(2, 60) as session:
            return await Caller(session, RetryPolicy(attempts=1), timeout=10).call(
                Upstream(Side.BASELINE, url, "m"), "/v1/chat/completions", {"messages": [], "stream": True})

    with raw_server(handle) as url:
        answer = asyncio.run(call(url))
    assert answer.error is not None
    assert answer.error.startswith("connection failed: ClientPayloadError: invalid answer after its head"), answer.error


def test_a_compressed_stream_is_read_and_timed() -> None:
    body = b"".join(token(w) for w in ("Hel", "lo")) + b'data: {"choices": [{"index": 0, "delta": {}, ' \
        b'"finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
    app = Answering(lambda path, _: (200, [(b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")],
                                     gzip.compress(body)))

    async def call(url: str) -> Answer:
        async with arrivals.answers_session(2, 10) as session:
            return await Caller(session, RetryPolicy(attempts=1)).call(
                Upstream(Side.BASELINE, url, "m"), "/v1/chat/completions", {"messages": [], "stream": True})

    with serve_app(app) as url:
        answer = asyncio.run(call(url))
    assert (answer.error, answer.text, answer.finish_reason) == (None, "Hello", "stop")
    assert answer.ttft is not None and answer.duration is not None and 0 <= answer.ttft <= answer.duration

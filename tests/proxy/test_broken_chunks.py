"""An upstream whose chunked answer turns invalid after its head: a chunk size that is
not hex, data without its CRLF, or a chunk cut short by the close. aiohttp left the
body's reader waiting, with no error and no read timeout, when the bad bytes came in a
later read than the head: the client hung until its own timeout, and a shadow held its
slot for --shadow-timeout. Each upstream is a raw socket server (see test_network)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from shadowdiff.report.summary import summarize
from shadowdiff.store import Store
from tests.support.proxying import chat, counter, settled, wait_for
from tests.support.rawupstream import Handler, Start, keep_answering, proxy_for, raw_server, read_request

EVENT = b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
PARTS = {"stream": [EVENT, EVENT], "json": [b'{"id":"x","object":"chat.completion",', b'"choices":['],
         # events ended by CRLF or CR line breaks, as the SSE specification allows (vLLM's are LF)
         "stream-crlf": [EVENT.replace(b"\n", b"\r\n")] * 2, "stream-cr": [EVENT.replace(b"\n", b"\r")] * 2,
         "stream-mixed": [EVENT.replace(b"\n\n", b"\n\r\n")] * 2}
BREAKS = {"bad-size": b"zz\r\n", "bad-trailer": b"2\r\n\n\nXX\r\n", "truncated": b"40\r\nshort"}
CLIENT_TIMEOUT = 60.0
BOUND = 5.0   # a direct client fails in about 0.2 s


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def breaking(kind: str, broken: bytes) -> Handler:
    """Answer 200 with a chunked body: the head, two good chunks, then ``broken``, and close."""
    content_type = b"text/event-stream" if kind.startswith("stream") else b"application/json"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await read_request(reader, writer)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n" % content_type)
            await writer.drain()
            await asyncio.sleep(0.01)   # the bad bytes in a read of their own, after the head's
            writer.write(b"".join(_chunk(part) for part in PARTS[kind]))
            await writer.drain()
            await asyncio.sleep(0.01)
            writer.write(broken)
            await writer.drain()
        writer.close()

    return handle


async def _one(client: httpx.AsyncClient, url: str, kind: str) -> tuple[int | None, bytes, float]:
    """Status (None: the connection was cut before it), what arrived, and how long it took."""
    started = time.monotonic()
    got = b""
    status = None
    try:
        async with client.stream("POST", url, json=chat("x", stream=kind == "stream")) as response:
            status = response.status_code
            async for piece in response.aiter_raw():
                got += piece
    except (httpx.RemoteProtocolError, httpx.ReadError):
        pass   # the cut a direct client sees too
    return status, got, time.monotonic() - started


async def _many(url: str, kind: str, total: int, concurrency: int) -> list[tuple[int | None, bytes, float]]:
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=CLIENT_TIMEOUT, limits=limits) as client:
        async def guarded_one() -> tuple[int | None, bytes, float]:
            async with gate:
                return await _one(client, url, kind)

        return list(await asyncio.gather(*(guarded_one() for _ in range(total))))


@pytest.mark.parametrize("broken", list(BREAKS.values()), ids=list(BREAKS))
@pytest.mark.parametrize("kind", ["stream", "json"])
def test_a_primary_answer_broken_mid_body_ends_the_client_s_answer_at_once(
        start_proxy: Start, caplog: pytest.LogCaptureFixture, tmp_path: Path, kind: str, broken: bytes) -> None:
    """200 requests, 16 at once: about 5 % of them hung before."""
    total = 200
    with raw_server(breaking(kind, broken)) as primary, raw_server(keep_answering) as shadow, \
            caplog.at_level(logging.WARNING, "shadowdiff.proxy"):
        proxy, app = proxy_for(start_proxy, primary=primary, shadow=shadow, primary_timeout=30,
                               store=str(tmp_path / "store"))
        caplog.clear()
        results = asyncio.run(_many(proxy + "/v1/chat/completions", kind, total, 16))
        settled(app)
    slowest = max(elapsed for _, _, elapsed in results)
    assert slowest < BOUND, f"the slowest answer took {slowest:.1f} s"
    assert {status for status, _, _ in results} <= {200, 502}
    whole = b"".join(PARTS[kind])
    for status, got, _ in results:
        if status != 200:
            continue
        assert got.startswith(whole)
        rest = [piece for piece in got[len(whole):].split(b"\n\n") if piece]
        if kind == "stream" and broken != BREAKS["truncated"]:
            # between two events: vLLM's own end of a failed stream, an error event and [DONE]
            assert rest[-1] == b"data: [DONE]" and len(rest) == 2
            assert orjson.loads(rest[0].removeprefix(b"data: "))["error"]["type"] == "BadGatewayError"
        else:   # within an event or a body: cut, as a direct client sees it (no [DONE], no error of ours)
            assert rest in ([], [b"short"])
    lines = [r.getMessage() for r in caplog.records if r.name == "shadowdiff.proxy"]
    assert len(lines) == total, lines[:3]
    assert counter(app, "shadow", "skipped", "primary_error") == total
    assert counter(app, "shadow", "skipped", "client_disconnected") == 0
    app.pairs.flush_counts()   # (the proxy hands its counts over about once a second)
    store = Store.open(tmp_path / "store")
    try:
        run = store.latest_run("serve")
        assert run is not None
        # (the writer may store the counts in more than one batch: a timer's, then the flush's)
        wait_for(lambda: sum(summarize(store, run.id).not_compared.values()) >= total)
        assert summarize(store, run.id).not_compared == {"primary_failed": total}   # errors against --max-errors
    finally:
        store.close()


@pytest.mark.parametrize("broken", list(BREAKS.values()), ids=list(BREAKS))
@pytest.mark.parametrize("kind", ["stream", "json"])
def test_a_shadow_answer_broken_mid_body_is_malformed_and_frees_its_slot_at_once(
        start_proxy: Start, kind: str, broken: bytes) -> None:
    reason = "reset" if broken == BREAKS["truncated"] else "malformed"   # a cut chunk is a connection lost
    with raw_server(keep_answering) as primary, raw_server(breaking(kind, broken)) as shadow:
        proxy, app = proxy_for(start_proxy, primary=primary, shadow=shadow, shadow_timeout=120)
        started = time.monotonic()
        body: dict[str, Any] = chat("x", stream=kind == "stream")
        assert httpx.post(proxy + "/v1/chat/completions", json=body, timeout=CLIENT_TIMEOUT).status_code == 200
        wait_for(lambda: app.metrics.shadow_in_flight._value.get() == 0, seconds=CLIENT_TIMEOUT)
        freed = time.monotonic() - started
        settled(app)
    assert freed < BOUND, f"the shadow's slot was held {freed:.1f} s"
    assert counter(app, "shadow", "failed", reason) == 1
    assert counter(app, "shadow", "failed", "timeout") == 0


@pytest.mark.parametrize("kind", ["stream-crlf", "stream-cr", "stream-mixed"])
def test_a_stream_of_crlf_or_cr_events_cut_between_two_gets_the_error_event(start_proxy: Start, kind: str) -> None:
    with raw_server(breaking(kind, BREAKS["bad-size"])) as primary, raw_server(keep_answering) as shadow:
        proxy, app = proxy_for(start_proxy, primary=primary, shadow=shadow)
        ((status, got, _),) = asyncio.run(_many(proxy + "/v1/chat/completions", "stream", 1, 1))
        settled(app)
    assert status == 200
    whole = b"".join(PARTS[kind])
    assert got.startswith(whole)
    error, done = [piece for piece in got[len(whole):].split(b"\n\n") if piece]
    assert orjson.loads(error.removeprefix(b"data: "))["error"]["type"] == "BadGatewayError"
    assert done == b"data: [DONE]"

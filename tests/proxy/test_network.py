"""The proxy against upstreams that misbehave at the connection level:
closing kept-alive connections unannounced, never answering 100 Continue, sending a
body with a HEAD answer, speaking something that is not HTTP. Each upstream is a raw
asyncio server on loopback, so that it can do what no well-behaved framework would."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
import pytest

from shadowdiff.answers.redact import failure_text
from tests.support.proxying import chat, counter, raw_request, settled, wait_for
from tests.support.rawupstream import (
    Handler,
    Start,
    answer,
    keep_answering,
    proxy_for,
    raw_server,
    read_request,
)
from tests.support.servers import HTTP


def answer_then_close(delay: float, received: list[bytes] | None = None) -> Handler:
    """Answer one request, then close the connection without saying so (no Connection:
    close), as RFC 9112 §9.3.1 allows, ``delay`` seconds later, unread: with a delay,
    under load, the proxy has sent its next request on the connection by then (not only
    sometimes, as when the close follows the answer at once). Bodies go to ``received``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            body = (await read_request(reader, writer))[1]
            if received is not None:
                received.append(body)
            writer.write(answer())
            await writer.drain()
            await asyncio.sleep(delay)
        writer.close()

    return handle


async def hammer(url: str, total: int, concurrency: int, body: dict[str, Any]) -> dict[int, int]:
    """POST ``body`` ``total`` times, ``concurrency`` at once; the statuses seen."""
    statuses: dict[int, int] = {}
    gate = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession() as session:
        async def one() -> None:
            async with gate, session.post(url, json=body) as response:
                await response.read()
                statuses[response.status] = statuses.get(response.status, 0) + 1

        await asyncio.gather(*(one() for _ in range(total)))
    return statuses


@pytest.mark.parametrize(("delay", "worker"), [(0.0, "thread"), (0.02, "thread"), (0.02, "process")],
                         ids=["at-once", "a-moment-later", "a-moment-later-shadow-called-by-the-pair-process"])
def test_an_upstream_closing_each_connection_unannounced_costs_no_request(start_proxy: Start, delay: float,
                                                                          worker: str) -> None:
    with raw_server(answer_then_close(delay)) as primary, raw_server(answer_then_close(delay)) as shadow:
        # (a bound no burst reaches: every request is mirrored)
        proxy, app = proxy_for(start_proxy, primary=primary, shadow=shadow, max_shadow_in_flight=2000,
                               pair_worker=worker)
        if worker == "process":   # (the shadow's retries are the pair process's, counted in the proxy)
            wait_for(lambda: app.mirror.channel.ready, 30)
        statuses = asyncio.run(hammer(proxy + "/v1/chat/completions", 2000, 32, chat("x")))
        settled(app, 120)     # (2,000 pairs: ~2 s here, far more on a loaded machine; only the bound waits)
        assert statuses == {200: 2000}
        assert counter(app, "shadow", "mirrored", "ok") == 2000, _shadow_results(app)
        retries = counter(app, "retries", "baseline"), counter(app, "retries", "candidate")
        assert all(retries) if delay else any(retries), retries   # at once, the shadow's pool may not be caught out
        if worker == "process":
            assert app.mirror.channel.calls == 2000


def _shadow_results(app: Any) -> dict[str, float]:
    """How the shadow's calls ended, by result and reason (what a failure says)."""
    return {"/".join(s.labels.values()): s.value for m in app.metrics.shadow.collect() for s in m.samples
            if s.name.endswith("_total") and s.value}


@pytest.mark.parametrize("delay", [0.0, 0.02], ids=["at-once", "a-moment-later"])
def test_a_streamed_upload_never_meets_a_connection_the_upstream_is_closing(start_proxy: Start,
                                                                              delay: float) -> None:
    """A body streamed from the client cannot be sent twice, so it goes on a fresh
    connection: on a pooled one that the upstream was closing, 5-11 of 500 were 502s."""
    received: list[bytes] = []
    async def uploads(url: str, total: int, concurrency: int) -> dict[int, int]:
        statuses: dict[int, int] = {}
        gate = asyncio.Semaphore(concurrency)

        async def pieces(n: int) -> AsyncIterator[bytes]:
            yield b'{"model": "m", '
            await asyncio.sleep(0.005)   # the proxy gets the body in two pieces: it streams it
            yield b'"n": %d}' % n

        async with aiohttp.ClientSession() as session:
            async def one(n: int) -> None:
                async with gate, session.post(url, data=pieces(n)) as response:
                    await response.read()
                    statuses[response.status] = statuses.get(response.status, 0) + 1

            await asyncio.gather(*(one(n) for n in range(total)))
        return statuses

    with raw_server(answer_then_close(delay, received)) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary)
        assert asyncio.run(uploads(proxy + "/v1/chat/completions", 500, 32)) == {200: 500}
        # each once: (a body that reached the proxy whole may have been retried, and still is once)
        assert sorted(received) == sorted(b'{"model": "m", "n": %d}' % n for n in range(500))


def answer_then_cut(seen: list[bytes], reset: bool) -> Handler:
    """Answer the first request of a connection; on the next, send part of a status line
    and then close (or reset) the connection."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            seen.append((await read_request(reader, writer))[0])
            writer.write(answer())
            await writer.drain()
            seen.append((await read_request(reader, writer))[0])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Le")
            await writer.drain()
            await asyncio.sleep(0.1)   # the partial line is read before the connection ends
            if reset:
                writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                           struct.pack("ii", 1, 0))
        writer.close()

    return handle


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_a_failure_after_the_first_byte_of_an_answer_is_never_retried(start_proxy: Start, reset: bool) -> None:
    primary_seen: list[bytes] = []
    shadow_seen: list[bytes] = []
    with raw_server(answer_then_cut(primary_seen, reset)) as primary, \
            raw_server(answer_then_cut(shadow_seen, reset)) as shadow:
        proxy, app = proxy_for(start_proxy, primary=primary, shadow=shadow)
        statuses = [asyncio.run(hammer(proxy + "/v1/chat/completions", 1, 1, chat("x"))) for _ in range(2)]
        settled(app)
        assert statuses == [{200: 1}, {502: 1}]
        assert len(primary_seen) == len(shadow_seen) == 2   # each request once: no retry
        assert counter(app, "retries", "baseline") == counter(app, "retries", "candidate") == 0
        assert counter(app, "shadow", "mirrored", "ok") == 1


@pytest.mark.parametrize(("wait", "sent", "statuses"), [(0.0, 3, [{200: 1}, {200: 1}]),
                                                       (1.5, 2, [{200: 1}, {502: 1}])], ids=["at-once", "later"])
def test_a_request_read_and_dropped_is_sent_again_only_at_once(start_proxy: Start, wait: float, sent: int,
                                                              statuses: list[dict[int, int]]) -> None:
    """An upstream that reads the second request of a connection and closes it, unanswered,
    ``wait`` seconds later: at once, that is a stale connection to the proxy, and the
    request is sent again (and counted); after STALE_WITHIN (1 s) it was being worked on."""
    seen: list[bytes] = []

    async def drops_the_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            seen.append((await read_request(reader, writer))[1])
            writer.write(answer())
            await writer.drain()
            seen.append((await read_request(reader, writer))[1])
            await asyncio.sleep(wait)
        writer.close()

    with raw_server(drops_the_second) as primary:
        proxy, app = proxy_for(start_proxy, primary=primary)
        got = [asyncio.run(hammer(proxy + "/v1/chat/completions", 1, 1, chat(str(n)))) for n in range(2)]
        assert got == statuses
        assert len(seen) == sent and counter(app, "retries", "baseline") == sent - 2


def test_expect_100_continue_is_answered_by_the_proxy_not_forwarded(start_proxy: Start) -> None:
    """curl sends ``Expect: 100-continue`` with a large body; an upstream need not answer
    100 (this one never does). Forwarded, aiohttp waited for it for ever."""
    heads: list[bytes] = []

    async def no_continue(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head, body = await read_request(reader, writer)
                heads.append(head)
                writer.write(answer(b'{"received": %d}' % len(body)))
                await writer.drain()
        writer.close()

    with raw_server(no_continue) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary, primary_timeout=600)
        body = b'{"pad": "' + b"x" * 1_500_000 + b'"}'
        host, port = proxy.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:   # what curl does
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            assert s.recv(4096).startswith(b"HTTP/1.1 100 Continue")
            s.sendall(body)
            got = b""
            while b'"received"' not in got:
                chunk = s.recv(65536)
                assert chunk, got
                got += chunk
        assert got.startswith(b"HTTP/1.1 200") and b'{"received": %d}' % len(body) in got
        assert b"expect" not in heads[0].lower()


def test_an_upstream_that_stops_reading_a_large_body_times_out(start_proxy: Start) -> None:
    async def never_reads(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(30)
        writer.close()

    with raw_server(never_reads) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary, primary_timeout=1)

        async def upload() -> int:
            # aiohttp reads the answer while the body is still being sent, as curl does
            async with aiohttp.ClientSession() as session, \
                    session.post(proxy + "/upload", data=b"x" * 8_000_000) as response:   # more than buffers hold
                return response.status

        assert asyncio.run(upload()) == 504


def faulty(sent: bytes, end: str = "close", health: bool = True) -> Handler:
    """An upstream that reads a request, sends ``sent`` and then ends the connection:
    ``close``, ``reset`` (RST), or ``hang``; ``/health`` too unless ``health``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await read_request(reader, writer if health else None)
            writer.write(sent)
            await writer.drain()
            await asyncio.sleep(0.05)   # what was sent is read before the connection ends
            if end == "hang":
                await asyncio.sleep(30)
            if end == "reset":
                writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                           struct.pack("ii", 1, 0))
        writer.close()

    return handle


CUT = answer()[:-20]
@pytest.mark.parametrize(("sent", "end", "reason"), [
    (b"THIS IS NOT HTTP\r\n\r\n", "close", "malformed"),
    (b"THIS IS NOT HTTP\r\n\r\n", "reset", "malformed"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "close",
     "malformed"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "close", "malformed"),
    (b"", "close", "reset"),
    (b"", "reset", "reset"),
    (b"HTTP/1.1 200 OK\r\nContent-Le", "close", "reset"),
    (CUT, "close", "reset"),
    (CUT, "reset", "reset"),
    (answer(b'{"choices": 3}'), "close", "malformed"),
    (answer(b"[1, 2"), "close", "malformed"),
    (CUT, "hang", "timeout"),
    (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", "close", "http_error"),
], ids=["not-http", "not-http-reset", "bad-chunk", "two-lengths", "closed", "reset", "cut-head", "cut-body",
        "reset-body", "wrong-shape", "not-json", "hang", "503"])
def test_each_shadow_fault_is_counted_by_its_true_reason(start_proxy: Start, sent: bytes, end: str,
                                                         reason: str) -> None:
    with raw_server(keep_answering) as primary, raw_server(faulty(sent, end)) as shadow:
        proxy, app = proxy_for(start_proxy, primary=primary, shadow=shadow, shadow_timeout=1)
        assert asyncio.run(hammer(proxy + "/v1/chat/completions", 1, 1, chat("x"))) == {200: 1}
        settled(app)
        got = {r: counter(app, "shadow", "failed", r) for r in ("timeout", "connect_error", "http_error", "reset",
                                                                "malformed", "error_event", "incomplete")}
        assert {r: n for r, n in got.items() if n} == {reason: 1}


@pytest.mark.parametrize("listening", [False, True], ids=["refused", "backlog-full"])
def test_a_shadow_that_cannot_be_reached_is_a_connect_error(start_proxy: Start, listening: bool) -> None:
    """Refused, or never accepted within --connect-timeout (aiohttp's ConnectionTimeoutError
    is a TimeoutError too, and was counted as the shadow's slowness)."""
    with socket.socket() as unreachable, contextlib.ExitStack() as stack:
        unreachable.bind(("127.0.0.1", 0))
        port = unreachable.getsockname()[1]
        if listening:   # a backlog that is full: further connections are never accepted
            unreachable.listen(0)
            for _ in range(3):
                filler = stack.enter_context(socket.socket())
                filler.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    filler.connect(("127.0.0.1", port))
        with raw_server(keep_answering) as primary:
            proxy, app = proxy_for(start_proxy, primary=primary, shadow=f"http://127.0.0.1:{port}", connect_timeout=0.3)
            assert asyncio.run(hammer(proxy + "/v1/chat/completions", 1, 1, chat("x"))) == {200: 1}
            settled(app)
            assert counter(app, "shadow", "failed", "connect_error") == 1
            assert counter(app, "shadow", "failed", "timeout") == 0


def test_an_unreachable_primary_is_one_warning_at_start_and_one_line_per_request(
        start_proxy: Start, caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{unused.getsockname()[1]}"   # bound, never listening: refused
        with raw_server(faulty(b"", "close", health=False)) as shadow, \
                caplog.at_level(logging.WARNING, "shadowdiff.proxy"):
            proxy, _ = proxy_for(start_proxy, primary=down, shadow=shadow)
            started = sorted(record.getMessage() for record in caplog.records if record.name == "shadowdiff.proxy")
            assert started[0] == (f"the primary {down} is not answering: did not answer /health: "
                                  f"ClientConnectorError: cannot connect to {down[7:]}: Connection refused; "
                                  "serving anyway")
            assert started[1].startswith(f"the shadow {shadow} is not answering: did not answer /health: "
                                         "ServerDisconnectedError")
            caplog.clear()
            for _ in range(3):
                r = HTTP.post(proxy + "/v1/chat/completions?key=query-secret", json=chat("x"),
                              headers={"Authorization": "Bearer sk-very-secret-1234567890"})
                assert r.status_code == 502
        lines = [record.getMessage() for record in caplog.records if record.name == "shadowdiff.proxy"]
        assert len(lines) == 3 and len(set(lines)) == 1 and "\n" not in lines[0]
        assert lines[0] == ("primary request failed: POST /v1/chat/completions: ClientConnectorError: "
                            f"cannot connect to {down[7:]}: Connection refused")
        assert "secret" not in lines[0]


@pytest.mark.parametrize(("method", "sent", "end", "status", "line"), [
    ("POST", b"", "hang", b"504", "primary request failed: POST /v1/chat/completions: no answer within "
                                  "--primary-timeout (1 s): SocketTimeoutError: Timeout on reading data from socket"),
    ("GET", b"", "hang", b"504", "primary request failed: GET /v1/models: no answer within --primary-timeout (1 s): "
                                 "SocketTimeoutError: Timeout on reading data from socket"),
    ("POST", CUT, "close", b"200", "primary answer failed after its status (200) was sent: POST "
                                   "/v1/chat/completions: ClientPayloadError: Response payload is not completed"),
    ("POST", CUT, "reset", b"200", "primary answer failed after its status (200) was sent: POST "
                                   "/v1/chat/completions: ClientPayloadError: Response payload is not completed"),
    ("GET", CUT, "hang", b"200", "primary answer failed after its status (200) was sent: GET /v1/models: "
                                 "SocketTimeoutError: Timeout on reading data from socket"),
], ids=["timeout-post", "timeout-get", "cut", "reset", "stalls-mid-answer"])
def test_a_primary_that_times_out_or_breaks_off_is_one_line(start_proxy: Start, caplog: pytest.LogCaptureFixture,
                                                            method: str, sent: bytes, end: str, status: bytes,
                                                            line: str) -> None:
    """Each with its method, path and cause, and nothing from uvicorn: its "ASGI callable
    returned without completing response." said none of them."""
    with raw_server(faulty(sent, end)) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary, primary_timeout=1)
        uvicorn_log = logging.getLogger("uvicorn.error")   # (it does not propagate to caplog's handler)
        uvicorn_log.addHandler(caplog.handler)
        try:
            with caplog.at_level(logging.WARNING):
                caplog.clear()
                path = b"/v1/chat/completions" if method == "POST" else b"/v1/models"
                got = raw_request(proxy, b"%s %s?key=query-secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                         b"Authorization: Bearer sk-very-secret-1234567890\r\n"
                                         b"Content-Length: 2\r\n\r\n{}" % (method.encode(), path))
        finally:
            uvicorn_log.removeHandler(caplog.handler)
    assert got.startswith(b"HTTP/1.1 " + status)
    if status == b"200":
        assert got.endswith(CUT[CUT.index(b"\r\n\r\n") + 4:])   # then the connection closed: the client knows
    # (not asyncio's: the test upstream's handlers, cancelled as it stops)
    lines = [(record.name, record.getMessage()) for record in caplog.records if record.name != "asyncio"]
    assert len(lines) == 1 and lines[0][0] == "shadowdiff.proxy"
    assert lines[0][1].startswith(line) and "\n" not in lines[0][1] and "secret" not in lines[0][1]


def test_a_primary_whose_name_does_not_resolve_is_logged_with_the_resolver_s_reason(
        start_proxy: Start, caplog: pytest.LogCaptureFixture) -> None:
    """getaddrinfo's error codes are not errno's: os.strerror made "Unknown error -2" of one."""
    with pytest.raises(socket.gaierror) as resolving:
        socket.getaddrinfo("nonexistent.invalid", 8000)
    reason = resolving.value.strerror   # "Name or service not known", where there is DNS
    with caplog.at_level(logging.WARNING, "shadowdiff.proxy"):
        proxy, _ = proxy_for(start_proxy, primary="http://nonexistent.invalid:8000")
        assert HTTP.post(proxy + "/v1/chat/completions", json=chat("x")).status_code == 502
    lines = sorted(record.getMessage() for record in caplog.records if record.name == "shadowdiff.proxy")
    cause = f"ClientConnectorDNSError: cannot connect to nonexistent.invalid:8000: {reason}"
    assert lines == [f"primary request failed: POST /v1/chat/completions: {cause}",
                     f"the primary http://nonexistent.invalid:8000 is not answering: did not answer /health: "
                     f"{cause}; serving anyway"]
    assert "Unknown error" not in cause


def test_the_log_formatter_hides_query_strings() -> None:
    exc = aiohttp.ClientOSError(None, "Can not write request body for http://h:1/v1/x?key=secret&b=2")
    assert failure_text(exc) == "ClientOSError: Can not write request body for http://h:1/v1/x?[REDACTED]"


def test_pairs_still_waiting_at_shutdown_are_counted_as_drained(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """With a shadow that never answers, the pairs left when --drain-timeout runs out are
    counted in the run (an error each, as a failed shadow side is), not lost from it."""
    from shadowdiff.commands.background import serve_in_thread
    from shadowdiff.proxy.app import build_app
    from shadowdiff.proxy.settings import ProxySettings
    from shadowdiff.report.summary import summarize
    from shadowdiff.report.write import summary_text
    from shadowdiff.store import Store
    from shadowdiff.verdict.acceptance import acceptance

    with raw_server(keep_answering) as primary, raw_server(faulty(b"", "hang")) as shadow:
        app = build_app(ProxySettings(primary=primary, shadow=shadow, store=str(tmp_path), drain_timeout=1))
        with serve_in_thread(app, lifespan="on") as proxy, caplog.at_level(logging.WARNING, "shadowdiff.proxy"):
            assert asyncio.run(hammer(proxy + "/v1/chat/completions", 3, 3, chat("x"))) == {200: 3}
            assert len(app.pairs.pending) == 3
        # (the setting, not what the shutdown had left of it)
        assert "3 pairs were not complete after --drain-timeout 1 s" in caplog.text
        store = Store.open(tmp_path)
        run = store.latest_run("serve")
        assert run is not None and run.finished_at is not None
        summary = summarize(store, run.id)
        assert summary.not_compared == {"drained": 3}
        assert "3 requests made no pair: 3 the proxy stopped before the answers were in" in summary_text(summary)
        assert acceptance(store, run.id).errors == 3
        assert counter(app, "pairs", "error", "true") == 3
        store.close()


@pytest.mark.parametrize("split", [False, True], ids=["one-read", "two-reads"])
def test_a_head_answered_with_a_body_is_a_200_as_direct(start_proxy: Start, split: bool) -> None:
    """A broken upstream sends a body with its answer to HEAD; clients ignore it, and
    aiohttp took it for an invalid next answer: a 502."""

    async def head_with_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head, _ = await read_request(reader, writer)
                if not head.startswith(b"HEAD "):
                    writer.write(answer())
                    continue
                sent = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + answer(b"hello", b"X-Up: 1\r\n")
                for piece in ([sent[:-3], sent[-3:]] if split else [sent]):
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.05)
        writer.close()

    with raw_server(head_with_body) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary)
        for _ in range(2):
            # (a new connection each time: the body spoils the client's connection too)
            direct, proxied = httpx.head(primary + "/v1/models"), httpx.head(proxy + "/v1/models")
            assert proxied.status_code == direct.status_code == 200
            assert proxied.headers["x-up"] == "1" and proxied.headers["content-length"] == "5"
            assert proxied.content == b""
            assert HTTP.post(proxy + "/v1/chat/completions", json=chat("x")).json()["choices"]   # still fine


def test_an_empty_query_is_forwarded_as_received(start_proxy: Start) -> None:
    targets: list[bytes] = []

    async def note_target(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head, _ = await read_request(reader, writer)
                targets.append(head.split(b" ")[1])
                writer.write(answer())
        writer.close()

    with raw_server(note_target) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary)
        for target in (b"/v1/models?", b"/v1/models", b"/v1/models?a=1", b"/v1/%7Emodels?"):
            raw_request(proxy, b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % target)
        assert targets == [b"/v1/models?", b"/v1/models", b"/v1/models?a=1", b"/v1/%7Emodels?"]


def test_slow_request_heads_are_closed_while_traffic_flows(start_simulator: Any, start_proxy: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Slowloris: 1,000 connections each sending a header line now and then are closed once
    their head is late (the limit shortened to 1 s here), while requests keep being answered."""
    import time

    from shadowdiff.proxy.httpprotocol import TargetKeepingProtocol

    monkeypatch.setattr(TargetKeepingProtocol, "head_timeout", 1.0)
    url, _ = start_proxy(primary=start_simulator())
    host, port = url.removeprefix("http://").split(":")
    slow: list[socket.socket] = []
    try:
        for _ in range(1000):
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        started = time.monotonic()
        answered = 0
        while time.monotonic() - started < 2.5:
            for s in slow[:50]:   # a header line now and then, as slowloris sends
                with contextlib.suppress(OSError):
                    s.sendall(b"X-a: b\r\n")
            assert HTTP.post(url + "/v1/chat/completions", json=chat("still served?")).status_code == 200
            answered += 1
            time.sleep(0.2)
        assert answered >= 5
        closed = 0
        for s in slow:
            s.settimeout(2)
            try:
                closed += s.recv(1) == b""
            except (ConnectionResetError, BrokenPipeError):
                closed += 1
        assert closed == len(slow)
        # a request whose head arrives in time is answered, however it is split
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"GET /health HTTP/1.1\r\n")
            time.sleep(0.5)
            s.sendall(b"Host: x\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 ")
    finally:
        for s in slow:
            s.close()


def recording(heads: list[bytes]) -> Handler:
    """A well-behaved upstream that keeps the head of every request it answers."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head, _ = await read_request(reader, writer)
                heads.append(head)
                writer.write(answer())
                await writer.drain()
        writer.close()

    return handle


def test_header_values_in_utf8_reach_both_upstreams_byte_for_byte(start_proxy: Start) -> None:
    """aiohttp writes header text as UTF-8: decoded as anything else (Latin-1), a UTF-8
    value reached the upstream altered; refused, a client the upstream serves got 400."""
    body = orjson.dumps(chat("hi"))
    value = "café – 東京 🙂".encode()
    primary_heads: list[bytes] = []
    shadow_heads: list[bytes] = []
    with raw_server(recording(primary_heads)) as primary, raw_server(recording(shadow_heads)) as shadow:
        proxy, _ = proxy_for(start_proxy, primary=primary, shadow=shadow)
        answer_ = raw_request(proxy, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                              b"\r\nX-Title: " + value + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                              % (len(body), body))
        assert answer_.startswith(b"HTTP/1.1 200")
        wait_for(lambda: len(shadow_heads) == 1)
    assert [head for head in primary_heads + shadow_heads if b"\r\nx-title: " + value + b"\r\n" in head.lower()] \
        == primary_heads + shadow_heads


def test_a_header_value_that_is_not_utf8_gets_a_clear_error(start_proxy: Start) -> None:
    """A Latin-1 byte cannot be written as it came (aiohttp writes text as UTF-8): refused,
    saying why, rather than forwarded altered."""
    heads: list[bytes] = []
    with raw_server(recording(heads)) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary)
        answer_ = raw_request(proxy, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Name: caf\xe9\r\n"
                                     b"Connection: close\r\n\r\n")
    assert answer_.startswith(b"HTTP/1.1 400")
    assert b"not UTF-8" in answer_
    assert heads == []


@pytest.mark.parametrize("method", [b"GET", b"POST", b"OPTIONS"])
def test_a_target_that_is_not_a_path_reaches_no_upstream(start_proxy: Start, caplog: pytest.LogCaptureFixture,
                                                         method: bytes) -> None:
    """uvicorn passes "*@host:port/x" on as the path: appended to the primary's URL it made
    "host" the URL's host and the primary's URL (credentials included) its user."""
    primary_heads: list[bytes] = []
    elsewhere_heads: list[bytes] = []
    with raw_server(recording(primary_heads)) as primary, raw_server(recording(elsewhere_heads)) as elsewhere:
        proxy, _ = proxy_for(start_proxy, primary=primary.replace("http://", "http://pu:secretpw@"))
        answers = [raw_request(proxy, method + b" " + target + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                               b"Connection: close\r\n\r\n")
                   for target in (b"*@" + elsewhere.removeprefix("http://").encode() + b"/anything?q=1", b"*")]
    assert [answer_.split(b"\r\n")[0] for answer_ in answers] == [b"HTTP/1.1 400 Bad Request"] * 2
    assert all(b"origin-form" in answer_ for answer_ in answers)
    assert primary_heads == elsewhere_heads == []
    # (no "Exception in ASGI application": the raw servers' own teardown aside)
    ours = [r for r in caplog.records if r.name.startswith(("uvicorn", "shadowdiff"))]
    assert not [r for r in ours if r.levelno >= logging.ERROR]


def test_upgrade_requests_never_hang(start_proxy: Start) -> None:
    """llhttp hands the bytes after an upgrade request's head to no one: curl --http2's h2c
    POST lost its body and waited for --primary-timeout (the primary blamed), a request
    pipelined after an upgrade GET was never answered, and CONNECT reached the primary as
    a tunnel to its own address."""
    heads: list[bytes] = []
    body = orjson.dumps(chat("hi"))
    with raw_server(recording(heads)) as primary:
        proxy, _ = proxy_for(start_proxy, primary=primary, primary_timeout=60)
        h2c = raw_request(proxy, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings"
                          b"\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nContent-Type: "
                          b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        connect = raw_request(proxy, b"CONNECT /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        # (read to the close: a connection left open would time out here)
        upgrade_get = raw_request(proxy, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                                  b"Upgrade: websocket\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
    assert h2c.startswith(b"HTTP/1.1 400") and b"Upgrade" in h2c
    assert connect.startswith(b"HTTP/1.1 405")
    assert upgrade_get.startswith(b"HTTP/1.1 200") and b"connection: close" in upgrade_get.lower()
    assert [head.split(b"\r\n")[0] for head in heads] == [b"GET /v1/models HTTP/1.1"]

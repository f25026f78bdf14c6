"""The hot path: forward a request to the primary, stream its answer back, tap it.

A plain ASGI callable over an aiohttp session, because the framework layers, not
the network, are most of a Python proxy's cost (measured when it was designed: 0.98 ms
added by Starlette routing + httpx, 0.38 ms by pure ASGI + aiohttp). Everything is
forwarded as received: method, raw path, query, headers (minus hop-by-hop ones and
Expect), and the body (passed as bytes when it arrives in one piece, streamed when it
does not); the primary's status, headers and body come back unchanged, each chunk sent
on as it arrives.

Mirroring and capture are behind one call per request (``shadowdiff.proxy.mirroring``):
for a request they want, the body is also kept (up to ``max_mirror_body``) and handed
over once complete; the primary's answer is kept as raw bytes while it passes (the tap)
and handed over whole, to be parsed afterwards by the pair task, so the client's stream
never waits for shadowdiff. Nothing that mirroring or capture does can fail the client's
request: their errors are counted and dropped.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
import orjson
from starlette.types import Receive, Scope, Send

from shadowdiff.proxy.answers import guarded
from shadowdiff.proxy.body import with_model
from shadowdiff.proxy.capture import Capture
from shadowdiff.proxy.httpprotocol import ABORT, EMPTY_QUERY
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.mirroring import MirroredRequest, Mirroring
from shadowdiff.proxy.pairs import PairRecorder
from shadowdiff.proxy.settings import MIRRORED_PATHS, ProxySettings
from shadowdiff.proxy.shadow import HOP_BY_HOP, NOT_FORWARDED, TAP_LIMIT, Mirror, TokenTimes
from shadowdiff.proxy.tap import Tapped
from shadowdiff.proxy.upstream import Body, Upstream, header_text, target

log = logging.getLogger("shadowdiff.proxy")
_RESPONSE_HOP_BY_HOP = HOP_BY_HOP - {b"host"}
# A body this small is taken whole by the sockets' buffers, whether the upstream reads it
# or not; a larger or streamed one is sent within --primary-timeout (see ``_send``).
_SURELY_BUFFERED = 64 * 1024


def _between_events(tail: bytes) -> bool:
    """Whether a stream's last bytes end an event: a line break, then another (a blank
    line), each CRLF, LF or CR, as the SSE specification allows, mixed too (vLLM's: LF)."""
    for last in (b"\r\n", b"\n", b"\r"):
        if tail.endswith(last):
            return tail[:-len(last)].endswith((b"\n", b"\r"))
    return False


async def _end_cut(request: _Request, response: aiohttp.ClientResponse, send: Send, tail: bytes,
                   error: bytes) -> None:
    """End an answer the client will not get whole: a stream cut between two events gets
    ``error`` as vLLM's mid-stream error event, then ``[DONE]``; anything else is closed
    before its end (the client sees a cut)."""
    if "text/event-stream" in response.headers.get("content-type", "") and _between_events(tail):
        await send({"type": "http.response.body", "body": b"data: " + error + b"\n\ndata: [DONE]\n\n",
                    "more_body": False})
        return
    request.abort()


def _error(status: int, kind: str, message: str) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": kind, "param": None, "code": status}})


def _end_to_end(headers: list[tuple[bytes, bytes]], hop_by_hop: frozenset[bytes]) -> list[tuple[bytes, bytes]]:
    """Headers without the hop-by-hop ones, including those a Connection header names."""
    named = {name.strip().lower() for k, v in headers if k.lower() == b"connection" for name in v.split(b",")}
    return [(k, v) for k, v in headers if k.lower() not in hop_by_hop and k.lower() not in named]


class Forwarder:
    """The ASGI app that every non-admin request goes through."""

    def __init__(self, settings: ProxySettings, mirror: Mirror, pairs: PairRecorder, metrics: ProxyMetrics,
                 capture: Capture | None = None) -> None:
        self.settings = settings
        self.mirroring = Mirroring(mirror, pairs, metrics, capture)
        self.redactor = pairs.redactor
        self.metrics = metrics
        self.upstream: Upstream | None = None
        self.primary = settings.primary.rstrip("/")
        self.instance = self.mirroring.instance   # this process's id (its request keys' prefix)
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=settings.connect_timeout,
                                             sock_read=settings.primary_timeout)
        # the primary's timing series, looked up once (a label lookup per request and series cost more)
        side = settings.primary_side.value
        self._timings = (metrics.duration.labels(side), metrics.ttft.labels(side), metrics.ttfat.labels(side))

    @property
    def capture(self) -> Capture | None:
        return self.mirroring.capture

    @capture.setter
    def capture(self, capture: Capture | None) -> None:   # (set at start-up, once its file is open)
        self.mirroring.capture = capture

    def open(self) -> None:
        self.upstream = Upstream(self.settings.primary_side.value, self.metrics, limit=0,
                                 keepalive_timeout=self.settings.upstream_idle_timeout,
                                 max_line_size=65536, max_field_size=65536)

    async def close(self) -> None:
        if self.upstream is not None:
            await self.upstream.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.upstream is not None
        if scope["method"] == "CONNECT":   # a tunnel, not a request (aiohttp would send it to the upstream's address)
            await self._answer_error(send, scope["path"], 405, "MethodNotAllowedError", "CONNECT is not supported")
            return
        if not (scope.get("raw_path") or scope["path"].encode()).startswith(b"/"):
            # uvicorn passes on a target such as "*" or "*@host/x" as the path; appended to the
            # primary's URL, "*@host" would make "host" the URL's host and the primary's URL
            # its user: any host reached, with the primary's credentials
            await self._answer_error(send, scope["path"], 400, "BadRequestError",
                                     "the request target must be a path starting with / (origin-form)")
            return
        request = _Request(self, scope, receive)
        try:
            await self._forward(request, send)
        finally:
            request.finish()

    async def _forward(self, request: _Request, send: Send) -> None:
        assert self.upstream is not None
        if not request.headers_forwardable:
            await self._answer_error(send, request.path, 400, "BadRequestError",
                                     "a request header's value is not UTF-8 (a Latin-1 byte?): shadowdiff forwards "
                                     "header values in UTF-8 or ASCII only, byte for byte")
            return
        try:
            data = await request.body_for_primary()
        except _ClientGone:
            request.gone = True
            return
        started = time.perf_counter()
        try:
            response = await self._send(request, data)
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            if request.gone:  # the client left while the primary was still working
                return
            # uvicorn cancels what --drain-timeout did not see finish: the client gets an
            # OpenAI-style error, not uvicorn's plain-text 500
            request.drained = True
            log.warning("request cut at shutdown before the primary answered (--drain-timeout %g s): %s %s",
                        self.settings.drain_timeout, request.method, request.shown_path)
            await self._answer_error(send, request.path, 503, "ServiceUnavailableError",
                                     "the proxy is shutting down and the primary did not answer in time")
            return
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            request.failed = True
            if not request.gone:
                log.warning("primary request failed: %s %s: no answer within --primary-timeout (%g s): %s",
                            request.method, request.shown_path, self.settings.primary_timeout, request.failure(exc))
                await self._answer_error(send, request.path, 504, "GatewayTimeoutError",
                                         f"the primary did not answer within {self.settings.primary_timeout:g} s")
            return
        except aiohttp.ClientError as exc:
            request.failed = not request.gone
            if not request.gone:
                log.warning("primary request failed: %s %s: %s", request.method, request.shown_path,
                            request.failure(exc))
                await self._answer_error(send, request.path, 502, "BadGatewayError",
                                         "the primary is unreachable or sent an invalid answer")
            return
        await self._relay(request, guarded(response), send, started)

    async def _send(self, request: _Request, data: Body) -> aiohttp.ClientResponse:
        """The primary's answer, its status and headers read."""
        assert self.upstream is not None
        if data is None or (isinstance(data, bytes) and len(data) <= _SURELY_BUFFERED):
            return await self.upstream.request(request.method, request.url, headers=request.upstream_headers,
                                               data=data, timeouts=self.timeout)
        # aiohttp starts --primary-timeout's clock (sock_read) once the body is sent: an
        # upstream that stops reading a large body would hold the request for ever.
        async with asyncio.timeout(self.settings.primary_timeout):
            return await self.upstream.request(request.method, request.url, headers=request.upstream_headers,
                                               data=data, timeouts=self.timeout)

    async def _answer_error(self, send: Send, path: str, status: int, kind: str, message: str) -> None:
        body = _error(status, kind, message)
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        self.metrics.request(path, status)

    async def _cut_at_shutdown(self, request: _Request, response: aiohttp.ClientResponse, send: Send,
                               tail: bytes) -> None:
        """End an answer that --drain-timeout cut (uvicorn cancelled it): a stream between
        two events gets vLLM's own mid-stream error event and ``[DONE]``, so that clients
        raise a clear error; otherwise the connection closes before the end, as when the
        primary fails mid-answer."""
        request.drained = request.responded = True
        log.warning("answer cut at shutdown (--drain-timeout %g s): %s %s", self.settings.drain_timeout,
                    request.method, request.shown_path)
        await _end_cut(request, response, send, tail,
                       _error(503, "ServiceUnavailableError", "the proxy is shutting down: the answer was cut"))

    async def _end_failed(self, request: _Request, response: aiohttp.ClientResponse, send: Send,
                          tail: bytes) -> None:
        """End an answer the primary failed after its status was sent: a stream between two
        events gets vLLM's own mid-stream error event and ``[DONE]``, as vLLM ends a failed
        stream; otherwise the connection closes before the end, as a direct client sees it."""
        await _end_cut(request, response, send, tail,
                       _error(502, "BadGatewayError", "the primary's answer broke off mid-stream"))

    async def _relay(self, request: _Request, response: aiohttp.ClientResponse, send: Send,
                     started: float) -> None:
        status = response.status
        headers = _end_to_end([(k.lower(), v) for k, v in response.raw_headers], _RESPONSE_HOP_BY_HOP)
        self.metrics.request(request.path, status)
        keep = request.mirrored.keeps_answer
        timed = request.path in MIRRORED_PATHS
        raw = bytearray()
        times = TokenTimes()
        overflow = False
        tail = b"\n\n"          # the end of what the client has so far: is it between two events?
        try:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            async for chunk in response.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                tail = (tail + chunk)[-4:]
                if timed:
                    times.seen(chunk)
                if keep:
                    if len(raw) + len(chunk) <= TAP_LIMIT:
                        raw += chunk
                    else:
                        overflow = True
            request.responded = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            response.close()  # drops the upstream connection: vLLM aborts the request
            if not request.gone:
                await self._cut_at_shutdown(request, response, send, tail)
                return
            if not (keep and not overflow and _whole(raw, response.headers.get("content-type", ""))):
                return
            # The client had the whole answer and left before the upstream's last bytes
            # (the openai client closes on [DONE]): the answer is complete, and compared.
        except (TimeoutError, aiohttp.ClientError) as exc:
            request.responded = request.failed = True
            response.close()
            log.warning("primary answer failed after its status (%d) was sent: %s %s: %s", status,
                        request.method, request.shown_path, request.failure(exc))
            await self._end_failed(request, response, send, tail)
            return
        finally:
            response.release()
        ended = time.perf_counter()
        if timed:
            self._observe(times, started, ended)
        if keep:   # (only a mirrored answer is wanted whole: no record for the others)
            request.mirrored.primary_done(Tapped(bytes(raw), status, "text/event-stream" in response.headers.get(
                "content-type", ""), started, times.first, times.first_answer, ended, overflow, times.last))

    def _observe(self, times: TokenTimes, started: float, ended: float) -> None:
        """The primary's timings, in the metrics (for every chat or completions request)."""
        duration, ttft, ttfat = self._timings
        duration.observe(ended - started)
        if times.first is not None:
            ttft.observe(times.first - started)
        if times.first_answer is not None:
            ttfat.observe(times.first_answer - started)


_DONE = re.compile(rb"data: ?\[DONE\]\s*$")


def _whole(raw: bytes | bytearray, content_type: str) -> bool:
    """Whether an answer read so far is complete: a stream that ended in ``[DONE]``, or a
    body that is whole JSON."""
    if "text/event-stream" in content_type:
        return _DONE.search(raw[-64:]) is not None
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


class _ClientGone(Exception):
    """The client disconnected while its request body was arriving."""


def _as_received(scope: Scope) -> tuple[str, str]:
    """The request's target as received, not decoded: its path, and its query with its "?"
    (an empty one too: see shadowdiff.proxy.httpprotocol); the shadow and the replica get them too."""
    raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
    query: bytes = scope["query_string"]
    return raw_path.decode("latin-1"), f"?{query.decode('latin-1')}" if query or EMPTY_QUERY in scope else ""


def _has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    return any((k == b"content-length" and v != b"0") or k == b"transfer-encoding" for k, v in headers)


class _Request:
    """One forwarded request: what goes upstream, and how it went."""

    def __init__(self, forwarder: Forwarder, scope: Scope, receive: Receive) -> None:
        self.f = forwarder
        self.receive = receive
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        raw_path, query = _as_received(scope)
        self.url = target(forwarder.primary, raw_path, query)
        self.headers = _end_to_end(scope["headers"], NOT_FORWARDED)
        texts = header_text(self.headers)
        self.headers_forwardable = texts is not None
        self.upstream_headers = texts or []
        self.has_body = _has_body(scope["headers"])
        # --primary-model: the body's model name is rewritten for the primary
        self.rewrites = self.has_body and forwarder.settings.primary_model is not None and (
            self.method == "POST" and self.path in MIRRORED_PATHS)
        self.mirrored: MirroredRequest = forwarder.mirroring.start(self.method, self.path, raw_path, query,
                                                                   self.headers, self.has_body)
        self.keeps_body = self.mirrored.keeps_body or self.rewrites
        self.gone = False           # the client left: while its request arrived, or before the answer's end
        self.failed = False
        self.drained = False        # cut by the shutdown's deadline
        self.responded = False
        self.task = asyncio.current_task()
        self.watcher: asyncio.Task[None] | None = None
        self._abort: Callable[[], None] | None = scope.get(ABORT)

    def abort(self) -> None:
        """Close the client's connection before the answer's end (see shadowdiff.proxy.httpprotocol);
        under another uvicorn protocol, returning does it, with uvicorn's error line."""
        if self._abort is not None:
            self._abort()

    async def body_for_primary(self) -> bytes | AsyncIterator[bytes] | None:
        """What to send the primary: nothing, the body, or the body as it arrives."""
        if not self.has_body:
            self._complete(None)
            return None
        first = await self.receive()
        if first["type"] == "http.disconnect":
            raise _ClientGone
        chunk = first.get("body", b"")
        if first.get("more_body", False) and not self.rewrites:
            return self._stream(chunk)
        # Most bodies arrive in one ASGI message; with --primary-model the body is read
        # whole, since its model name is rewritten before it is sent.
        body = bytearray(chunk)
        more = first.get("more_body", False)
        while more:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone
            body += message.get("body", b"")
            more = message.get("more_body", False)
        data = bytes(body)
        self._complete(data if len(data) <= self.f.settings.max_mirror_body else None)
        return self._for_primary(data)

    async def _stream(self, first: bytes) -> AsyncIterator[bytes]:
        kept: bytearray | None = bytearray(first) if self.keeps_body else None
        if first:
            yield first
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                raise _ClientGone  # aiohttp wraps it; ``gone`` tells the caller
            chunk = message.get("body", b"")
            if kept is not None:
                kept = kept + chunk if len(kept) + len(chunk) <= self.f.settings.max_mirror_body else None
            if chunk:
                yield chunk
            if not message.get("more_body", False):
                break
        self._complete(bytes(kept) if kept is not None else None)

    def _for_primary(self, body: bytes) -> bytes:
        model = self.f.settings.primary_model
        if model is None or not self.rewrites:
            return body
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return body
        rewritten = with_model(body, request, model) if isinstance(request, dict) else None
        if rewritten is None:   # not a JSON object, or one too deep to write back: as it came
            return body
        self.upstream_headers = [(k, str(len(rewritten)) if k.lower() == "content-length" else v)
                                 for k, v in self.upstream_headers]
        return rewritten

    def _complete(self, body: bytes | None) -> None:
        """The body is in: watch for a disconnect from now on; mirroring and capture have it."""
        self.watcher = asyncio.get_running_loop().create_task(self._watch())
        self.mirrored.body_in(body)

    async def _watch(self) -> None:
        # The request body is complete, so receive() now only reports a disconnect.
        while (await self.receive())["type"] != "http.disconnect":
            pass
        if not self.responded and self.task is not None:
            self.gone = True
            self.task.cancel()

    @property
    def shown_path(self) -> str:
        """The path as a log line shows it: cut, since a client may send 100 KB of it."""
        return self.path if len(self.path) <= 200 else self.path[:200] + "…"

    def failure(self, exc: BaseException) -> str:
        """An upstream failure of this request, for the log: on one line, without what was
        sent, and without the credentials its headers carried, should the upstream have
        repeated one (a status line or error text echoing an opaque key)."""
        return self.f.redactor.failure(exc, self.headers)

    def finish(self) -> None:
        """However the request ended: stop watching, and tell mirroring how."""
        if self.watcher is not None:
            self.watcher.cancel()
        self.mirrored.finish(refused=not self.headers_forwardable, client_left=self.gone, failed=self.failed,
                             drained=self.drained)

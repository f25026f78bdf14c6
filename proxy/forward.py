"""The hot path: forward a request to the primary, stream its answer back, tap it.

A plain ASGI callable over an aiohttp session, because the framework layers, not
the network, are most of a Python proxy's cost (../shared/DESIGN.md measured 0.98 ms
added by Starlette routing + httpx, 0.38 ms by pure ASGI + aiohttp). Everything is
forwarded as received: method, raw path, query, headers (minus hop-by-hop), and the
body, streamed; the primary's status, headers and body come back unchanged, each
chunk sent on as it arrives.

For a request that is mirrored or captured, the body is also kept (up to
``max_mirror_body``) and, once complete, turned into a shadow request; the primary's
answer is kept as raw bytes while it passes and only parsed afterwards, by the pair
task, so the client's stream never waits for shadowdiff.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
from starlette.types import Receive, Scope, Send
from yarl import URL

from proxy.capture import Capture
from proxy.metrics import ProxyMetrics
from proxy.pairs import PairRecorder
from proxy.settings import MIRRORED_PATHS, ProxySettings
from proxy.shadow import HOP_BY_HOP, Mirror, Plan, first_content
from proxy.tap import Tapped

_RESPONSE_HOP_BY_HOP = frozenset({
    b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te", b"trailer",
    b"trailers", b"transfer-encoding", b"upgrade",
})
_TAP_LIMIT = 16 * 1024 * 1024   # an answer larger than this is passed on but not compared


class ClientGone(Exception):
    """The client disconnected before its request was complete."""


def _error(status: int, kind: str, message: str) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": kind, "param": None, "code": status}})


class Forwarder:
    """The ASGI app that every non-admin request goes through."""

    def __init__(self, settings: ProxySettings, mirror: Mirror, pairs: PairRecorder, metrics: ProxyMetrics,
                 capture: Capture | None = None) -> None:
        self.settings = settings
        self.mirror = mirror
        self.pairs = pairs
        self.metrics = metrics
        self.capture = capture
        self.session: aiohttp.ClientSession | None = None
        self.primary = settings.primary.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=settings.connect_timeout,
                                             sock_read=settings.primary_timeout)

    def open(self) -> None:
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=60, keepalive_timeout=60)
        self.session = aiohttp.ClientSession(
            connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"))

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.session is not None
        method: str = scope["method"]
        path: str = scope["path"]
        raw_path = scope.get("raw_path") or path.encode()
        query: bytes = scope["query_string"]
        # encoded=True: yarl must not re-quote the path (%7E would become ~).
        url = URL(self.primary + raw_path.decode("latin-1") + (("?" + query.decode("latin-1")) if query else ""),
                  encoded=True)
        headers = [(k, v) for k, v in scope["headers"] if k not in HOP_BY_HOP]
        has_body = any((k == b"content-length" and v != b"0") or k == b"transfer-encoding"
                       for k, v in scope["headers"])
        keep = has_body and method == "POST" and path in MIRRORED_PATHS and (
            self.mirror.wanted(method, path) or self.capture is not None)
        request = _Request(self, path, query.decode("latin-1"), headers, keep)
        data = request.body(receive) if has_body else None
        if not has_body:
            request.complete = True
        started = time.perf_counter()
        try:
            response = await self.session.request(
                method, url, headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers],
                data=data, allow_redirects=False, timeout=self.timeout)
        except ClientGone:
            return
        except (TimeoutError, aiohttp.ServerTimeoutError):
            await self._answer_error(send, path, 504, "GatewayTimeoutError",
                                     f"the primary did not answer within {self.settings.primary_timeout:g} s")
            request.primary_failed()
            return
        except aiohttp.ClientError as exc:
            await self._answer_error(send, path, 502, "BadGatewayError", f"the primary is unreachable: {exc}")
            request.primary_failed()
            return
        await self._relay(request, response, receive, send, started)

    async def _answer_error(self, send: Send, path: str, status: int, kind: str, message: str) -> None:
        body = _error(status, kind, message)
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        self.metrics.request(path, status)

    async def _relay(self, request: _Request, response: aiohttp.ClientResponse, receive: Receive, send: Send,
                     started: float) -> None:
        status = response.status
        headers = [(k.lower(), v) for k, v in response.raw_headers if k.lower() not in _RESPONSE_HOP_BY_HOP]
        self.metrics.request(request.path, status)
        tap = request.plan is not None or request.pending_plan
        raw = bytearray()
        first: float | None = None
        overflow = False
        task = asyncio.current_task()
        assert task is not None
        state = {"finished": False, "gone": False}

        async def watch() -> None:
            # The request body is complete, so receive() now only reports a disconnect.
            while (await receive())["type"] != "http.disconnect":
                pass
            if not state["finished"]:
                state["gone"] = True
                task.cancel()

        watcher = asyncio.create_task(watch()) if request.complete else None
        try:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            async for chunk in response.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if tap:
                    if first is None and first_content(chunk):
                        first = time.perf_counter()
                    if len(raw) + len(chunk) <= _TAP_LIMIT:
                        raw += chunk
                    else:
                        overflow = True
            state["finished"] = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not state["gone"]:
                raise
            task.uncancel()
            response.close()  # drops the upstream connection: vLLM aborts the request
            request.aborted()
            return
        except (TimeoutError, aiohttp.ClientError):
            # The primary failed mid-answer; the status is sent, so the client learns
            # it from the connection closing before the end, as it would without us.
            state["finished"] = True
            response.close()
            request.primary_failed()
            return
        finally:
            state["finished"] = True
            if watcher is not None:
                watcher.cancel()
            response.release()
        request.primary_done(Tapped(bytes(raw), status, "text/event-stream" in response.headers.get(
            "content-type", ""), started, first, time.perf_counter(), overflow))


class _Request:
    """One forwarded request's mirroring state."""

    def __init__(self, forwarder: Forwarder, path: str, query: str, headers: list[tuple[bytes, bytes]],
                 keep: bool) -> None:
        self.f = forwarder
        self.path = path
        self.query = query
        self.headers = headers
        self.keep = keep
        self.complete = False
        self.plan: Plan | None = None
        self.pending_plan = keep   # until the body is complete, a plan may still come
        self.primary: asyncio.Future[Any] | None = None
        self.key = next((v.decode("latin-1") for k, v in headers if k == b"x-request-id"), None)

    async def body(self, receive: Receive) -> AsyncIterator[bytes]:
        """The request body, passed on chunk by chunk (and kept, for mirroring)."""
        kept: bytearray | None = bytearray() if self.keep else None
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            if kept is not None:
                if len(kept) + len(chunk) <= self.f.settings.max_mirror_body:
                    kept += chunk
                else:
                    kept = None
            if chunk:
                yield chunk
            if not message.get("more_body", False):
                break
        self.complete = True
        if self.keep:
            self._body_complete(bytes(kept) if kept is not None else None)

    def _body_complete(self, body: bytes | None) -> None:
        f = self.f
        self.pending_plan = False
        if f.capture is not None and body is not None:
            with contextlib.suppress(orjson.JSONDecodeError):
                parsed = orjson.loads(body)
                if isinstance(parsed, dict):
                    f.capture.offer(self.key or uuid.uuid4().hex, self.path, parsed)
        if not f.mirror.wanted("POST", self.path):
            return
        plan = f.mirror.plan(self.headers, body)
        if isinstance(plan, str):
            f.metrics.shadow_event("skipped", plan)
            return
        self.plan = plan
        shadow = asyncio.create_task(f.mirror.call(plan, self.path, self.query, self.headers))
        self.primary = asyncio.get_running_loop().create_future()
        f.pairs.track(self.key, self.path, plan, self.primary, shadow)

    def primary_done(self, tapped: Tapped) -> None:
        if self.primary is not None and not self.primary.done():
            self.primary.set_result(tapped)

    def primary_failed(self) -> None:
        if self.primary is not None and not self.primary.done():
            self.primary.set_result("primary_error")

    def aborted(self) -> None:
        if self.primary is not None and not self.primary.done():
            self.primary.set_result(None)

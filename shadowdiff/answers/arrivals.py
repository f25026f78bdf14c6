"""When each byte of an answer arrived: stamped as the event loop reads the socket.

A streamed answer timed by when the reading task got round to each event is timed by
how busy the client is, not by the server: with a few hundred streams on one event
loop, reads come late and several events at once, and whichever side the loop serves
second looks faster (one server as both sides once measured 1.83x). aiohttp reads
a socket in its connection protocol's ``data_received``, which the event loop calls as
soon as the socket is readable, before any task runs; the connector here makes that
protocol note the time of every read and how much of the body had come by then.

``answers_session`` is the HTTP client that does this (aiohttp's own: the answers' client,
``shadowdiff.answers.client``, reads its responses directly), ``http_client`` the same
under httpx's interface (for the teacher-forced scorer), and ``watching`` marks the request
whose answer is timed: the response made inside it carries its ``Arrivals``. Any other
client still works; its bytes are then stamped when they are read (``Arrivals.at`` falls
back to now).

A response of these clients whose connection closes before its body's end fails at once
(``_StampingProtocol.connection_lost``), never waits with no error: aiohttp leaves the
body of an answer that turns invalid HTTP after its head (a chunk size that is not hex)
waiting with no error, no end and no read timeout when the bad bytes come in a later
read than the head (the proxy met it: ``shadowdiff.proxy.answers``).
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import functools
import time
from collections.abc import Iterator
from http.cookiejar import CookieJar
from typing import Any

import aiohttp
import httpx
from aiohttp.client_proto import ResponseHandler
from httpx_aiohttp import AiohttpTransport

from shadowdiff.answers.redact import failure_text

_WATCHED: contextvars.ContextVar[Arrivals | None] = contextvars.ContextVar("shadowdiff_arrivals", default=None)


class Arrivals:
    """The arrival of one response: when its request had been sent, and per read of the
    socket, how many bytes of its body had come by then (``time.perf_counter()``)."""

    def __init__(self) -> None:
        self.sent: float | None = None        # the request written, the response awaited
        self._body: aiohttp.StreamReader | None = None
        self._offsets: list[int] = []
        self._times: list[float] = []

    def _read(self, now: float) -> None:
        """A read of the socket at ``now`` (called by the connection's protocol)."""
        if self._body is not None and self._body.total_bytes > (self._offsets[-1] if self._offsets else 0):
            self._offsets.append(self._body.total_bytes)
            self._times.append(now)

    def _start(self, body: aiohttp.StreamReader, last_read: float | None) -> None:
        """The headers are in and ``body`` is this response's; what came with them came
        at the connection's last read."""
        self._body = body
        if body.total_bytes and last_read is not None:
            self._offsets.append(body.total_bytes)
            self._times.append(last_read)

    def at(self, offset: int) -> float:
        """When the body's first ``offset`` bytes had all arrived (now, if no read noted them)."""
        i = bisect.bisect_left(self._offsets, offset)
        return self._times[i] if i < len(self._times) else time.perf_counter()


@contextlib.contextmanager
def watching() -> Iterator[Arrivals]:
    """Time the response of the request made inside this block (in this task)."""
    arrivals = Arrivals()
    token = _WATCHED.set(arrivals)
    try:
        yield arrivals
    finally:
        _WATCHED.reset(token)


class _StampingProtocol(ResponseHandler):
    """aiohttp's connection protocol, noting each read of the socket for the response
    being read on the connection."""

    arrivals: Arrivals | None = None
    last_read: float | None = None
    body: aiohttp.StreamReader | None = None   # the body of the response being read

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()   # first: the parsing below is not part of the arrival
        super().data_received(data)
        self.last_read = now
        if self.arrivals is not None:
            self.arrivals._read(now)

    def connection_lost(self, exc: BaseException | None) -> None:
        cause = self.exception()   # (before aiohttp's own close may put another in its place)
        super().connection_lost(exc)
        body, self.body = self.body, None
        if body is not None and not body.is_eof() and body.exception() is None:
            cause = cause or self.exception()
            why = failure_text(cause) if cause is not None else "the connection closed"
            body.set_exception(aiohttp.ClientPayloadError(f"invalid answer after its head: {why}"))


class _StampingConnector(aiohttp.TCPConnector):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # aiohttp makes each connection's protocol with this factory (a private attribute,
        # unchanged since aiohttp 3.0; tests/answers/test_arrivals.py fails if it goes)
        self._factory = functools.partial(_StampingProtocol, loop=self._loop)  # type: ignore[assignment]


class _StampedResponse(aiohttp.ClientResponse):
    async def start(self, connection: aiohttp.connector.Connection) -> aiohttp.ClientResponse:
        arrivals, protocol = _WATCHED.get(), connection.protocol
        if not isinstance(protocol, _StampingProtocol):
            return await super().start(connection)
        protocol.arrivals = arrivals   # a reused connection: no longer the last response's
        if arrivals is not None:
            # aiohttp calls start() once the request is written: the request's own time
            # starts here, not before a connection was free or while the loop was busy
            arrivals.sent = time.perf_counter()
        response = await super().start(connection)
        protocol.body = self.content
        if arrivals is not None:
            arrivals._start(self.content, protocol.last_read)
        return response


# Seconds an idle connection is kept: below the upstreams' own keep-alive (vLLM's,
# llama.cpp's and SGLang's uvicorn close after 5 s, httpx's default expiry), so that
# we close it first and a request never lands on a connection being closed.
IDLE_TIMEOUT = 4.0


class _NoCookies(CookieJar):
    """A cookie jar that keeps none: each request stands alone (a cookie one answer set must
    not change how the next request is routed or answered), and httpx reading every
    response's headers into a jar was a tenth of the client's CPU per request."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return


def answers_session(connections: int, timeout: float | None) -> aiohttp.ClientSession:
    """An aiohttp session with ``connections`` in its pool, whose responses made inside
    ``watching`` are timed as their bytes arrive; it keeps no cookies. ``timeout`` bounds
    each read of the socket and the wait for a connection; connecting, 10 s at most.
    Made inside the running loop."""
    return aiohttp.ClientSession(
        connector=_StampingConnector(limit=connections, keepalive_timeout=IDLE_TIMEOUT),
        response_class=_StampedResponse, cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout,
                                      sock_connect=10.0 if timeout is None else min(timeout, 10.0)))


def http_client(connections: int, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """An httpx client over aiohttp with ``connections`` in its pool, whose responses
    made inside ``watching`` are timed as their bytes arrive; it keeps no cookies."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections,
                          keepalive_expiry=IDLE_TIMEOUT)

    def session() -> aiohttp.ClientSession:   # made on first use, inside the running loop
        return aiohttp.ClientSession(connector=_StampingConnector(limit=connections,
                                                                  keepalive_timeout=limits.keepalive_expiry),
                                     response_class=_StampedResponse, cookie_jar=aiohttp.DummyCookieJar())

    return httpx.AsyncClient(transport=AiohttpTransport(limits=limits, client=session), timeout=timeout,
                             cookies=_NoCookies())

"""One upstream's connection pool, and the one retry a stale pooled connection earns.

An upstream may close a kept-alive connection right after answering without sending
``Connection: close`` (RFC 9112 §9.3.1 allows it). A request that goes out on such a
connection before its close is seen fails though the upstream never read it: 48–216 of
500 requests at concurrency 8 were 502s through the proxy, none direct.

Such a request is sent once more, on a fresh connection, under Envoy's and nginx's rule
for retrying what may not be idempotent (an LLM request is a POST): only when nothing of
the answer can have arrived. That is when

* the connection came from the pool (a fresh one that fails is a real failure),
* aiohttp failed before the answer's status line: the connection was reset or broken
  while the request was written or awaited, or closed with nothing received,
* within ``STALE_WITHIN`` (1 s) of the connection being handed the request, and
* the body is held as bytes, or there is none. A body streamed from the client (an
  async iterator) cannot be sent again, so it is never sent on a pooled connection: it
  always gets a fresh one, which the upstream cannot have been closing.

A failure after the first byte of an answer (a cut status line or body, an invalid
answer, a timeout) is never retried. aiohttp itself retries idempotent methods (GET,
HEAD, PUT, DELETE…) once on the same pool; this retry comes after it, on a connection
of its own, and is counted in ``shadowdiff_upstream_retries_total{side}``.

So a request is sent twice when the upstream read it and then, within ``STALE_WITHIN``,
closed the connection without a byte of answer (it crashed, or is hostile): from here
that cannot be told from a stale connection (nginx's ``non_idempotent`` has the same
limit). One that fails later was being worked on, and is a 502.

Also here, as they concern every upstream: the connection protocol passes aiohttp only
the head of an answer to HEAD (a body after it failed the answer), and ``target``
builds an upstream's URL from a request's raw path and query. (An upstream failure is
put on one line, without what was sent, by ``shadowdiff.answers.redact.failure_text``.)

Credentials for an upstream combine by one rule: its ``--*-api-key`` (``Bearer``), else
the user and password in its URL (``Basic``, sent as a header: aiohttp's ``auth``, which
a URL's userinfo becomes, refuses a request that also has an Authorization header), else
the client's own Authorization. The one chosen replaces the others.

Header values pass as the client sent them: aiohttp takes them as text and writes them
as UTF-8, so a value in UTF-8 (ASCII included) decodes to text that is written back byte
for byte (``header_text``). One that is not UTF-8 (a Latin-1 byte, which RFC 9110 still
tolerates as obs-text) cannot be written as it came: the request is refused with a 400
that says so, rather than forwarded altered.
"""

from __future__ import annotations

import base64
import functools
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest
from aiohttp.connector import Connection
from aiohttp.tracing import Trace
from yarl import URL

from shadowdiff.proxy.metrics import ProxyMetrics

Body = bytes | AsyncIterator[bytes] | None
# A stale connection's close is seen as soon as the request goes out on it; a close that
# comes later is an upstream that read the request and then failed (crashed, or cut it
# off): sent again, the request would run twice.
STALE_WITHIN = 1.0


class _Noting(ResponseHandler):
    """aiohttp's connection protocol, noting how many requests the connection was handed
    and whether any byte came since the current one was; and passing aiohttp only the
    head of an answer to HEAD."""

    requests = 0
    received = False
    handed = 0.0                   # when (time.monotonic) the connection was handed its current request
    _head: bytes | None = None     # an answer to HEAD so far, up to its head's end; None: not HEAD
    _head_done = False

    def set_response_params(self, **params: Any) -> None:
        if params.get("skip_payload"):   # (aiohttp's flag for an answer to HEAD)
            self._head, self._head_done = b"", False
            # a body would come after the answer, where the next answer's bytes belong
            self.force_close()
        else:
            self._head = None
        super().set_response_params(**params)

    def data_received(self, data: bytes) -> None:
        if data:
            self.received = True
            if self._head is not None:
                data = self._without_body(data)
        super().data_received(data)

    def _without_body(self, data: bytes) -> bytes:
        """``data`` up to the end of the head of an answer to HEAD. A broken upstream may
        send a body after it, which aiohttp parses as an invalid next answer, failing
        this one: a 502 through the proxy, where clients get a 200."""
        if self._head_done:
            return b""
        assert self._head is not None
        kept = len(self._head)
        seen = self._head + data
        start = 0
        while (end := seen.find(b"\r\n\r\n", start)) >= 0:
            end += 4
            if seen[start + 9:start + 10] != b"1":   # after "HTTP/1.1 ": not an interim 1xx answer
                self._head_done = True
                return seen[kept:end]
            start = end
        self._head = seen
        return data


# The connection the current task's last request got. Set by the connector inside
# ``session.request``, which runs in the caller's task, so the caller sees it: aiohttp's
# exceptions do not say which connection failed, nor whether any of the answer came.
_CONNECTION: ContextVar[_Noting | None] = ContextVar("shadowdiff_upstream_connection", default=None)


class _NotingConnector(aiohttp.TCPConnector):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # aiohttp has no public hook for the protocol class; ``_factory`` is how every
        # aiohttp connector since 2.0 makes its connections.
        self._factory = functools.partial(_Noting, loop=self._loop)  # type: ignore[assignment]

    async def connect(self, req: ClientRequest, traces: list[Trace],
                      timeout: aiohttp.ClientTimeout) -> Connection:  # noqa: ASYNC109 (aiohttp's signature)
        connection = await super().connect(req, traces, timeout)
        protocol = connection.protocol
        if isinstance(protocol, _Noting):
            _CONNECTION.set(protocol)
            protocol.requests += 1
            protocol.received = False
            protocol.handed = time.monotonic()
        return connection


def _session(connector: aiohttp.BaseConnector, **options: Any) -> aiohttp.ClientSession:
    # Headers and bodies pass as they are: no decompression, cookies or headers of aiohttp's own.
    return aiohttp.ClientSession(
        connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
        skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"), **options)


def _stale(exc: BaseException) -> bool:
    """Whether a failed ``session.request`` may be sent again: a pooled connection that
    was reset, broken or closed before any byte of the answer, within ``STALE_WITHIN``."""
    connection = _CONNECTION.get()
    _CONNECTION.set(None)
    return (connection is not None and connection.requests > 1 and not connection.received
            and time.monotonic() - connection.handed < STALE_WITHIN
            and isinstance(exc, (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError,
                                 aiohttp.ClientConnectionResetError))
            and not isinstance(exc, aiohttp.ClientConnectorError))   # never connected: not stale


class Upstream:
    """Requests to one upstream: a keep-alive pool, and fresh connections for the retries."""

    def __init__(self, side: str, metrics: ProxyMetrics, *, limit: int, keepalive_timeout: float,
                 api_key: str | None = None, **session_options: Any) -> None:
        self.api_key = api_key
        # every pool's idle connections are closed by us before the upstream's keep-alive
        # would: a request never lands on a connection the upstream is closing (--upstream-idle-timeout)
        self.pooled = _session(_NotingConnector(limit=limit, ttl_dns_cache=60, keepalive_timeout=keepalive_timeout),
                               **session_options)
        self.fresh = _session(_NotingConnector(limit=limit, ttl_dns_cache=60, force_close=True),
                              **session_options)
        self.retries = metrics.retries.labels(side)

    async def request(self, method: str, url: URL, *, headers: list[tuple[str, str]], data: Body,
                      timeouts: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:
        """The upstream's answer (its status and headers read), retried once as the module says."""
        url, headers = with_credentials(url, headers, self.api_key)
        if not (data is None or isinstance(data, bytes)):
            # A streamed body cannot be sent again, so it is not put where it could need to
            # be: a pooled connection may be one the upstream is closing (5-11 of 500 were 502s).
            return await self.fresh.request(method, url, headers=headers, data=data, allow_redirects=False,
                                            timeout=timeouts)
        _CONNECTION.set(None)
        try:
            return await self.pooled.request(method, url, headers=headers, data=data, allow_redirects=False,
                                             timeout=timeouts)
        except aiohttp.ClientError as exc:
            if not _stale(exc):
                raise
        self.retries.inc()
        return await self.fresh.request(method, url, headers=headers, data=data, allow_redirects=False,
                                        timeout=timeouts)

    async def close(self) -> None:
        await self.pooled.close()
        await self.fresh.close()


def header_text(headers: list[tuple[bytes, bytes]]) -> list[tuple[str, str]] | None:
    """Headers as aiohttp takes them, each written back as the same bytes; None if a value
    is not UTF-8. (Names are tokens, ASCII: the HTTP parser refuses any other.)"""
    try:
        return [(name.decode("ascii"), value.decode("utf-8")) for name, value in headers]
    except UnicodeDecodeError:
        return None


def with_credentials(url: URL, headers: list[tuple[str, str]],
                     api_key: str | None) -> tuple[URL, list[tuple[str, str]]]:
    """``url`` without its userinfo and ``headers`` with the one Authorization the module's
    rule chooses: ``api_key``, else the URL's user and password, else the client's."""
    client = next((v for k, v in headers if k.lower() == "authorization"), None)
    url, chosen = credentials(url, api_key, client)
    if chosen is None or chosen == client:
        return url, headers
    kept = [(k, v) for k, v in headers if k.lower() != "authorization"]
    return url, [*kept, ("Authorization", chosen)]


def credentials(url: URL, api_key: str | None, client: str | None) -> tuple[URL, str | None]:
    """``url`` without its userinfo, and the Authorization value the module's rule chooses
    for it: ``api_key`` (Bearer), else the URL's user and password (Basic), else ``client``
    (the client's own header, any scheme)."""
    if api_key:
        return url.with_user(None), f"Bearer {api_key}"
    if url.raw_user is not None or url.raw_password is not None:
        # (UTF-8, as httpx and curl send it: aiohttp's BasicAuth is deprecated, and refused
        # what Latin-1 cannot encode)
        userinfo = f"{url.user or ''}:{url.password or ''}".encode()
        return url.with_user(None), "Basic " + base64.b64encode(userinfo).decode("ascii")
    return url, client


def target(base_url: str, path: str, query: str) -> URL:
    """An upstream's URL for a request's raw path and its query as received (with its
    ``?``, or empty), quoted as it came: yarl must not re-quote it (%7E would become ~),
    and it drops an empty query, whose ``?`` then ends the path instead. Only a path (from
    its ``/``) is appended: anything else could move the URL's authority."""
    if not path.startswith("/"):
        raise ValueError(f"not a path: {path[:40]!r}")
    url = URL(base_url.rstrip("/") + path + query, encoded=True)
    return url.with_path(url.raw_path + "?", encoded=True) if query == "?" else url

"""Calling an OpenAI-compatible server and recording what it answered.

The servers are the sides of a replay, a bench or a preflight check (baseline,
candidate, replica) and the LLM judge.

Each call streams when the request says so and records the text, finish reason,
usage, the times to the first and the last token and to the end, and the tokens with
their top-1/top-2 logprob margins when logprobs were asked for. The times run from when
the request was written to when each event's last byte arrived on its connection
(``shadowdiff.answers.arrivals``), never from when the client got round to reading it: a busy
client must not make one side look faster. ``timeout`` bounds each attempt
whole, however slowly the answer drips.

Failures become answers with an ``error``, never exceptions: HTTP errors keep their
status and the start of their body; 429, 502, 503, 504, timeouts and connection failures
(including a stream cut short) are retried with bounded exponential backoff, honouring
``Retry-After``.

The HTTP client is aiohttp's session (``arrivals.answers_session``), read directly: httpx
layered over it (as the answers' client once was) cost a tenth of a replay's CPU, in
building each request and in passing each piece of a body through.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import aiohttp
import orjson
from yarl import URL

from shadowdiff.answers import arrivals
from shadowdiff.answers.compare import wants_stream
from shadowdiff.answers.parse import EventStream, Reading, finished, read_body, read_event, timed, unfinished
from shadowdiff.answers.records import Answer
from shadowdiff.answers.redact import failure_text
from shadowdiff.answers.tokencount import TokenCounter
from shadowdiff.vocabulary import Side

RETRY_STATUSES = frozenset({429, 502, 503, 504})
_ERROR_BODY_LIMIT = 2000   # characters of an HTTP error's body kept in the answer's error
_ERROR_BODY_BYTES = 4 * _ERROR_BODY_LIMIT   # what is read of it: those characters, whatever their UTF-8 length


@dataclass(frozen=True)
class Upstream:
    """One side: where it is, and the model name it serves."""

    side: Side
    url: str
    model: str | None = None
    api_key: str | None = None
    authorization: str | None = None   # a whole Authorization value (any scheme), when there is no api_key

    @property
    def root(self) -> str:
        """The server's base URL: http://host:8000 whether given so or as http://host:8000/v1
        (what OpenAI clients take), without a ``user:password@`` (sent as ``headers``).
        Routes beside the OpenAI ones (a tokenizer) hang off it."""
        base = _bare(self.url)[0].rstrip("/")
        return base[:-3] if base.endswith("/v1") else base

    def endpoint(self, path: str) -> str:
        return (self.root if path.startswith("/v1/") else _bare(self.url)[0].rstrip("/")) + path

    @property
    def headers(self) -> dict[str, str]:
        """What every request to this side carries: one Authorization, chosen as ``serve``
        chooses an upstream's: its bearer token, else the user and password in its URL
        (Basic), else the Authorization it was given, if it has one."""
        if self.api_key:
            return {"Authorization": f"Bearer {self.api_key}"}
        basic = _bare(self.url)[1]
        if basic is not None:
            return {"Authorization": basic}
        return {"Authorization": self.authorization} if self.authorization else {}


def _bare(url: str) -> tuple[str, str | None]:
    """``url`` without its userinfo, and that userinfo as a Basic Authorization (None if
    it had none; a URL without one is returned as given)."""
    if "@" not in url:
        return url, None
    parsed = URL(url)
    if parsed.raw_user is None and parsed.raw_password is None:
        return url, None
    userinfo = f"{parsed.user or ''}:{parsed.password or ''}".encode()
    return str(parsed.with_user(None)), "Basic " + base64.b64encode(userinfo).decode("ascii")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        wait = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1)) * random.uniform(0.8, 1.2)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_backoff * 4))
        return wait


class _Failed(Exception):
    """A failed attempt, carrying the answer to record if it is the last one."""

    retryable = True

    def __init__(self, answer: Answer, retry_after: float | None = None) -> None:
        super().__init__(answer.error)
        self.answer = answer
        self.retry_after = retry_after


class _Retryable(_Failed):
    """Worth another attempt: 429/502/503/504, a dropped connection, a cut stream."""


class _Final(_Failed):
    """An HTTP error that is not worth retrying."""

    retryable = False


class _Target(NamedTuple):
    """Where a request to an upstream's path goes, and the headers it carries."""

    url: URL
    headers: dict[str, str]
    streamed: dict[str, str]   # the headers of a request whose answer streams


class Caller:
    """Sends requests to upstreams through one shared aiohttp session (``arrivals.answers_session``)."""

    def __init__(self, session: aiohttp.ClientSession, retry: RetryPolicy = RetryPolicy(),
                 timeout: float | None = None) -> None:
        self.session = session
        self.retry = retry
        self.timeout = timeout   # seconds for one attempt, whole (None: the session's own timeouts only)
        # answers the server gave no count for are counted by its tokenizer (shadowdiff.answers.tokencount)
        self.counter = TokenCounter(session)
        # each upstream's URL and headers made once, not per request
        self._targets: dict[tuple[Upstream, str], _Target] = {}

    def _target(self, upstream: Upstream, path: str) -> _Target:
        target = self._targets.get((upstream, path))
        if target is None:
            headers = {**upstream.headers, "Content-Type": "application/json"}
            target = self._targets[upstream, path] = _Target(
                URL(upstream.endpoint(path)), headers,
                {**headers, "Accept": "text/event-stream", "Cache-Control": "no-store"})
        return target

    async def call(self, upstream: Upstream, path: str, body: dict[str, Any]) -> Answer:
        """The upstream's answer to ``body`` at ``path`` (never raises for upstream trouble)."""
        if upstream.model is not None:
            body = {**body, "model": upstream.model}
        attempt = 1
        while True:
            try:
                answer = await self._attempt(upstream, path, body)
                if answer.completion_tokens is None:
                    answer = await self._counted(upstream, body, answer)
                return replace(answer, attempts=attempt)
            except _Failed as failed:
                if not failed.retryable or attempt >= self.retry.attempts:
                    return replace(failed.answer, attempts=attempt)
                await asyncio.sleep(self.retry.delay(attempt, failed.retry_after))
                attempt += 1

    async def _attempt(self, upstream: Upstream, path: str, body: dict[str, Any]) -> Answer:
        try:
            async with asyncio.timeout(self.timeout):
                return await self._once(upstream, path, body)
        except TimeoutError as exc:
            # the session's own timeouts bound each read, so a slow drip never ends
            raise _Retryable(Answer(upstream.side, upstream.model or body.get("model"),
                                    error=f"timed out: no whole answer within {self.timeout:g} s")) from exc

    async def _counted(self, upstream: Upstream, body: dict[str, Any], answer: Answer) -> Answer:
        try:   # (each tokenizer call is bounded; this bounds an answer of many choices whole)
            async with asyncio.timeout(self.timeout):
                return await self.counter.count(upstream.root, body.get("model"), answer, upstream.headers)
        except TimeoutError:
            return answer

    async def _once(self, upstream: Upstream, path: str, body: dict[str, Any]) -> Answer:
        called = time.perf_counter()   # the start, unless the transport tells when the request went out
        failed = Answer(upstream.side, upstream.model or body.get("model"))
        target = self._target(upstream, path)
        stream = wants_stream(body)
        # compact UTF-8 JSON, as the answers' client has always sent (JSON has no NaN: refused)
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        try:
            with arrivals.watching() as clock:
                async with self.session.post(target.url, data=data, allow_redirects=False,
                                             headers=target.streamed if stream else target.headers) as response:
                    if response.status != 200:
                        raise self._http_error(failed, response, target.url, await _start_of(response))
                    failed = replace(failed, status=200)
                    if stream:
                        return await self._streamed(response, failed, clock, called)
                    content = await response.read()
                    ended = clock.at(response.content.total_bytes)
                    return _answer(failed, _read_json(content), clock.sent or called, ended)
        except aiohttp.ClientError as exc:
            raise _Retryable(replace(failed, error=_transport_error(exc, target.url))) from exc

    def _http_error(self, failed: Answer, response: aiohttp.ClientResponse, url: URL, text: str) -> _Failed:
        where = ""
        if response.status == 404 and "does not exist" not in text:
            # most often a base URL that already ends in the path (vLLM's 404 for a wrong
            # model says "The model `x` does not exist." and needs no hint)
            # the URL without credentials or a query string: the error is stored and reported
            called = url.with_user(None).with_query(None)
            where = (f" from {called} (give each side's base URL, e.g. http://host:8000: "
                     "shadowdiff adds /v1/chat/completions or /v1/completions)")
        answer = replace(failed, status=response.status,
                         error=f"HTTP {response.status}{where}: {text[:_ERROR_BODY_LIMIT]}")
        if response.status in RETRY_STATUSES:
            return _Retryable(answer, _retry_after(response))
        return _Final(answer)

    async def _streamed(self, response: aiohttp.ClientResponse, failed: Answer, clock: arrivals.Arrivals,
                        called: float) -> Answer:
        kind = response.headers.get("content-type", "")
        if "text/event-stream" not in kind:
            return replace(failed, error=f"not an event stream: the answer's content type is {kind!r}")
        # The body as the session hands it on (decompressed, if it came compressed), whose
        # every piece the clock noted when it arrived: an event's end is a place in it.
        reading, events, ended = Reading(), EventStream(), None
        async for chunk in response.content.iter_any():
            for data, end in events.feed(chunk):
                ended = clock.at(end)
                if data == "[DONE]":
                    reading.done = True
                    break
                if not read_event(reading, data, ended):
                    return replace(failed, error=reading.error)
            if reading.done:
                break
        if not reading.done:
            raise _Retryable(replace(failed, error="the stream ended without [DONE]"))
        if (cut := unfinished(reading)) is not None:
            raise _Retryable(replace(failed, error=cut))
        return _answer(failed, reading, clock.sent or called, ended or time.perf_counter())


async def _start_of(response: aiohttp.ClientResponse) -> str:
    """The start of an error's body, as text: enough for the error kept, never all of a large one."""
    kept = b""
    while len(kept) < _ERROR_BODY_BYTES and (piece := await response.content.read(_ERROR_BODY_BYTES - len(kept))):
        kept += piece
    return kept.decode("utf-8", "replace")


def _transport_error(exc: aiohttp.ClientError, url: URL) -> str:
    """What failed, in words (never the URL's credentials or query: ``failure_text``)."""
    causes: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(causes) < 8:
        causes.append(cause)
        cause = cause.__cause__
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return f"connection refused by {url.host}:{url.port or 80} (is the server up?)"
    if isinstance(exc, TimeoutError):   # aiohttp's timeouts: connecting, or a read waiting
        return f"timed out ({type(exc).__name__})"
    return f"connection failed: {failure_text(exc)}"


def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _read_json(content: bytes) -> Reading:
    try:
        return read_body(orjson.loads(content))
    except orjson.JSONDecodeError:
        return Reading(error=f"malformed response body: {content[:200].decode('utf-8', 'replace')!r}")


def _answer(failed: Answer, reading: Reading, started: float, ended: float) -> Answer:
    """The answer a finished reading makes (an error answer if the reading failed)."""
    if reading.error is not None:
        return replace(failed, error=reading.error)
    return timed(finished(failed, reading), started, reading.first, reading.first_answer, ended, reading.last)

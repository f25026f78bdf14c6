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
status and body; 429, 502, 503, 504, timeouts and connection failures (including a
stream cut short) are retried with bounded exponential backoff, honouring
``Retry-After``.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, replace
from typing import Any

import httpx
import orjson

from shadowdiff.answers import arrivals
from shadowdiff.answers.compare import wants_stream
from shadowdiff.answers.parse import EventStream, Reading, finished, read_body, read_event, timed, unfinished
from shadowdiff.answers.records import Answer
from shadowdiff.answers.tokencount import TokenCounter
from shadowdiff.vocabulary import Side

RETRY_STATUSES = frozenset({429, 502, 503, 504})
_ERROR_BODY_LIMIT = 2000


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
        (what OpenAI clients take). Routes beside the OpenAI ones (a tokenizer) hang off it."""
        base = self.url.rstrip("/")
        return base[:-3] if base.endswith("/v1") else base

    def endpoint(self, path: str) -> str:
        return (self.root if path.startswith("/v1/") else self.url.rstrip("/")) + path

    @property
    def headers(self) -> dict[str, str]:
        """What every request to this side carries: its bearer token, or else the
        Authorization it was given, if it has one."""
        if self.api_key:
            return {"Authorization": f"Bearer {self.api_key}"}
        return {"Authorization": self.authorization} if self.authorization else {}


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


class Caller:
    """Sends requests to upstreams through one shared HTTP client."""

    def __init__(self, client: httpx.AsyncClient, retry: RetryPolicy = RetryPolicy(),
                 timeout: float | None = None) -> None:
        self.client = client
        self.retry = retry
        self.timeout = timeout   # seconds for one attempt, whole (None: the client's own timeouts only)
        # answers the server gave no count for are counted by its tokenizer (shadowdiff.answers.tokencount)
        self.counter = TokenCounter(client)
        # each endpoint's URL parsed once, not per request (httpx parses a string each time: 40 µs)
        self._urls: dict[str, httpx.URL] = {}

    def _parsed(self, url: str) -> httpx.URL:
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = self._urls[url] = httpx.URL(url)
        return parsed

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
            # httpx's own timeouts bound each read, so a slow drip never ends
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
        url = upstream.endpoint(path)
        try:
            with arrivals.watching() as clock:
                if wants_stream(body):
                    return await self._streamed(upstream, url, body, failed, clock, called)
                response = await self.client.post(self._parsed(url), json=body, headers=upstream.headers)
                if response.status_code != 200:
                    raise self._http_error(failed, response, response.text)
                ended = clock.at(response.num_bytes_downloaded)
                return _answer(replace(failed, status=200), _read_json(response), clock.sent or called, ended)
        except httpx.TransportError as exc:
            raise _Retryable(replace(failed, error=_transport_error(exc, url))) from exc

    def _http_error(self, failed: Answer, response: httpx.Response, text: str) -> _Failed:
        where = ""
        if response.status_code == 404 and "does not exist" not in text:
            # most often a base URL that already ends in the path (vLLM's 404 for a wrong
            # model says "The model `x` does not exist." and needs no hint)
            # the URL without credentials or a query string: the error is stored and reported
            called = response.request.url.copy_with(userinfo=b"", query=None)
            where = (f" from {called} (give each side's base URL, e.g. http://host:8000: "
                     "shadowdiff adds /v1/chat/completions or /v1/completions)")
        answer = replace(failed, status=response.status_code,
                         error=f"HTTP {response.status_code}{where}: {text[:_ERROR_BODY_LIMIT]}")
        if response.status_code in RETRY_STATUSES:
            return _Retryable(answer, _retry_after(response))
        return _Final(answer)

    async def _streamed(self, upstream: Upstream, url: str, body: dict[str, Any], failed: Answer,
                        clock: arrivals.Arrivals, called: float) -> Answer:
        reading = Reading()
        headers = {**upstream.headers, "Accept": "text/event-stream", "Cache-Control": "no-store"}
        async with self.client.stream("POST", self._parsed(url), json=body, headers=headers) as response:
            if response.status_code != 200:
                raise self._http_error(failed, response, (await response.aread()).decode("utf-8", "replace"))
            failed = replace(failed, status=200)
            kind = response.headers.get("content-type", "")
            if "text/event-stream" not in kind:
                return replace(failed, error=f"not an event stream: the answer's content type is {kind!r}")
            # The body as it came on the wire, so that an event's end is a place in it
            # whose arrival the clock knows (a compressed one is timed as it is read).
            raw = "content-encoding" not in response.headers
            chunks = response.aiter_raw() if raw else response.aiter_bytes()
            events, ended = EventStream(), None
            async for chunk in chunks:
                for data, end in events.feed(chunk):
                    ended = clock.at(end) if raw else time.perf_counter()
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


def _transport_error(exc: httpx.TransportError, url: str) -> str:
    """What failed, in words. The causes decide: httpx-aiohttp reports every failure to
    connect, a refused connection included, as a ConnectTimeout."""
    causes: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(causes) < 8:
        causes.append(cause)
        cause = cause.__cause__
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        where = httpx.URL(url)
        return f"connection refused by {where.host}:{where.port or 80} (is the server up?)"
    # aiohttp's timeouts are TimeoutErrors; its other connection failures are OSErrors
    failed = any(isinstance(c, OSError) and not isinstance(c, TimeoutError) for c in causes)
    if isinstance(exc, httpx.TimeoutException) and not failed:
        return f"timed out ({type(exc).__name__})"
    cause = exc.__cause__ or exc
    return f"connection failed: {type(cause).__name__}: {cause}"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _read_json(response: httpx.Response) -> Reading:
    try:
        return read_body(orjson.loads(response.content))
    except orjson.JSONDecodeError:
        return Reading(error=f"malformed response body: {response.text[:200]!r}")


def _answer(failed: Answer, reading: Reading, started: float, ended: float) -> Answer:
    """The answer a finished reading makes (an error answer if the reading failed)."""
    if reading.error is not None:
        return replace(failed, error=reading.error)
    return timed(finished(failed, reading), started, reading.first, reading.first_answer, ended, reading.last)

"""Calling one side (baseline, candidate, replica) and recording what it answered.

Each call streams when the request says so (the SSE frames are decoded by httpx-sse)
and records the text, finish reason, usage, time to first token, total time, and the
tokens with their top-1/top-2 logprob margins when logprobs were asked for. Failures
become answers with an ``error``, never exceptions: HTTP errors keep their status and
body; 429, 502, 503, 504 and connection failures (including a stream cut short) are
retried with bounded exponential backoff, honouring ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, replace
from typing import Any

import httpx
import orjson
from httpx_sse import SSEError, aconnect_sse

from proxy.records import Answer, Side

RETRY_STATUSES = frozenset({429, 502, 503, 504})
_ERROR_BODY_LIMIT = 2000


@dataclass(frozen=True)
class Upstream:
    """One side: where it is, and the model name it serves."""

    side: Side
    url: str
    model: str | None = None
    api_key: str | None = None

    def endpoint(self, path: str) -> str:
        base = self.url.rstrip("/")
        # Accept both http://host:8000 and http://host:8000/v1 (what OpenAI clients take).
        if base.endswith("/v1") and path.startswith("/v1/"):
            base = base[:-3]
        return base + path


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


@dataclass
class _Reading:
    """What has been read of one answer so far."""

    text: list[str]
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    first: float | None = None
    tokens: list[str] | None = None
    margins: list[float | None] | None = None


class Caller:
    """Sends requests to upstreams through one shared HTTP client."""

    def __init__(self, client: httpx.AsyncClient, retry: RetryPolicy = RetryPolicy()) -> None:
        self.client = client
        self.retry = retry

    async def call(self, upstream: Upstream, path: str, body: dict[str, Any]) -> Answer:
        """The upstream's answer to ``body`` at ``path`` (never raises for upstream trouble)."""
        if upstream.model is not None:
            body = {**body, "model": upstream.model}
        attempt = 1
        while True:
            try:
                answer = await self._once(upstream, path, body)
                return replace(answer, attempts=attempt)
            except _Failed as failed:
                if not failed.retryable or attempt >= self.retry.attempts:
                    return replace(failed.answer, attempts=attempt)
                await asyncio.sleep(self.retry.delay(attempt, failed.retry_after))
                attempt += 1

    def _headers(self, upstream: Upstream) -> dict[str, str]:
        return {"Authorization": f"Bearer {upstream.api_key}"} if upstream.api_key else {}

    async def _once(self, upstream: Upstream, path: str, body: dict[str, Any]) -> Answer:
        started = time.perf_counter()
        failed = Answer(upstream.side, upstream.model or body.get("model"))
        url = upstream.endpoint(path)
        try:
            if body.get("stream"):
                return await self._streamed(upstream, url, body, started, failed)
            response = await self.client.post(url, json=body, headers=self._headers(upstream))
            if response.status_code != 200:
                raise self._http_error(failed, response, response.text)
            return _from_body(failed, response, started)
        except httpx.TimeoutException as exc:
            raise _Retryable(replace(failed, error=f"timed out ({type(exc).__name__})")) from exc
        except httpx.TransportError as exc:
            cause = exc.__cause__ or exc
            raise _Retryable(replace(failed, error=f"connection failed: {type(cause).__name__}: {cause}")) from exc

    def _http_error(self, failed: Answer, response: httpx.Response, text: str) -> _Failed:
        answer = replace(failed, status=response.status_code,
                         error=f"HTTP {response.status_code}: {text[:_ERROR_BODY_LIMIT]}")
        if response.status_code in RETRY_STATUSES:
            return _Retryable(answer, _retry_after(response))
        return _Final(answer)

    async def _streamed(self, upstream: Upstream, url: str, body: dict[str, Any], started: float,
                        failed: Answer) -> Answer:
        reading = _Reading(text=[])
        async with aconnect_sse(self.client, "POST", url, json=body, headers=self._headers(upstream)) as source:
            response = source.response
            if response.status_code != 200:
                raise self._http_error(failed, response, (await response.aread()).decode("utf-8", "replace"))
            failed = replace(failed, status=200)
            done = False
            try:
                async for event in source.aiter_sse():
                    if event.data == "[DONE]":
                        done = True
                        break
                    try:
                        chunk = orjson.loads(event.data)
                    except orjson.JSONDecodeError:
                        return replace(failed, error=f"malformed event after {len(reading.text)} deltas: "
                                                     f"{event.data[:200]!r}")
                    if isinstance(chunk, dict) and "error" in chunk:
                        return replace(failed, error=f"error event after the 200: {json.dumps(chunk['error'])}")
                    _read_chunk(reading, chunk, started)
            except SSEError as exc:
                return replace(failed, error=f"not an event stream: {exc}")
            if not done:
                raise _Retryable(replace(failed, error="the stream ended without [DONE]"))
        ended = time.perf_counter()
        return replace(failed, text="".join(reading.text), finish_reason=reading.finish_reason,
                       prompt_tokens=reading.prompt_tokens, completion_tokens=reading.completion_tokens,
                       ttft=(reading.first or ended) - started, duration=ended - started,
                       tokens=reading.tokens, margins=reading.margins)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _read_chunk(reading: _Reading, chunk: dict[str, Any], started: float) -> None:
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        reading.prompt_tokens = usage.get("prompt_tokens", reading.prompt_tokens)
        reading.completion_tokens = usage.get("completion_tokens", reading.completion_tokens)
    for choice in chunk.get("choices") or ():
        if choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta")
        piece = delta.get("content") if isinstance(delta, dict) else choice.get("text")
        if piece:
            if reading.first is None:
                reading.first = time.perf_counter()
            reading.text.append(piece)
        if choice.get("finish_reason") is not None:
            reading.finish_reason = choice["finish_reason"]
        _read_logprobs(reading, choice.get("logprobs"))


def _read_logprobs(reading: _Reading, logprobs: Any) -> None:
    if not isinstance(logprobs, dict):
        return
    if reading.tokens is None:
        reading.tokens, reading.margins = [], []
    assert reading.margins is not None
    content = logprobs.get("content")
    if isinstance(content, list):  # chat
        for entry in content:
            reading.tokens.append(entry.get("token", ""))
            reading.margins.append(_margin([t.get("logprob", 0.0) for t in entry.get("top_logprobs") or ()]))
    elif isinstance(logprobs.get("tokens"), list):  # completions
        for token, top in zip(logprobs["tokens"], logprobs.get("top_logprobs") or [], strict=False):
            reading.tokens.append(token)
            reading.margins.append(_margin(list((top or {}).values())))


def _margin(values: list[float]) -> float | None:
    """Top-1 minus top-2 logprob; None when fewer than two were listed."""
    if len(values) < 2:
        return None
    first, second = (values[0], values[1]) if values[0] >= values[1] else (values[1], values[0])
    for value in values[2:]:
        if value > first:
            first, second = value, first
        elif value > second:
            second = value
    return round(first - second, 4)


def _from_body(failed: Answer, response: httpx.Response, started: float) -> Answer:
    ended = time.perf_counter()
    try:
        body = response.json()
        choice = body["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return replace(failed, status=response.status_code,
                       error=f"malformed response body: {response.text[:200]!r}")
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else choice.get("text")
    reading = _Reading(text=[])
    _read_logprobs(reading, choice.get("logprobs"))
    usage = body.get("usage") or {}
    return replace(failed, status=response.status_code, text=text or "", finish_reason=choice.get("finish_reason"),
                   prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                   ttft=ended - started, duration=ended - started, tokens=reading.tokens, margins=reading.margins)

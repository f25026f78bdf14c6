"""Reading what an OpenAI-compatible server answered: text, finish reason, usage, logprobs.

Used as frames arrive by the client (``shadowdiff.client``: replay, bench, the judge)
and, once an answer is whole, by the proxy for its tap and its shadow
(``read_answer``, then ``answer_from``). Only choice 0 is read:
that is the answer a pair compares. Unknown fields are ignored; both chat
(``delta.content``, ``message.content``) and completions (``text``) shapes are read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from shadowdiff.records import Answer


@dataclass
class Reading:
    """What has been read of one answer so far."""

    text: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    first: float | None = None                   # perf_counter() of the first content
    tokens: list[str] | None = None
    margins: list[float | None] | None = None
    error: str | None = None                     # an error event after the 200, a malformed frame
    done: bool = False                           # [DONE] seen
    tool_calls: list[dict[str, Any]] | None = None  # chat tool calls, arguments joined from their deltas

    @property
    def content(self) -> str:
        return "".join(self.text)


def read_chunk(reading: Reading, chunk: dict[str, Any]) -> None:
    """Fold one streamed chunk into ``reading``."""
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        reading.prompt_tokens = usage.get("prompt_tokens", reading.prompt_tokens)
        reading.completion_tokens = usage.get("completion_tokens", reading.completion_tokens)
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta")
        piece = delta.get("content") if isinstance(delta, dict) else choice.get("text")
        if piece is not None and not isinstance(piece, str):
            raise ValueError(f"generated text is a {type(piece).__name__}, not a string")
        if piece:
            if reading.first is None:
                reading.first = time.perf_counter()
            reading.text.append(piece)
        if choice.get("finish_reason") is not None:
            reading.finish_reason = choice["finish_reason"]
        if isinstance(delta, dict) and delta.get("tool_calls"):
            _read_tool_call_deltas(reading, delta["tool_calls"])
        read_logprobs(reading, choice.get("logprobs"))


def _read_tool_call_deltas(reading: Reading, deltas: list[Any]) -> None:
    """Streamed tool calls come in pieces: the name once, the arguments in parts."""
    calls = reading.tool_calls if reading.tool_calls is not None else []
    reading.tool_calls = calls
    for piece in deltas:
        index = int(piece.get("index", len(calls)))
        while len(calls) <= index:
            calls.append({"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
        call = calls[index]
        call["id"] = piece.get("id") or call["id"]
        function = piece.get("function") or {}
        if function.get("name"):
            call["function"]["name"] = function["name"]
        if function.get("arguments"):
            call["function"]["arguments"] += function["arguments"]


def read_logprobs(reading: Reading, logprobs: Any) -> None:
    """Tokens and top-1/top-2 margins from chat or completions logprobs."""
    if not isinstance(logprobs, dict):
        return
    if reading.tokens is None:
        reading.tokens, reading.margins = [], []
    assert reading.margins is not None
    content = logprobs.get("content")
    if isinstance(content, list):  # chat
        for entry in content:
            reading.tokens.append(entry.get("token", ""))
            reading.margins.append(margin([t.get("logprob", 0.0) for t in entry.get("top_logprobs") or ()]))
    elif isinstance(logprobs.get("tokens"), list):  # completions
        for token, top in zip(logprobs["tokens"], logprobs.get("top_logprobs") or [], strict=False):
            reading.tokens.append(token)
            reading.margins.append(margin(list((top or {}).values())))


def margin(values: list[float]) -> float | None:
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


def read_body(body: Any) -> Reading:
    """A non-streamed response body; ``error`` is set when it is not one."""
    try:
        return _read_body(body)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return Reading(error=f"malformed response body: {exc}")


def _read_body(body: Any) -> Reading:
    reading = Reading()
    try:
        choice = body["choices"][0]
    except (KeyError, IndexError, TypeError):
        reading.error = "malformed response body: no choices"
        return reading
    if not isinstance(choice, dict):
        reading.error = "malformed response body: a choice is not an object"
        return reading
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else choice.get("text")
    if text is not None and not isinstance(text, str):
        reading.error = f"malformed response body: the text is a {type(text).__name__}, not a string"
        return reading
    reading.text.append(text or "")
    reading.finish_reason = choice.get("finish_reason")
    if isinstance(message, dict) and message.get("tool_calls"):
        reading.tool_calls = list(message["tool_calls"])
    read_logprobs(reading, choice.get("logprobs"))
    usage = body.get("usage") or {}
    reading.prompt_tokens, reading.completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
    reading.done = True
    return reading


def sse_data(raw: bytes) -> Iterator[str]:
    """The ``data`` of each event in a complete SSE body.

    Streams read as they arrive go through httpx-sse (replay's client); a body that is
    already whole needs only the framing rules of the SSE specification - events end
    at a blank line, ``data:`` lines are joined with newlines, comments and other
    fields are ignored - and doing that with ``split`` is ten times faster than
    feeding httpx-sse line by line (60 vs 630 µs for 64 frames), which matters on the
    proxy, where every mirrored answer is read this way.
    """
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    for block in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            yield "\n".join(data)


def read_stream(raw: bytes) -> Reading:
    """A streamed response body, read after the fact (the proxy's tap)."""
    reading = Reading()
    for data in sse_data(raw):
        if data == "[DONE]":
            reading.done = True
            break
        if not read_event(reading, data):
            break
    return reading


def read_event(reading: Reading, data: str) -> bool:
    """Fold one event's data into ``reading``; False once the answer is unusable."""
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        reading.error = f"malformed event after {len(reading.text)} deltas: {data[:200]!r}"
        return False
    if isinstance(chunk, dict) and "error" in chunk:
        reading.error = f"error event after the 200: {orjson.dumps(chunk['error']).decode()[:500]}"
        return False
    if isinstance(chunk, dict):
        try:
            read_chunk(reading, chunk)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            reading.error = f"malformed event: {exc}"
            return False
    return True


def read_answer(raw: bytes, stream: bool) -> Reading:
    """Read a complete answer: an SSE stream (which must end in [DONE]) or a JSON body.

    Never raises: an answer of an unexpected shape is an answer with an ``error``.
    """
    try:
        return _read_answer(raw, stream)
    except Exception as exc:
        return Reading(error=f"malformed answer: {type(exc).__name__}: {exc}"[:500])


def _read_answer(raw: bytes, stream: bool) -> Reading:
    if stream:
        reading = read_stream(raw)
        if reading.error is None and not reading.done:
            reading.error = "the stream ended without [DONE]"
        return reading
    try:
        return read_body(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return Reading(error=f"malformed response body: {raw[:200]!r}")


def answer_from(base: Answer, reading: Reading, status: int, started: float, first: float | None,
                ended: float) -> Answer:
    """The ``Answer`` a finished reading of a tapped or shadowed response makes."""
    if reading.error is not None:
        return replace(base, status=status, error=reading.error, duration=ended - started)
    return replace(base, status=status, text=reading.content, finish_reason=reading.finish_reason,
                    prompt_tokens=reading.prompt_tokens, completion_tokens=reading.completion_tokens,
                    ttft=(first or ended) - started, duration=ended - started, tokens=reading.tokens,
                    margins=reading.margins, tool_calls=reading.tool_calls)

"""Reading what an OpenAI-compatible server answered: every choice, every part, usage, logprobs.

Used as frames arrive by the client (``shadowdiff.answers.client``: replay, bench, the judge)
and, once an answer is whole, by the proxy for its tap and its shadow
(``read_answer``, then ``answer_from``). Each choice is read whole: its text (chat
``content``, completions ``text``), its reasoning (``reasoning``, or ``reasoning_content``
from servers before vLLM 0.3x), its refusal, its tool calls (streamed ones joined from
their fragments by ``index``) and its finish reason; a stream's choices may come
interleaved. Logprobs are read for the first choice. Unknown fields are ignored.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from shadowdiff.answers.records import Answer, Choice

# What an upstream may send is bounded by what it costs to read: a choice or tool-call
# index is a key, never the length of something allocated.
MAX_CHOICES = 65536     # vLLM sets no limit on n or a prompt list; past this, an answer is malformed
MAX_TOOL_CALLS = 1024   # per choice
_FINISH_REASON_CHARS = 32   # the store's column: finish reasons are short names (stop, length, tool_calls...)


@dataclass
class ChoiceReading:
    """What has been read of one choice so far."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tool_calls: dict[int, dict[str, Any]] | None = None   # by index, as streamed fragments name them
    finish_reason: str | None = None
    thought: bool = False   # a reasoning field came (even empty): the server runs a reasoning parser

    def choice(self, index: int) -> Choice:
        calls = None if self.tool_calls is None else [self.tool_calls[i] for i in sorted(self.tool_calls)]
        return Choice(index, "".join(self.text), "".join(self.reasoning) if self.thought else None,
                      "".join(self.refusal) or None, calls, self.finish_reason)


@dataclass
class Reading:
    """What has been read of one answer so far."""

    choices: dict[int, ChoiceReading] = field(default_factory=dict)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    first: float | None = None                   # perf_counter() of the first generated token, of any kind
    first_answer: float | None = None            # ... of the first answer token: text, tool call or refusal
    last: float | None = None                    # ... of the last generated token, of any kind
    tokens: list[str] | None = None
    margins: list[float | None] | None = None
    pieces: int = 0                              # streamed deltas that carried generated output, every choice
    arrivals: int = 0                            # calls of ``_arrived`` (how ``pieces`` tells a delta with output)
    error: str | None = None                     # an error event after the 200, a malformed frame
    done: bool = False                           # [DONE] seen

    def of(self, index: int) -> ChoiceReading:
        if index not in self.choices:
            if len(self.choices) >= MAX_CHOICES:
                raise ValueError(f"more than {MAX_CHOICES} choices")
            self.choices[index] = ChoiceReading()
        return self.choices[index]

    @property
    def content(self) -> str:
        """The first choice's text."""
        first = self.choices.get(0)
        return "".join(first.text) if first is not None else ""

    def read(self) -> list[Choice]:
        """Every choice the server sent, by index; the first is there even if it sent none."""
        first = self.choices.get(0) or ChoiceReading()
        return [first.choice(0), *(self.choices[i].choice(i) for i in sorted(self.choices) if i != 0)]


def _string(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what} is not a string but {type(value).__name__}")
    return value


def _index(value: Any, what: str, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
        raise ValueError(f"{what} is {value!r}, not a number from 0 to {limit - 1}")
    return value


def _count(value: Any) -> int | None:
    """A token count, or None for anything that is not one (usage is informative: a
    server's odd value must not make the answer unusable, nor reach the store)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _finish_reason(value: Any) -> str | None:
    return value[:_FINISH_REASON_CHARS] if isinstance(value, str) else None


def _read_usage(reading: Reading, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    reading.prompt_tokens = _count(usage.get("prompt_tokens")) if "prompt_tokens" in usage else reading.prompt_tokens
    if "completion_tokens" in usage:
        reading.completion_tokens = _count(usage["completion_tokens"])
    details = usage.get("completion_tokens_details")
    if isinstance(details, dict) and _count(details.get("reasoning_tokens")) is not None:
        reading.reasoning_tokens = _count(details["reasoning_tokens"])


def _fold(reading: Reading, part: ChoiceReading, fields: dict[str, Any], text_key: str, at: float | None) -> None:
    """The generated text, reasoning and refusal of a delta or a message, into ``part``.

    Reasoning is vLLM's ``reasoning`` (0.34), else ``reasoning_content`` (older vLLM and
    other servers), whichever has text; a field that is present marks the server as
    reasoning, even empty.
    """
    text = _string(fields.get(text_key), "the generated text")
    reasoning = _string(fields.get("reasoning"), "the reasoning")
    if not reasoning:
        older = _string(fields.get("reasoning_content"), "the reasoning")
        reasoning = older if older is not None else reasoning
    refusal = _string(fields.get("refusal"), "the refusal")
    if text or reasoning or refusal:
        _arrived(reading, at, answer=bool(text or refusal))
    if text:
        part.text.append(text)
    if reasoning is not None:
        part.thought = True
        part.reasoning.append(reasoning)
    if refusal:
        part.refusal.append(refusal)


def _arrived(reading: Reading, at: float | None, *, answer: bool) -> None:
    """A generated token arrived at ``at`` (None: now; an answer token if ``answer``):
    one clock reading, so that an answer without thinking has the same two times."""
    now = time.perf_counter() if at is None else at
    reading.arrivals += 1
    reading.first = reading.first or now
    if answer:
        reading.first_answer = reading.first_answer or now
    reading.last = now


# A delta that holds only these is the common piece of an answer's text (vLLM's, every token).
_PLAIN_DELTA = frozenset({"content", "role"})


def read_chunk(reading: Reading, chunk: dict[str, Any], at: float | None = None) -> None:
    """Fold one streamed chunk into ``reading``; its tokens arrived at ``at`` (None: now).

    The common chunk, one choice's piece of text and nothing else, is read without the
    general path's checks and calls (which then find the same: a test holds them together);
    it took two thirds of the client's CPU per token."""
    choices = chunk.get("choices")
    if chunk.get("usage") is None and type(choices) is list and len(choices) == 1:
        choice = choices[0]
        delta = choice.get("delta") if type(choice) is dict else None
        if type(delta) is dict and delta.keys() <= _PLAIN_DELTA and choice.get("finish_reason") is None:
            content, index = delta.get("content"), choice.get("index", 0)
            if (content is None or type(content) is str) and type(index) is int and 0 <= index < MAX_CHOICES:
                part = reading.choices.get(index) or reading.of(index)
                if content:
                    # (``_arrived``'s work inline: a call per token was a tenth of this path)
                    now = time.perf_counter() if at is None else at
                    reading.arrivals += 1
                    reading.pieces += 1
                    if reading.first_answer is None:
                        reading.first = reading.first or now
                        reading.first_answer = now
                    reading.last = now
                    part.text.append(content)
                if index == 0 and (logprobs := choice.get("logprobs")) is not None:
                    read_logprobs(reading, logprobs)
                return
    read_whole_chunk(reading, chunk, at)


def read_whole_chunk(reading: Reading, chunk: dict[str, Any], at: float | None = None) -> None:
    """``read_chunk``'s general path: any chunk, every field checked."""
    _read_usage(reading, chunk.get("usage"))
    choices = chunk.get("choices")
    if choices is None:
        return
    if not isinstance(choices, list):
        raise ValueError(f"choices is not a list but {type(choices).__name__}")
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        index = _index(choice.get("index", 0), "a choice's index", MAX_CHOICES)
        part = reading.of(index)
        delta = choice.get("delta")
        before = reading.arrivals
        if isinstance(delta, dict):
            _fold(reading, part, delta, "content", at)
            if delta.get("tool_calls"):
                _arrived(reading, at, answer=True)
                _read_tool_call_deltas(part, delta["tool_calls"])
        else:
            _fold(reading, part, choice, "text", at)   # a completions chunk
        if reading.arrivals != before:   # this delta carried generated output
            reading.pieces += 1
        if choice.get("finish_reason") is not None:
            part.finish_reason = _finish_reason(choice["finish_reason"])
        if index == 0:
            read_logprobs(reading, choice.get("logprobs"))


def _read_tool_call_deltas(part: ChoiceReading, deltas: Any) -> None:
    """Streamed tool calls come in pieces, by ``index``: the id and name once, the arguments in parts."""
    if not isinstance(deltas, list):
        raise ValueError(f"tool_calls is not a list but {type(deltas).__name__}")
    calls = part.tool_calls if part.tool_calls is not None else {}
    part.tool_calls = calls
    for piece in deltas:
        if not isinstance(piece, dict):
            raise ValueError("a tool call is not an object")
        index = _index(piece.get("index", len(calls)), "a tool call's index", MAX_TOOL_CALLS)
        call = calls.setdefault(index, {"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
        call["id"] = _string(piece.get("id"), "a tool call's id") or call["id"]
        function = piece.get("function") or {}
        if not isinstance(function, dict):
            raise ValueError("a tool call's function is not an object")
        name = _string(function.get("name"), "a tool call's name")
        if name:   # joined like the arguments, as the openai client's stream reader does
            call["function"]["name"] = (call["function"]["name"] or "") + name
        if function.get("arguments"):
            call["function"]["arguments"] += _string(function["arguments"], "a tool call's arguments")


def _tool_call(call: Any) -> dict[str, Any]:
    """A whole tool call in the shape streamed ones are joined into: arguments a string."""
    if not isinstance(call, dict):
        raise ValueError("a tool call is not an object")
    function = call.get("function") or {}
    if not isinstance(function, dict):
        raise ValueError("a tool call's function is not an object")
    arguments = function.get("arguments")
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):   # not what vLLM sends, but a value all the same
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": _string(call.get("id"), "a tool call's id"), "type": call.get("type", "function"),
            "function": {"name": _string(function.get("name"), "a tool call's name"), "arguments": arguments}}


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
    # RecursionError: tool-call arguments nested deeper than the json module writes
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
        return Reading(error=f"malformed response body: {exc}")


def _read_body(body: Any) -> Reading:
    reading = Reading()
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices:
        reading.error = "malformed response body: no choices"
        return reading
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            reading.error = "malformed response body: a choice is not an object"
            return reading
        index = _index(choice.get("index", position), "a choice's index", MAX_CHOICES)
        if index in reading.choices:
            raise ValueError(f"two choices have the index {index}")
        part = reading.of(index)
        message = choice.get("message")
        if isinstance(message, dict):
            _fold(reading, part, message, "content", None)
            calls = message.get("tool_calls")
            if calls:
                if not isinstance(calls, list):
                    raise ValueError(f"tool_calls is not a list but {type(calls).__name__}")
                if len(calls) > MAX_TOOL_CALLS:   # as a stream with as many would be
                    raise ValueError(f"more than {MAX_TOOL_CALLS} tool calls in a choice")
                part.tool_calls = dict(enumerate(_tool_call(call) for call in calls))
        else:
            _fold(reading, part, choice, "text", None)
        part.finish_reason = _finish_reason(choice.get("finish_reason"))
        if index == 0:
            read_logprobs(reading, choice.get("logprobs"))
    _read_usage(reading, body.get("usage"))
    reading.done = True
    reading.first = reading.first_answer = reading.last = None   # a body's tokens all come with its end
    return reading


# The SSE specification's line ends (CRLF, LF, or CR alone) and an event's end: a line
# end followed by an empty line. A CR is one line end only when no LF follows it.
_LINE_END = rb"(?:\r\n|\r(?!\n)|\n)"
_EVENT_END = re.compile(_LINE_END + _LINE_END)
_LINE_ENDS = re.compile(_LINE_END)


def _event_data(block: bytes) -> str | None:
    """The ``data`` of one event's lines (None when it has none: a comment, a keep-alive)."""
    data = [line[5:].removeprefix(b" ") for line in _LINE_ENDS.split(block) if line.startswith(b"data:")]
    return b"\n".join(data).decode("utf-8", "replace") if data else None


class EventStream:
    """The ``data`` of each SSE event of a body fed in pieces, and where in the body the
    event ended, so that the client can tell when its last byte arrived.

    The framing rules of the SSE specification - events end at a blank line, ``data:``
    lines are joined with newlines, comments and other fields are ignored - applied to
    bytes (no line end is part of a UTF-8 sequence). httpx-sse, which the client used
    before, frames decoded lines and keeps no byte positions; it is also ten times
    slower fed line by line (630 µs for a 64-frame body, against 70 µs here), which
    matters on the proxy, where every mirrored answer is read whole this way.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._start = 0        # where in the body the buffer starts

    def feed(self, chunk: bytes) -> list[tuple[str, int]]:
        """The events this piece of the body completes: (data, offset of the event's end)."""
        buffer = self._buffer + chunk
        if self._start == 0 and buffer.startswith(b"\xef\xbb\xbf"):   # a byte-order mark
            buffer, self._start = buffer[3:], 3
        if b"\r" in buffer:
            return self._feed_any(buffer)
        # LF alone, as vLLM writes: split, four times faster than the expression below, and
        # _event_data's work inline (a call per event costs the proxy's tap 14 %)
        *blocks, self._buffer = buffer.split(b"\n\n")
        events = []
        for block in blocks:
            self._start += len(block) + 2
            if block.startswith(b"data: ") and b"\n" not in block:   # one data line, as vLLM writes
                events.append((block[6:].decode("utf-8", "replace"), self._start))
                continue
            data = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
            if data:
                events.append((b"\n".join(data).decode("utf-8", "replace"), self._start))
        return events

    def _feed_any(self, buffer: bytes) -> list[tuple[str, int]]:
        # a CR that ends the piece may be half of a CRLF: not a line end yet
        end = len(buffer) - 1 if buffer.endswith(b"\r") else len(buffer)
        events, taken = [], 0
        for match in _EVENT_END.finditer(buffer, 0, end):
            data = _event_data(buffer[taken:match.start()])
            if data is not None:
                events.append((data, self._start + match.end()))
            taken = match.end()
        self._buffer, self._start = buffer[taken:], self._start + taken
        return events

    def close(self) -> list[tuple[str, int]]:
        """The last event, if the body ended without the blank line after it."""
        data, end = _event_data(self._buffer), self._start + len(self._buffer)
        self._buffer, self._start = b"", end
        return [] if data is None else [(data, end)]


def sse_data(raw: bytes) -> Iterator[str]:
    """The ``data`` of each event in a complete SSE body."""
    events = EventStream()
    for data, _ in (*events.feed(raw), *events.close()):
        yield data


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


def read_event(reading: Reading, data: str, at: float | None = None) -> bool:
    """Fold one event's data into ``reading`` (its tokens arrived at ``at``, None: now);
    False once the answer is unusable."""
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        reading.error = f"malformed event after {len(reading.content)} characters: {data[:200]!r}"
        return False
    if isinstance(chunk, dict) and "error" in chunk:
        try:
            detail = orjson.dumps(chunk["error"]).decode()[:500]
        except orjson.JSONEncodeError:   # nested deeper than orjson writes (it reads deeper)
            detail = data[:500]
        reading.error = f"error event after the 200: {detail}"
        return False
    if isinstance(chunk, dict):
        try:
            read_chunk(reading, chunk, at)
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
        if reading.error is None:
            reading.error = "the stream ended without [DONE]" if not reading.done else unfinished(reading)
        return reading
    try:
        return read_body(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return Reading(error=f"malformed response body: {raw[:200]!r}")


CUT_SHORT = "the stream ended without a finish reason"   # how ``unfinished``'s errors begin


def unfinished(reading: Reading) -> str | None:
    """Why a stream that ended in [DONE] is still not a whole answer, or None.

    vLLM, OpenAI and the engines measured here end every choice of a stream with a
    chunk that carries its finish reason. A choice without one was cut short by the
    server: llama.cpp's server ends a running stream that way, with [DONE], when another
    request arrives (unless started with ``--interrupt_requests false``). Its text is a
    prefix, not an answer: compared, it would look like a truncation the model made.
    """
    if not reading.choices:
        return "the stream ended without a choice"
    cut = [index for index, part in sorted(reading.choices.items()) if part.finish_reason is None]
    if not cut:
        return None
    which = "choice" if len(cut) == 1 else "choices"
    return (f"{CUT_SHORT} for {which} {', '.join(map(str, cut[:8]))}: "
            "cut short by the server (llama.cpp's server does this when another request arrives, "
            "unless started with --interrupt_requests false)")


def answer_from(base: Answer, reading: Reading, status: int, started: float, first: float | None,
                ended: float, first_answer: float | None = None, last: float | None = None) -> Answer:
    """The ``Answer`` a finished reading of a tapped or shadowed response makes: ``first``,
    ``first_answer`` and ``last`` are when its first generated, first answer and last
    generated token passed."""
    if reading.error is not None:
        return replace(base, status=status, error=reading.error, duration=ended - started)
    # ``timed(finished(replace(base, status=status), reading), ...)`` in one copy, not three
    # (each copy of an Answer's 24 fields costs ~10 µs, on every pair the proxy reads)
    choices = reading.read()
    return replace(base, status=status, **_finished_fields(reading, choices),
                   **_timed_fields(choices, started, first, first_answer, ended, last))


def timed(answer: Answer, started: float, first: float | None, first_answer: float | None,
          ended: float, last: float | None = None) -> Answer:
    """``answer`` with its times: to the first token of any kind, to the first answer token
    (none when every choice was cut off in its thinking), to the last token (none for a
    body, whose tokens all arrive at its end), and to the end."""
    return replace(answer, **_timed_fields(answer.choices, started, first, first_answer, ended, last))


def _timed_fields(choices: list[Choice], started: float, first: float | None, first_answer: float | None,
                  ended: float, last: float | None) -> dict[str, Any]:
    """``timed``'s fields, for an answer of these choices."""
    answered = any(c.text or c.tool_calls or c.refusal is not None for c in choices)
    return {"ttft": (first or ended) - started, "duration": ended - started,
            "ttfat": (first_answer or ended) - started if answered else None,
            "ttlt": None if last is None or first is None else last - started}


def finished(base: Answer, reading: Reading) -> Answer:
    """``base`` with everything a finished reading holds: every choice, usage, logprobs."""
    return replace(base, **_finished_fields(reading, reading.read()))


def _finished_fields(reading: Reading, choices: list[Choice]) -> dict[str, Any]:
    """``finished``'s fields, from the reading and its choices (``reading.read()``)."""
    first, *others = choices
    count, source = output_tokens(reading, len(choices))
    return {"text": first.text, "reasoning": first.reasoning, "refusal": first.refusal,
            "tool_calls": first.tool_calls, "finish_reason": first.finish_reason, "others": tuple(others),
            "prompt_tokens": reading.prompt_tokens, "completion_tokens": count, "token_source": source,
            "reasoning_tokens": reading.reasoning_tokens, "tokens": reading.tokens, "margins": reading.margins}


def output_tokens(reading: Reading, choices: int) -> tuple[int | None, str | None]:
    """The answer's output token count and where it came from (``records.TOKEN_SOURCES``).

    vLLM says it in ``usage``; other engines do not always (llama.cpp's server sends no
    usage chunk in a stream). Then, for one choice, the logprobs' tokens when they were
    asked for (exact), else the streamed pieces that carried output (a lower bound: one
    piece may hold several tokens)."""
    if reading.completion_tokens is not None:
        return reading.completion_tokens, "usage"
    if reading.tokens and choices == 1:    # (the logprobs are read for the first choice only)
        return len(reading.tokens), "logprobs"
    if reading.pieces:
        return reading.pieces, "stream"
    return None, None

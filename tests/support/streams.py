"""Random streamed answers shaped like vLLM's, as hypothesis strategies, with what they say.

A stream is built from a plan of deltas (text, reasoning in either field, tool-call
fragments, for one or several choices, in any interleaving), then framed the ways a
server may frame it: LF, CRLF or CR line ends (mixed), ``data:`` with or without its
space, ``: keep-alive`` comments, compact or spaced JSON, escaped or raw UTF-8, a usage
chunk, and ``data: [DONE]``. ``Streamed.expected`` is what a reader must make of it,
computed from the plan, not by the parser under test.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

# words with multi-byte characters, so that a split falls inside a UTF-8 sequence
WORDS = st.sampled_from(["Hello", " world", "é", " 東京", "🙂", "\n", " \"quoted\"", "\\", " 391", "a"])
LINE_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])


@dataclass
class ChoicePlan:
    text: str = ""
    reasoning: str | None = None
    calls: dict[int, dict[str, str]] = field(default_factory=dict)   # id, name, arguments
    finish_reason: str | None = None


@dataclass
class Streamed:
    raw: bytes
    chunks: list[dict[str, Any]]            # the JSON chunks, in order
    expected: dict[int, ChoicePlan]         # by choice index
    usage: dict[str, int] | None
    spans: list[tuple[int, int]]            # where each chunk's JSON is in ``raw``


def _delta(draw: st.DrawFn, plan: ChoicePlan, index: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["content", "reasoning", "reasoning_content", "call", "empty"]))
    if kind == "content":
        word = draw(WORDS)
        plan.text += word
        return {"content": word}
    if kind in ("reasoning", "reasoning_content"):
        word = draw(WORDS)
        plan.reasoning = (plan.reasoning or "") + word
        return {kind: word}
    if kind == "call":
        number = draw(st.integers(0, 2))
        if number not in plan.calls:   # a call's first fragment names it
            name = draw(st.sampled_from(["get_weather", "lookup", "f"]))
            plan.calls[number] = {"id": f"call_{index}_{number}", "name": name, "arguments": ""}
            return {"tool_calls": [{"index": number, "id": f"call_{index}_{number}", "type": "function",
                                    "function": {"name": name, "arguments": ""}}]}
        piece = draw(st.sampled_from(['{"city": ', '"Paris"', "}", '"東京"', " "]))
        plan.calls[number]["arguments"] += piece
        return {"tool_calls": [{"index": number, "function": {"arguments": piece}}]}
    return {"role": "assistant", "content": ""}   # vLLM's first chunk: no token


@st.composite
def streams(draw: st.DrawFn, max_deltas: int = 12) -> Streamed:
    n = draw(st.integers(1, 3))
    plans = {i: ChoicePlan() for i in range(n)}
    chunks: list[dict[str, Any]] = []
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    for _ in range(draw(st.integers(0, max_deltas))):
        index = draw(st.integers(0, n - 1))
        delta = _delta(draw, plans[index], index)
        chunks.append({**head, "choices": [{"index": index, "delta": delta, "logprobs": None,
                                            "finish_reason": None}]})
    for index in draw(st.permutations(range(n))):
        reason = draw(st.sampled_from(["stop", "length", "tool_calls"]))
        plans[index].finish_reason = reason
        chunks.append({**head, "choices": [{"index": index, "delta": {}, "finish_reason": reason}]})
    usage = None
    if draw(st.booleans()):
        usage = {"prompt_tokens": draw(st.integers(0, 99)), "completion_tokens": draw(st.integers(0, 99)),
                 "total_tokens": 0}
        chunks.append({**head, "choices": [], "usage": usage})
    raw = bytearray(draw(st.sampled_from([b"", b"\xef\xbb\xbf"])))   # a byte-order mark, once
    spans = []
    for chunk in [*chunks, "[DONE]"]:
        if draw(st.booleans()):
            raw += b": keep-alive" + draw(LINE_ENDS) + draw(LINE_ENDS)
        data = chunk if isinstance(chunk, str) else json.dumps(
            chunk, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
        end = draw(LINE_ENDS)
        # after a CR, an LF would make one CRLF, and the event would not end
        second = draw(st.sampled_from([b"\r", b"\r\n"]) if end == b"\r" else LINE_ENDS)
        raw += draw(st.sampled_from([b"data: ", b"data:"]))
        spans.append((len(raw), len(raw) + len(data.encode())))
        raw += data.encode() + end + second
    return Streamed(bytes(raw), chunks, plans, usage, spans[:-1])


@st.composite
def splits(draw: st.DrawFn, size: int) -> list[int]:
    """Sorted cut points within ``size`` bytes: the body arrives in these pieces."""
    return sorted(set(draw(st.lists(st.integers(1, max(1, size - 1)), max_size=12))))


def pieces(raw: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(edges) if b > a]

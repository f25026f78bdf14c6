"""shadowdiff's readers, on bytes vLLM's own models built: every reader records the whole answer.

The answers are described by values and built by the oracle as vLLM 0.34 serves them
with a reasoning parser and a tool parser: plain text, reasoning then text, reasoning
cut off by the token limit (``content`` null), a tool call, parallel tool calls, and
two choices. Each is read by every reader shadowdiff has:

* the proxy's tap and shadow reader (``read_answer`` on the bytes that passed);
* the replay client (``Caller`` over HTTP on loopback);
* ``shadowdiff compare``'s reader of run-batch output (``shadowdiff.replay.answers``), not streamed.

and must become the record of that answer: every part of every choice, and the usage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.arrivals import answers_session
from shadowdiff.answers.client import Caller, RetryPolicy, Upstream
from shadowdiff.answers.parse import answer_from, read_answer
from shadowdiff.answers.records import Answer
from shadowdiff.replay import answers as saved_answers
from shadowdiff.vocabulary import Side
from tests.support.conformance.fixtures import Oracle
from tests.support.servers import read_body, serve_app


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    # streamed, the arguments come in pieces that join to the whole
    middle = len(arguments) // 2
    return {"id": call_id, "name": name, "arguments": arguments,
            "argument_pieces": [arguments[:middle], arguments[middle:]]}


def _choice(content: str | None = None, reasoning: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
            finish_reason: str = "stop", completion_tokens: int = 9) -> dict[str, Any]:
    def pieces(text: str | None) -> list[str]:
        return [] if not text else [text[: len(text) // 2], text[len(text) // 2:]]
    return {"content": content, "reasoning": reasoning, "tool_calls": tool_calls or [], "finish_reason": finish_reason,
            "completion_tokens": completion_tokens, "content_pieces": pieces(content),
            "reasoning_pieces": pieces(reasoning)}


ANSWERS: dict[str, dict[str, Any]] = {
    "text": {"choices": [_choice("17 * 23 = 391, so the total is 391 dollars.")]},
    "reasoning": {"reasoning_tokens": 6, "choices": [_choice("391", "17 * 23: 17 * 20 = 340, plus 51 = 391")]},
    "reasoning-cut-off": {"reasoning_tokens": 9,
                          "choices": [_choice(None, "17 * 23: 17 * 20 = 340, plus 5", finish_reason="length")]},
    "tool-call": {"choices": [_choice(None, tool_calls=[
        _call("chatcmpl-tool-a1", "get_weather", '{"city": "Paris", "unit": "celsius"}')],
        finish_reason="tool_calls")]},
    "parallel-tool-calls": {"choices": [_choice(None, tool_calls=[
        _call("chatcmpl-tool-b1", "get_weather", '{"city": "Paris"}'),
        _call("chatcmpl-tool-b2", "get_time", '{"zone": "Europe/Paris"}')], finish_reason="tool_calls")]},
    "two-choices": {"choices": [_choice("The answer is 391."), _choice("The answer is 381.", completion_tokens=7)]},
}
READERS = ("tap-stream", "tap-body", "client-stream", "client-body", "batch")


def described(case: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{case}", "created": 1760000000, "model": "Qwen/Qwen3-8B", "prompt_tokens": 21,
            "system_fingerprint": "vllm-0.34.0-1a2b3c4d", **ANSWERS[case]}


def expected(answer: dict[str, Any]) -> dict[str, Any]:
    """What a record of this answer must hold."""
    def one(choice: dict[str, Any]) -> dict[str, Any]:
        return {"text": choice["content"] or "", "reasoning": choice["reasoning"],
                "finish_reason": choice["finish_reason"],
                "tool_calls": [{"id": c["id"], "type": "function",
                                "function": {"name": c["name"], "arguments": c["arguments"]}}
                               for c in choice["tool_calls"]] or None}
    choices = [one(c) for c in answer["choices"]]
    return {**choices[0], "prompt_tokens": answer["prompt_tokens"],
            "completion_tokens": sum(c["completion_tokens"] for c in answer["choices"]),
            "reasoning_tokens": answer.get("reasoning_tokens"), "choices": choices}


class _Fixed:
    """An upstream that answers every request with the same bytes (vLLM's headers)."""

    def __init__(self) -> None:
        self.raw = b""
        self.stream = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        kind = b"text/event-stream; charset=utf-8" if self.stream else b"application/json"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
        await send({"type": "http.response.body", "body": self.raw})


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, _Fixed]]:
    app = _Fixed()
    with serve_app(app) as url:
        yield url, app


def read(reader: str, raw: str, upstream: tuple[str, _Fixed], tmp_path: Path, oracle: Oracle) -> Any:
    """The record a reader makes of ``raw``: an ``Answer``, or compare's ``SavedAnswer``."""
    stream = reader.endswith("-stream")
    if reader.startswith("tap"):
        return answer_from(Answer(Side.BASELINE, None), read_answer(raw.encode(), stream), 200, 0.0, None, 1.0)
    if reader.startswith("client"):
        url, app = upstream
        app.raw, app.stream = raw.encode(), stream

        async def call() -> Answer:
            async with answers_session(2, 30) as session:
                return await Caller(session, RetryPolicy(attempts=1)).call(
                    Upstream(Side.BASELINE, url), "/v1/chat/completions",
                    {"messages": [{"role": "user", "content": "?"}], "stream": stream})
        return asyncio.run(call())
    line = oracle("batch_line", custom_id="q1", line_id="vllm-1", request_id="vllm-batch-1", body=json.loads(raw))
    path = tmp_path / "batch-output.jsonl"
    path.write_text(line + "\n")
    [saved] = list(saved_answers.read(path))
    assert isinstance(saved, saved_answers.SavedAnswer), saved
    return saved


def view(record: Any) -> dict[str, Any]:
    """The same view of a record (``Answer``, or ``compare``'s ``SavedAnswer``)."""
    def one(choice: Any) -> dict[str, Any]:
        return {"text": choice.text, "reasoning": choice.reasoning, "finish_reason": choice.finish_reason,
                "tool_calls": choice.tool_calls}
    return {**one(record), "prompt_tokens": record.prompt_tokens, "completion_tokens": record.completion_tokens,
            "reasoning_tokens": record.reasoning_tokens, "choices": [one(c) for c in record.choices]}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_every_reader_records_the_whole_answer(oracle: Oracle, upstream: tuple[str, _Fixed], tmp_path: Path,
                                               case: str, reader: str) -> None:
    answer = described(case)
    record = read(reader, oracle("build", answer=answer, stream=reader.endswith("-stream")), upstream, tmp_path,
                  oracle)
    assert record.error is None, record.error
    assert view(record) == expected(answer)

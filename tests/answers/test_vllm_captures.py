"""Real vLLM 0.32's captured bytes (tests/answers/data/vllm/), read by our readers, set against the simulator.

``python -m tests.support.vllm_cpu_capture`` sent the same requests to a real vLLM 0.32 on the CPU
and to a simulator in its place, and kept both answers byte for byte. With no server:

* every reader shadowdiff has — the proxy's tap and shadow reader (``read_answer``, then
  ``answer_from``), the replay client (``Caller`` over HTTP on loopback, from a server
  that answers with the captured bytes) and ``compare``'s run-batch reader (bodies) —
  makes of each of vLLM's answers the record its bytes say (every choice's text and finish
  reason, the usage counts and where the count came from, the logprobs' tokens), and the
  same record of the simulator's answer but for the text; the error answers become the
  same error records;
* the captured vLLM answers, their 0.32 forms made 0.34's (``VERSION_DIFFERENCES`` of
  tests/engines/test_vllm_cpu_conformance.py), have the form of the captured simulator's and of
  the simulator's today, so that a change to the simulator that departs from real vLLM
  fails here, in the ordinary suite.
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
from tests.support.llamacpp_capture import Captured
from tests.support.servers import read_body, serve_app
from tests.support.vllm_cpu_capture import (
    EXCHANGES,
    FORMAT,
    SIDES,
    Exchange,
    index,
    read,
    requests,
    send_all,
    simulated,
)
from tests.support.vllm_cpu_versions import VERSION_DIFFERENCES, departures

ANSWERS = [name for name, exchange in EXCHANGES.items() if exchange.completion]
READERS = ("tap", "client", "batch")


def test_every_exchange_was_captured_as_it_is_asked_now() -> None:
    captured = index()
    assert captured["format"] == FORMAT
    assert captured["exchanges"] == requests(), \
        "EXCHANGES changed: capture again (python -m tests.support.vllm_cpu_capture)"
    for name in EXCHANGES:
        for side in SIDES:
            assert read(name, side).status in (200, 400, 404), (name, side)


@pytest.mark.parametrize("name", EXCHANGES)
def test_the_captured_simulator_answered_as_the_captured_vllm(name: str) -> None:
    found, _ = departures(name, read(name, "vllm"), read(name, "simulator"))
    assert not found, "\n".join(found)


@pytest.fixture(scope="module")
def today() -> Iterator[dict[str, Captured]]:
    """The simulator's answers now, from one standing where the captured vLLM stood."""
    [card] = read("models", "vllm").json()["data"]
    with simulated(card["root"]) as url:
        yield {name: captured for name, (captured, _) in send_all(url).items()}


@pytest.mark.parametrize("name", EXCHANGES)
def test_the_simulator_still_answers_as_the_captured_vllm(today: dict[str, Captured], name: str) -> None:
    found, _ = departures(name, read(name, "vllm"), today[name])
    assert not found, "\n".join(found)


def test_every_version_difference_shows_in_the_captures() -> None:
    shown = set().union(*(departures(name, read(name, "vllm"), read(name, "simulator"))[1] for name in EXCHANGES))
    assert shown == {difference.what for difference in VERSION_DIFFERENCES}


# -- the readers -----------------------------------------------------------------------------

class _Replayed:
    """An upstream that answers every request with one captured answer: its status, type, bytes."""

    def __init__(self) -> None:
        self.captured = Captured(200, [], b"")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        kind = dict(self.captured.headers).get("content-type", "application/json").encode()
        await send({"type": "http.response.start", "status": self.captured.status,
                    "headers": [(b"content-type", kind)]})
        await send({"type": "http.response.body", "body": self.captured.body})


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, _Replayed]]:
    app = _Replayed()
    with serve_app(app) as url:
        yield url, app


def record(reader: str, exchange: Exchange, captured: Captured, upstream: tuple[str, _Replayed],
           tmp_path: Path) -> Any:
    """The record ``reader`` makes of a captured answer: an ``Answer``, or compare's ``SavedAnswer``."""
    if reader == "tap":
        return answer_from(Answer(Side.BASELINE, None), read_answer(captured.body, exchange.stream), captured.status,
                           0.0, None, 1.0)
    if reader == "client":
        url, app = upstream
        app.captured = captured

        async def call() -> Answer:
            async with answers_session(2, 30) as session:
                return await Caller(session, RetryPolicy(attempts=1)).call(
                    Upstream(Side.BASELINE, url), exchange.path, exchange.body or {"stream": False})
        return asyncio.run(call())
    line = {"id": "vllm-0", "custom_id": "q1", "error": None,
            "response": {"status_code": captured.status, "request_id": "vllm-batch-0", "body": captured.json()}}
    path = tmp_path / "batch-output.jsonl"
    path.write_text(json.dumps(line) + "\n")
    [saved] = list(saved_answers.read(path))
    assert isinstance(saved, saved_answers.SavedAnswer), saved
    return saved


def view(reader: str, found: Any) -> dict[str, Any]:
    """What a record holds of an answer (compare's records keep no tokens, nor where a count came from)."""
    seen = {"error": found.error,
            "choices": [{"text": c.text, "finish_reason": c.finish_reason, "reasoning": c.reasoning,
                         "refusal": c.refusal, "tool_calls": c.tool_calls} for c in found.choices],
            "prompt_tokens": found.prompt_tokens, "completion_tokens": found.completion_tokens}
    if reader != "batch":
        seen |= {"token_source": found.token_source, "tokens": found.tokens,
                 "margins": None if found.margins is None else len(found.margins)}
    return seen


def told(reader: str, exchange: Exchange, captured: Captured) -> dict[str, Any]:
    """What the bytes of a 200 say, read here without shadowdiff's readers."""
    texts: dict[int, str] = {}
    finished: dict[int, str | None] = {}
    tokens: list[str] | None = None
    usage, pieces = None, 0
    if exchange.stream:
        chunks = [json.loads(event) for event in captured.events() if event != b"[DONE]"]
    else:
        chunks = [captured.json()]
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk["choices"]:
            index = choice["index"]
            part = choice.get("delta") or choice.get("message") or {}
            text = part.get("content") if "delta" in choice or "message" in choice else choice.get("text")
            texts[index] = texts.get(index, "") + (text or "")
            pieces += bool(text)
            finished[index] = choice["finish_reason"] or finished.get(index)
            logprobs = choice.get("logprobs")
            if index == 0 and logprobs:
                listed = ([entry["token"] for entry in logprobs["content"]] if "content" in logprobs
                          else logprobs["tokens"])
                tokens = [*(tokens or []), *listed]
    if usage is not None:
        count, source = usage["completion_tokens"], "usage"
    else:
        count, source = (len(tokens), "logprobs") if tokens and len(texts) == 1 else (pieces, "stream")
    said = {"error": None,
            "choices": [{"text": texts[i], "finish_reason": finished[i], "reasoning": None, "refusal": None,
                         "tool_calls": None} for i in sorted(texts)],
            "prompt_tokens": usage and usage["prompt_tokens"], "completion_tokens": count}
    if reader != "batch":
        said |= {"token_source": source, "tokens": tokens, "margins": None if tokens is None else len(tokens)}
    return said


def blind(seen: dict[str, Any]) -> dict[str, Any]:
    """A record without what the text decides: whether each part is there, not what it says."""
    counted = {key: isinstance(seen[key], int) for key in ("prompt_tokens", "completion_tokens")}
    tokens = {"tokens": seen["tokens"] is not None} if "tokens" in seen else {}
    return {**seen, **counted, **tokens, "margins": None,
            "choices": [{**c, "text": bool(c["text"])} for c in seen["choices"]]}


def _answered(name: str) -> bool:
    return read(name, "vllm").status == 200 and b'"error"' not in read(name, "vllm").body[:40]


@pytest.mark.parametrize(("name", "reader"), [
    (name, reader) for name in ANSWERS if _answered(name) for reader in READERS
    if reader != "batch" or not EXCHANGES[name].stream])   # run-batch answers are bodies
def test_every_reader_records_what_the_bytes_say_from_both(upstream: tuple[str, _Replayed], tmp_path: Path,
                                                           name: str, reader: str) -> None:
    exchange = EXCHANGES[name]
    seen = {}
    for side in SIDES:
        captured = read(name, side)
        seen[side] = view(reader, record(reader, exchange, captured, upstream, tmp_path))
        assert seen[side] == told(reader, exchange, captured), side
    assert blind(seen["vllm"]) == blind(seen["simulator"])


@pytest.mark.parametrize("name", [name for name in ANSWERS if not _answered(name)])
def test_errors_become_the_same_error_records(upstream: tuple[str, _Replayed], tmp_path: Path, name: str) -> None:
    exchange = EXCHANGES[name]
    errors = {}
    for side in SIDES:
        captured = read(name, side)
        readers = ("client", "tap") if captured.status == 200 else ("client",)   # the tap passes other statuses by
        found = {reader: record(reader, exchange, captured, upstream, tmp_path) for reader in readers}
        for answer in found.values():
            assert answer.status == captured.status and answer.text == "" and answer.completion_tokens is None
        if captured.status == 200:   # refused after the 200: the error event, whatever its spacing
            detail = json.dumps(json.loads(captured.events()[0])["error"], separators=(",", ":"))
            assert {a.error for a in found.values()} == {f"error event after the 200: {detail}"}, side
        else:
            assert found["client"].error == f"HTTP {captured.status}: {captured.body.decode()}", side
        errors[side] = {reader: (a.status, a.error) for reader, a in found.items()}
    assert errors["vllm"] == errors["simulator"]


def test_streamed_pieces_leave_out_the_end_of_sequence_token() -> None:
    """vLLM counts the end-of-sequence token in ``completion_tokens`` and streams no text for it
    (its finish chunk's delta is empty): counting a stream's pieces (``token_source: "stream"``,
    for a stream without usage) finds one token fewer for an answer the model ended, and every
    token of one cut by length. The simulator does the same."""
    for side in SIDES:
        ended = read_answer(read("chat-stream-usage", side).body, True)
        cut = read_answer(read("completions-stream", side).body, True)
        assert ended.read()[0].finish_reason == "stop" and cut.read()[0].finish_reason == "length"
        assert (ended.pieces, cut.pieces) == (ended.completion_tokens - 1, cut.completion_tokens), side

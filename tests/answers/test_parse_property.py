"""Properties of the answer reader over random streams.

* A vLLM-shaped stream, however it is framed, reads as what was written.
* Cut anywhere - at every byte boundary, or into many pieces - its events, and the
  answer they make, are those of the whole (the client reads events as they arrive;
  the proxy reads the whole with ``read_answer``).
* Random and mutated bodies never raise: ``read_answer`` and ``read_body`` report
  trouble in the reading's ``error``, ``read_event`` by returning False with it set.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shadowdiff.answers.parse import EventStream, Reading, read_answer, read_body, read_event
from tests.support.streams import Streamed, pieces, splits, streams


def events_of(chunks: list[bytes]) -> list[tuple[str, int]]:
    events = EventStream()
    got = [event for chunk in chunks for event in events.feed(chunk)]
    return got + events.close()


def read_as_client(events: list[tuple[str, int]]) -> Reading:
    """What the client makes of events as they arrive (``shadowdiff.answers.client``)."""
    reading = Reading()
    for data, end in events:
        if data == "[DONE]":
            reading.done = True
            break
        if not read_event(reading, data, float(end)):
            break
    return reading


def contents(reading: Reading) -> dict[str, Any]:
    """A reading without its clock times."""
    return {"choices": [asdict(c) for c in reading.read()], "error": reading.error, "done": reading.done,
            "usage": (reading.prompt_tokens, reading.completion_tokens), "tokens": reading.tokens}


@settings(max_examples=150, deadline=None)
@given(streams())
def test_a_stream_reads_as_it_was_written(stream: Streamed) -> None:
    reading = read_answer(stream.raw, True)
    assert reading.error is None and reading.done
    choices = reading.read()
    assert [c.index for c in choices] == sorted(stream.expected)
    for choice in choices:
        plan = stream.expected[choice.index]
        assert (choice.text, choice.reasoning, choice.finish_reason) == (plan.text, plan.reasoning,
                                                                         plan.finish_reason)
        calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                 for _, c in sorted(plan.calls.items())]
        assert choice.tool_calls == (calls or None)
    usage = stream.usage or {}
    assert (reading.prompt_tokens, reading.completion_tokens) == (usage.get("prompt_tokens"),
                                                                  usage.get("completion_tokens"))


@settings(max_examples=40, deadline=None)
@given(streams(max_deltas=6))
def test_a_cut_at_every_byte_gives_the_events_of_the_whole(stream: Streamed) -> None:
    raw = stream.raw
    whole = events_of([raw])
    assert len(whole) == len(stream.chunks) + 1   # every chunk and [DONE], no comment
    for cut in range(1, len(raw)):
        assert events_of([raw[:cut], raw[cut:]]) == whole, cut
    assert events_of([raw[i:i + 1] for i in range(len(raw))]) == whole


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_an_answer_read_in_pieces_is_the_answer_read_whole(data: st.DataObject) -> None:
    stream = data.draw(streams())
    chunks = pieces(stream.raw, data.draw(splits(len(stream.raw))))
    events = events_of(chunks)
    assert events == events_of([stream.raw])
    assert contents(read_as_client(events)) == contents(read_answer(stream.raw, True))


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid stream with bytes deleted, inserted, replaced, or cut short."""
    raw = bytearray(draw(streams(max_deltas=6)).raw)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(raw)))
        what = draw(st.sampled_from(["delete", "insert", "replace", "cut"]))
        if what == "delete":
            del raw[at:at + draw(st.integers(1, 8))]
        elif what == "insert":
            raw[at:at] = draw(st.sampled_from([b"\n", b"\r", b"\n\n", b"data: ", b"{", b'"', b"\xff", b"\xe6",
                                               b'{"error": {"message": "x"}}', b'"choices": 3', b"[DONE]"]))
        elif what == "replace":
            raw[at:at + 1] = draw(st.binary(min_size=1, max_size=1))
        else:
            del raw[at:]
    return bytes(raw)


NESTED = b"[" * 300 + b"]" * 300   # deeper than orjson writes (254), shallower than it reads (1024)
DEEP = b"[" * 1000 + b"]" * 1000   # deeper than the standard library's json writes


# found by these properties: an error event nested too deep to print raised TypeError
# from read_event (the client's reader), and a whole body with deeply nested tool-call
# arguments raised RecursionError from read_body
@example(b"data: {\"error\": " + NESTED + b"}\n\n")
@example(b'{"choices": [{"message": {"tool_calls": [{"function": {"arguments": ' + DEEP + b"}}]}}]}")
@example(b'data: {"choices": [{"index": 70000, "delta": {"content": "x"}}]}\n\n')
@example(b'data: {"choices": [{"delta": {"tool_calls": [{"index": 2000}]}}]}\n\n')
@example(b'data: {"choices": [{"delta": {}, "logprobs": {"content": [3, {"top_logprobs": [1, "a"]}]}}]}\n\n')
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated(), st.binary(max_size=300)))
def test_garbage_is_an_error_never_an_exception(raw: bytes) -> None:
    for stream in (True, False):
        reading = read_answer(raw, stream)
        assert reading.error is None or isinstance(reading.error, str)
    events = events_of([raw[:len(raw) // 2], raw[len(raw) // 2:]])
    read_as_client(events)
    for text in (raw, *(data for data, _ in events)):   # the body, and each event, as a whole body
        try:
            body = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        error = read_body(body).error
        assert error is None or isinstance(error, str)

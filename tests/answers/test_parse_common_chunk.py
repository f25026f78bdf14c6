"""``read_chunk`` reads the common chunk (one choice's piece of text) by a short path: it
must find what the general path (``read_whole_chunk``) finds, in every chunk near that
shape, and leave every other chunk to it, errors included."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shadowdiff.answers.parse import Reading, read_chunk, read_whole_chunk

_TOP = {"content": [{"token": " a", "logprob": -0.1, "top_logprobs": [{"token": " a", "logprob": -0.1},
                                                                    {"token": " b", "logprob": -2.5}]}]}


def _chunk(delta: Any = None, **choice: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": " a"} if delta is None else delta, "logprobs": None,
                         "finish_reason": None, **choice}]}


CHUNKS = [
    _chunk(),                                            # the common one
    _chunk({"role": "assistant", "content": ""}),        # the first
    _chunk({"content": None}),
    _chunk({}),
    _chunk(index=1),
    _chunk(index=3),
    _chunk(logprobs=_TOP),                               # logprobs asked for
    _chunk(logprobs=_TOP, index=1),                      # ... on a later choice: not read
    _chunk(finish_reason="stop"),
    _chunk(finish_reason="length", stop_reason=None, token_ids=None),
    _chunk({"content": " a", "reasoning": "hm"}),
    _chunk({"content": "", "reasoning_content": "hm"}),
    _chunk({"refusal": "no"}),
    _chunk({"content": None, "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}]}),
    {**_chunk(), "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
    {**_chunk(), "usage": None},
    {**_chunk(), "usage": "odd"},                        # (usage is informative: an odd one is ignored)
    {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    {"choices": [_chunk()["choices"][0], _chunk(index=1)["choices"][0]]},   # two choices in one chunk
    {"choices": [{"index": 0, "text": " a", "logprobs": None, "finish_reason": None}]},   # completions
    {"choices": None},
    {},
]
BROKEN = [
    _chunk({"content": 5}),
    _chunk(index=True),
    _chunk(index=-1),
    _chunk(index="0"),
    _chunk(index=1 << 40),
    _chunk({"content": [" a"]}),
    {"choices": "a"},
]


def _read(reader: Any, chunks: list[dict[str, Any]]) -> Reading | str:
    reading = Reading()
    try:
        for chunk in chunks:
            reader(reading, copy.deepcopy(chunk), 1.5)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return reading


@pytest.mark.parametrize("chunk", CHUNKS + BROKEN)
def test_a_chunk_reads_as_the_general_path_reads_it(chunk: dict[str, Any]) -> None:
    assert _read(read_chunk, [chunk]) == _read(read_whole_chunk, [chunk])


def test_a_whole_stream_of_them_reads_the_same() -> None:
    stream = [_chunk({"role": "assistant", "content": ""}), *CHUNKS, _chunk(finish_reason="stop")]
    fast, whole = _read(read_chunk, stream), _read(read_whole_chunk, stream)
    assert isinstance(fast, Reading) and fast == whole
    assert fast.pieces > 5 and fast.first == fast.last == 1.5 and fast.tokens == [" a"]


@pytest.mark.parametrize("chunk", BROKEN)
def test_a_broken_chunk_is_still_refused(chunk: dict[str, Any]) -> None:
    assert isinstance(_read(read_chunk, [chunk]), str)


def test_each_chunks_time_is_read_as_the_general_path_reads_it() -> None:
    """The first token's time, the first answer token's (after thinking), the last's."""
    stream = [_chunk({"role": "assistant", "content": ""}), _chunk({"reasoning_content": "hm"}), _chunk({}),
              _chunk(), _chunk({"content": None}), _chunk({"content": " b"}), _chunk(finish_reason="stop")]

    def timed(reader: Any) -> Reading:
        reading = Reading()
        for at, chunk in enumerate(stream, start=1):
            reader(reading, copy.deepcopy(chunk), float(at))
        return reading

    fast, whole = timed(read_chunk), timed(read_whole_chunk)
    assert fast == whole
    # (the last chunk, finishing, carries text too)
    assert (fast.first, fast.first_answer, fast.last, fast.arrivals) == (2.0, 4.0, 7.0, 4)

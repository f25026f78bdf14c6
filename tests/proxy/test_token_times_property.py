"""The proxy finds token times in the bytes it passes on, however they are cut into
reads, a marker split between two reads included.

``TokenTimes`` is fed a random vLLM-shaped stream in random reads; the clock is the
read's number, so the times it finds say which read it found each token in: the first
generated token, the first answer token and the last generated token must be found in
the read where that token's chunk (its marker, ``"content":"H``) is complete.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from shadowdiff.proxy.shadow import TokenTimes
from tests.support.streams import Streamed, pieces, splits, streams


def token_key(chunk: dict[str, Any]) -> str | None:
    """The field of a chunk that carries a token, if one does."""
    for choice in chunk["choices"]:
        for key in ("content", "reasoning", "reasoning_content", "tool_calls"):
            if choice["delta"].get(key):
                return key
    return None


def read_number(reads: list[bytes], offset: int) -> int:
    """The 1-based number of the read holding byte ``offset``."""
    return next(n for n, end in enumerate(itertools.accumulate(map(len, reads)), start=1) if offset < end)


def times_of(reads: list[bytes]) -> TokenTimes:
    clock: Iterator[int] = itertools.count(1)
    times = TokenTimes()
    with mock.patch("shadowdiff.proxy.shadow.time") as fake:
        fake.perf_counter.side_effect = lambda: float(next(clock))
        for read in reads:
            times.seen(read)
    return times


def expected(stream: Streamed, reads: list[bytes]) -> tuple[int | None, int | None, int | None]:
    """The reads that complete the first token, the first answer token and the last
    token: a token is whole with the first byte of its value (``"content":"H``), or the
    brace that opens a tool call (``"tool_calls":[{``)."""
    ends = []   # (where the token is whole, an answer token?), in order
    for chunk, (start, end) in zip(stream.chunks, stream.spans, strict=True):
        key = token_key(chunk)
        if key is not None:
            data = stream.raw[start:end]
            at = data.index(f'"{key}"'.encode()) + len(key) + 2
            whole = data.index(b"{", at) if key == "tool_calls" else data.index(b'"', at) + 1
            ends.append((start + whole, not key.startswith("reasoning")))
    if not ends:
        return None, None, None
    answers = [at for at, answer in ends if answer]
    return (read_number(reads, ends[0][0]), read_number(reads, answers[0]) if answers else None,
            read_number(reads, ends[-1][0]))


@settings(max_examples=150, deadline=None)
@given(tiny=st.booleans(), data=st.data())
def test_tokens_are_found_in_the_read_that_completes_them(tiny: bool, data: st.DataObject) -> None:
    stream = data.draw(streams())
    raw = stream.raw
    reads = [raw[i:i + 1] for i in range(len(raw))] if tiny else pieces(raw, data.draw(splits(len(raw))))
    times = times_of(reads)
    assert (times.first, times.first_answer, times.last) == expected(stream, reads)


def test_a_marker_over_three_reads_is_found() -> None:
    """Found by the property above: the carry kept only the read before, so a marker
    spread over three reads was never found; nor the last token's, split in two."""
    reads = [b'data: {"choices":[{"index":0,"delta":{"con', b'tent', b'":"Hi"}}]}\n\n', b"data: [DONE]\n\n"]
    times = times_of(reads)
    assert (times.first, times.first_answer, times.last) == (3, 3, 3)

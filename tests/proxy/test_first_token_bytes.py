"""Time to first token and to first answer token, found in the bytes the proxy passes on."""

from __future__ import annotations

import pytest

from shadowdiff.proxy.shadow import first_times


@pytest.mark.parametrize(("chunk", "generated", "answer"), [
    (b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}', False, False),
    (b'data: {"choices":[{"delta":{"reasoning":"17"}}]}', True, False),
    (b'data: {"choices":[{"delta":{"reasoning_content":"17"}}]}', True, False),
    (b'data: {"choices":[{"delta":{"content":"391"}}]}', True, True),
    (b'data: {"choices": [{"delta": {"content": "391"}}]}', True, True),        # spaces, as json.dumps writes
    (b'data: {"choices":[{"text":" Paris","index":0}]}', True, True),           # completions
    (b'data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x"}]}}]}', True, True),
    (b'data: {"choices":[{"delta":{"tool_calls": [ {"index":0}]}}]}', True, True),
    (b'data: {"choices":[{"delta":{"refusal":"no"}}]}', True, True),
    (b'data: {"choices":[{"delta":{"reasoning":"say \\"text\\":\\"x\\""}}]}', True, False),   # a key inside a string
    (b'data: {"choices":[],"prompt_text":"hi","usage":{}}', False, False),
])
def test_tokens_are_found_in_the_bytes(chunk: bytes, generated: bool, answer: bool) -> None:
    first, first_answer = first_times(chunk, None)
    assert (first is not None, first_answer is not None) == (generated, answer)
    if answer:
        assert first == first_answer   # one clock reading for a chunk that answers at once


def test_the_answer_token_after_earlier_thinking_gets_its_own_time() -> None:
    first, first_answer = first_times(b'{"delta":{"content":"391"}}', 1.0)
    assert first == 1.0 and first_answer is not None and first_answer > 1.0

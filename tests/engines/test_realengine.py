"""The real-engine tier's smoke test: llama.cpp serving SmolLM2 answers, and F16 is deterministic."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.realengine import Server

pytestmark = pytest.mark.realengine

QUESTION = [{"role": "user", "content": "What is 17 times 23?"}]


def chat(server: Server) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/v1/chat/completions", timeout=120,
                          json={"model": server.model, "messages": QUESTION, "temperature": 0, "max_tokens": 32})
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


def test_f16_repeats_itself_and_q8_and_the_replica_answer(f16: Server, q8: Server, f16_replica: Server) -> None:
    first, second = chat(f16), chat(f16)
    text = first["choices"][0]["message"]["content"]
    assert text and text == second["choices"][0]["message"]["content"]
    assert first["model"] == "smol-f16" and first["usage"]["completion_tokens"] > 0
    other = chat(q8)
    assert other["model"] == "smol-q8" and other["choices"][0]["message"]["content"]
    assert other["usage"]["completion_tokens"] > 0
    assert chat(f16_replica)["choices"][0]["message"]["content"]

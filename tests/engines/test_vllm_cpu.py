"""The real-vLLM tier's smoke test: vLLM 0.32 on the CPU serves SmolLM2, as a user starts it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.vllm_cpu import Server, Trio

pytestmark = pytest.mark.vllmcpu

QUESTION = [{"role": "user", "content": "What is 2+2?"}]


def chat(server: Server, **extra: Any) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/v1/chat/completions", timeout=300,
                          json={"model": server.model, "messages": QUESTION, "temperature": 0, "max_tokens": 24,
                                **extra})
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


def test_three_servers_answer_as_vllm(vllm: Trio) -> None:
    first = chat(vllm.bf16)
    text = first["choices"][0]["message"]["content"]
    assert "4" in text and first["model"] == "smol-bf16"
    assert first["system_fingerprint"].startswith("vllm-0.32.0-")
    assert chat(vllm.bf16)["choices"][0]["message"]["content"] == text   # greedy, one request at a time
    assert chat(vllm.replica)["choices"][0]["message"]["content"]
    candidate = chat(vllm.candidate)
    assert candidate["model"] == vllm.candidate.model and candidate["usage"]["completion_tokens"] > 0
    for server in (vllm.bf16, vllm.replica, vllm.candidate):
        assert httpx.get(f"{server.url}/version", timeout=30).json() == {"version": "0.32.0"}
    # the candidate really is the change it names (the engine's own log lines say so)
    if vllm.candidate.precision.name == "fp8kv":
        assert "kv_cache_dtype=fp8" in vllm.candidate.log.read_text()
    else:
        assert "quantization=compressed-tensors" in vllm.candidate.log.read_text()   # the INT8 W8A8 checkpoint
    assert "kv_cache_dtype=auto" in vllm.bf16.log.read_text()

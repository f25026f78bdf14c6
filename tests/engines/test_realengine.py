"""The real-engine tier's smoke test: llama.cpp serving SmolLM2 answers, and F16 is deterministic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.realengine import Models, Server, serve

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


def test_the_fixtures_servers_rank_logprobs_as_llama_cpp_python_ships(llamacpp_python: Path, smollm2: Models,
                                                                        f16: Server, tmp_path: Path) -> None:
    """The fixtures' servers rank top logprobs with ``heapq.nlargest`` (tests/support/engine_patches):
    an answer with logprobs, echoed and generated, is the one a server as shipped gives."""
    body = {"model": f16.model, "prompt": "<|im_start|>user\nName a color.<|im_end|>\n<|im_start|>assistant\n",
            "temperature": 0, "max_tokens": 6, "echo": True, "logprobs": 7}

    def asked(server: Server) -> Any:
        response = httpx.post(f"{server.url}/v1/completions", timeout=120, json=body)
        response.raise_for_status()
        return {key: value for key, value in response.json().items() if key not in ("id", "created")}

    with serve(llamacpp_python, smollm2.f16, "smol-f16", tmp_path / "shipped.log") as shipped:
        assert asked(f16) == asked(shipped)
    assert "ranking top logprobs" in f16.log.read_text() and "ranking" not in (tmp_path / "shipped.log").read_text()

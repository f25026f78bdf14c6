"""The real-engine tier's smoke test: llama.cpp serving SmolLM2 answers, and F16 is deterministic."""

from __future__ import annotations

import json
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
    answers with logprobs, echoed or streamed (each of llama-cpp-python's three ranking sites),
    are the ones a server as shipped gives."""
    prompt = "<|im_start|>user\nName a color.<|im_end|>\n<|im_start|>assistant\n"
    asked = ({"prompt": prompt, "max_tokens": 6, "echo": True, "logprobs": 7},
             {"prompt": prompt, "max_tokens": 6, "logprobs": 3, "stream": True})

    def answers(server: Server) -> list[Any]:
        got = []
        for body in asked:
            response = httpx.post(f"{server.url}/v1/completions", timeout=120,
                                  json={"model": server.model, "temperature": 0, **body})
            response.raise_for_status()
            events = [json.loads(line.removeprefix("data: ")) for line in response.text.splitlines()
                      if line.startswith("data: {")] if body.get("stream") else [response.json()]
            got.append([{k: v for k, v in event.items() if k not in ("id", "created")} for event in events])
        return got

    with serve(llamacpp_python, smollm2.f16, "smol-f16", tmp_path / "shipped.log") as shipped:
        ranked, as_shipped = answers(f16), answers(shipped)
    assert ranked == as_shipped and len(ranked[1]) > 1 and ranked[1][0]["choices"][0]["logprobs"], ranked
    assert "ranking top logprobs" in f16.log.read_text() and "ranking" not in (tmp_path / "shipped.log").read_text()

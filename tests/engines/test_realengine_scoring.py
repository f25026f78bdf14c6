"""Teacher-forced scoring against real inference: llama.cpp (llama-cpp-python's server)
reading SmolLM2-135M-Instruct's F16 answers, at F16 and at Q8_0.

The server renders no chat template for a caller, so the prompts are completions prompts
written in the model's own ChatML template (as its server renders a chat request). F16
reading its own greedy answers must agree on every token with no drop and no KL; Q8_0
reads them with numerically different logits (a KL above zero) and, on a model this
small, disagrees on a few tokens at most.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from shadowdiff.answers.client import Upstream
from shadowdiff.triage.scoring import Job, Scorer
from shadowdiff.vocabulary import Side
from tests.support.realengine import Server

pytestmark = pytest.mark.realengine

SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
# (each answer read back costs llama-cpp-python a Python sort of the whole vocabulary per
# token: three answers, about 100 tokens, are what the agreement is pooled over)
QUESTIONS = ("What is the capital of France?", "Explain in two sentences why the sky is blue.",
             "Write a haiku about autumn leaves.")


def _chatml(question: str) -> str:
    return f"{SYSTEM}<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def _answer(server: Server, prompt: str, max_tokens: int = 48) -> str:
    response = httpx.post(f"{server.url}/v1/completions", timeout=120, json={
        "model": server.model, "prompt": prompt, "temperature": 0, "max_tokens": max_tokens, "repeat_penalty": 1.0})
    text: str = response.json()["choices"][0]["text"]
    return text


def _scores(f16: Server, q8: Server, jobs: list[Job]) -> list[dict[Side, dict[str, Any]]]:
    base = Upstream(Side.BASELINE, f16.url, f16.model)
    others = [Upstream(Side.CANDIDATE, q8.url, q8.model), Upstream(Side.REPLICA, f16.url, f16.model)]

    async def go() -> list[dict[Side, dict[str, Any]]]:
        async with httpx.AsyncClient(timeout=120) as client:
            scorer = Scorer(client, timeout=120)
            return [await scorer.score(job, base, others) for job in jobs]
    return asyncio.run(go())


def test_f16_agrees_with_itself_on_every_token_and_q8_0_reads_its_answers_nearly_alike(f16: Server,
                                                                                        q8: Server) -> None:
    jobs = [Job("/v1/completions", {"prompt": _chatml(q)}, _answer(f16, _chatml(q))) for q in QUESTIONS]
    results = _scores(f16, q8, jobs)
    for result in results:
        itself = result[Side.REPLICA]
        assert itself.get("agreement") == 1.0, itself
        assert itself["engine"] == "llama.cpp"
        assert itself["kl"] == pytest.approx(0.0, abs=1e-9) and itself["max_drop"] == pytest.approx(0.0, abs=1e-9)
    candidate = [r[Side.CANDIDATE] for r in results]
    assert all("agreement" in c for c in candidate), candidate
    tokens = sum(c["tokens"] for c in candidate)
    pooled = sum(c["agreed"] for c in candidate) / tokens
    kl = sum(c["kl"] * c["tokens"] for c in candidate) / tokens
    print(f"Q8_0 reading F16's answers: token agreement {pooled:.4f} over {tokens} tokens, KL {kl:.5f} nats/token")
    # 8-bit weights move the logits (KL above zero) without changing most top choices
    assert kl > 0
    assert 0.9 <= pooled <= 1.0


def test_a_prompt_without_the_bos_token_is_not_scored_and_says_why(f16: Server, q8: Server) -> None:
    """llama-cpp-python reads each echoed token's logprob one position off when the prompt
    does not start with the BOS token (<|im_start|> for SmolLM2): such answers are not
    scored, rather than scored wrong."""
    prompt = "The three primary colors are"
    [result] = _scores(f16, q8, [Job("/v1/completions", {"prompt": prompt}, _answer(f16, prompt, max_tokens=8))])
    assert "does not start with the BOS token" in result[Side.CANDIDATE]["unscorable"]


def test_a_chat_request_cannot_be_scored_on_llama_cpp_and_says_why(f16: Server, q8: Server) -> None:
    body = {"messages": [{"role": "user", "content": QUESTIONS[0]}]}
    [result] = _scores(f16, q8, [Job("/v1/chat/completions", body, "Paris.")])
    assert "renders no chat template" in result[Side.CANDIDATE]["unscorable"]

"""Teacher-forced scoring against real vLLM: SmolLM2-135M-Instruct's bf16 chat answers read
back through ``/tokenize`` and ``prompt_logprobs`` by bf16 itself, its replica and the FP8 KV
cache candidate.

What real vLLM taught: reading a whole answer at once (prefill) is computed unlike writing
it token by token (decode), so bf16 agrees with its own greedy answers on a little under
100 % of their tokens; the figures are read against that, never against 100 %.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from shadowdiff.client import Upstream
from shadowdiff.records import Side
from shadowdiff.scoring import Job, Scorer
from tests.vllm_cpu import Server, Trio

pytestmark = pytest.mark.vllmcpu

QUESTIONS = ("What is the capital of France?", "Name three colors of the rainbow.",
             "Explain in two sentences why the sky is blue.", "Write a haiku about autumn leaves.",
             "What is 12 plus 30?", "Give one tip for staying focused while studying.")
CHAT = "/v1/chat/completions"


def _answer(server: Server, question: str) -> tuple[dict[str, Any], str, list[int]]:
    """The body asked, the greedy answer's text and the token ids vLLM generated for it."""
    body = {"model": server.model, "messages": [{"role": "user", "content": question}], "temperature": 0,
            "max_tokens": 48}
    response = httpx.post(server.url + CHAT, json={**body, "return_token_ids": True}, timeout=300)
    response.raise_for_status()
    choice = response.json()["choices"][0]
    return body, choice["message"]["content"], choice["token_ids"]


def _scores(vllm: Trio, jobs: list[Job]) -> list[dict[Side, dict[str, Any]]]:
    base = Upstream(Side.BASELINE, vllm.bf16.url, vllm.bf16.model)
    others = [Upstream(Side.CANDIDATE, vllm.fp8kv.url, vllm.fp8kv.model),
              Upstream(Side.REPLICA, vllm.replica.url, vllm.replica.model)]

    async def go() -> list[dict[Side, dict[str, Any]]]:
        async with httpx.AsyncClient(timeout=300) as client:
            scorer = Scorer(client, timeout=300)
            return list(await asyncio.gather(*(scorer.score(job, base, others) for job in jobs)))

    return asyncio.run(go())


def test_vllm_reads_the_baselines_answers_token_for_token(vllm: Trio) -> None:
    answered = [_answer(vllm.bf16, q) for q in QUESTIONS]
    scores = _scores(vllm, [Job(CHAT, body, text) for body, text, _ in answered])
    end_of_turn = vllm_eos(vllm.bf16)
    pooled: dict[Side, list[float]] = {Side.CANDIDATE: [0, 0, 0.0], Side.REPLICA: [0, 0, 0.0]}
    for (_, text, generated), score in zip(answered, scores, strict=True):
        for side in (Side.CANDIDATE, Side.REPLICA):
            figures = score[side]
            assert figures["engine"] == "vllm", figures   # /tokenize and prompt_logprobs
            # the scored tokens are the very tokens generated (the end-of-turn token, if the
            # answer stopped, is not part of its text)
            assert figures["tokens"] == len(generated) - (generated[-1] == end_of_turn), (text, figures, generated)
            pooled[side][0] += figures["agreed"]
            pooled[side][1] += figures["tokens"]
            pooled[side][2] += figures["kl"] * figures["tokens"]
            assert 0.8 <= figures["baseline_agreement"] <= 1.0, figures
    own_agreed = sum(s[Side.CANDIDATE]["baseline_agreement"] * s[Side.CANDIDATE]["tokens"] for s in scores)
    tokens = pooled[Side.CANDIDATE][1]
    assert 0.9 <= own_agreed / tokens <= 1.0
    # the FP8 KV cache moves the probabilities further than the identical replica does
    kl = {side: pooled[side][2] / pooled[side][1] for side in pooled}
    assert kl[Side.CANDIDATE] > kl[Side.REPLICA] >= 0, kl


def vllm_eos(server: Server) -> int:
    """The id of SmolLM2's end-of-turn token, ``<|im_end|>``, by vLLM's tokenizer."""
    response = httpx.post(server.url + "/tokenize", json={"model": server.model, "prompt": "<|im_end|>",
                                                          "add_special_tokens": False}, timeout=60)
    [token] = response.json()["tokens"]
    return int(token)

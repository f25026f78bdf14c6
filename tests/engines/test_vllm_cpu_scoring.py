"""Teacher-forced scoring against real vLLM: SmolLM2-135M-Instruct's bf16 chat answers read
back through ``/tokenize`` and ``prompt_logprobs`` by bf16 itself, its replica and the FP8 KV
cache candidate (the INT8 W8A8 one on a CPU without AVX-512).

What real vLLM taught: reading a whole answer at once (prefill) is computed unlike writing
it token by token (decode), so bf16 agrees with its own greedy answers on a little under
100 % of their tokens; the figures are read against that, never against 100 %.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from shadowdiff.answers.client import Upstream
from shadowdiff.triage.scoring import Job, Scorer
from shadowdiff.vocabulary import Side
from tests.support.vllm_cpu import Server, Trio

pytestmark = pytest.mark.vllmcpu

QUESTIONS = ("What is the capital of France?", "Name three colors of the rainbow.",
             "Explain in two sentences why the sky is blue.", "Write a haiku about autumn leaves.",
             "What is 12 plus 30?", "Give one tip for staying focused while studying.")
CHAT = "/v1/chat/completions"


def _answer(server: Server, question: str, max_tokens: int = 48,
            ) -> tuple[dict[str, Any], str, list[int], dict[str, Any]]:
    """The body asked, the greedy answer's text, the token ids vLLM generated for it, and its whole reply."""
    body = {"model": server.model, "messages": [{"role": "user", "content": question}], "temperature": 0,
            "max_tokens": max_tokens}
    response = httpx.post(server.url + CHAT, json={**body, "return_token_ids": True}, timeout=600)
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    choice = data["choices"][0]
    return body, choice["message"]["content"], choice["token_ids"], data


def _scores(vllm: Trio, jobs: list[Job]) -> list[dict[Side, dict[str, Any]]]:
    base = Upstream(Side.BASELINE, vllm.bf16.url, vllm.bf16.model)
    others = [Upstream(Side.CANDIDATE, vllm.candidate.url, vllm.candidate.model),
              Upstream(Side.REPLICA, vllm.replica.url, vllm.replica.model)]

    async def go() -> list[dict[Side, dict[str, Any]]]:
        async with httpx.AsyncClient(timeout=300) as client:
            scorer = Scorer(client, timeout=300)
            return list(await asyncio.gather(*(scorer.score(job, base, others) for job in jobs)))

    return asyncio.run(go())


def test_vllm_reads_the_baselines_answers_token_for_token(vllm: Trio) -> None:
    answered = [_answer(vllm.bf16, q) for q in QUESTIONS]
    scores = _scores(vllm, [Job(CHAT, body, text) for body, text, _, _ in answered])
    end_of_turn = vllm_eos(vllm.bf16)
    pooled: dict[Side, list[float]] = {Side.CANDIDATE: [0, 0, 0.0], Side.REPLICA: [0, 0, 0.0]}
    for (_, text, generated, _), score in zip(answered, scores, strict=True):
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
    # the candidate's quantization moves the probabilities further than the identical replica does
    kl = {side: pooled[side][2] / pooled[side][1] for side in pooled}
    assert kl[Side.CANDIDATE] > kl[Side.REPLICA] >= 0, kl


def vllm_eos(server: Server) -> int:
    """The id of SmolLM2's end-of-turn token, ``<|im_end|>``, by vLLM's tokenizer."""
    response = httpx.post(server.url + "/tokenize", json={"model": server.model, "prompt": "<|im_end|>",
                                                          "add_special_tokens": False}, timeout=60)
    [token] = response.json()["tokens"]
    return int(token)


def test_an_answer_that_fills_the_context_is_scored_one_token_short(vllm: Trio) -> None:
    """A long prompt whose answer runs to ``--max-model-len``: vLLM cuts the answer there,
    and then cannot read prompt and answer back with room for the token it must generate
    (400 ``max_tokens must be at least 1``). It is read without its last token. (That a run
    of such pairs never makes the scorer give the server up is tested on a scripted server,
    tests/triage/test_scoring.py: each reading here is a 2,047-token prefill with logprobs.)"""
    filler = "The quick brown fox jumps over the lazy dog. " * 190   # about 1,900 tokens
    body, text, generated, data = _answer(vllm.bf16, f"{filler}\nSummarize the text above at length.", 256)
    assert data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"] == 2048, data["usage"]
    assert data["choices"][0]["finish_reason"] == "length"
    base = Upstream(Side.BASELINE, vllm.bf16.url, vllm.bf16.model)
    cand = Upstream(Side.CANDIDATE, vllm.candidate.url, vllm.candidate.model)

    async def go() -> dict[Side, dict[str, Any]]:
        async with httpx.AsyncClient(timeout=300) as client:
            scorer = Scorer(client, timeout=300)
            return await scorer.score(Job(CHAT, body, text), base, [cand])

    figures = asyncio.run(go())[Side.CANDIDATE]
    assert figures.get("agreement") is not None, figures
    assert figures["tokens"] == len(generated) - 1 and figures["baseline_agreement"] >= 0.8, figures


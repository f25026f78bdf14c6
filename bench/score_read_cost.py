"""What teacher-forced scoring costs the proxy's event loop, per scored pair.

``serve --score-rate`` reads each server's ``prompt_logprobs`` (vLLM: the top 10 at
every position of the prompt and the answer, about 0.9 MB per 1,000 tokens) on the
proxy's event loop, where the clients' streams are passed on: the JSON is parsed in C
holding the GIL, so no thread would spare the loop. This measures the CPU time one pair's
scoring takes (three servers: baseline, candidate, replica), with the servers' answers
already made (an in-process transport), so nothing but the proxy's own work is counted.
Each row is the median of 5 pairs.

    python bench/score_read_cost.py
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time

import httpx

from shadowdiff.answers.client import Upstream
from shadowdiff.answers.records import Answer
from shadowdiff.triage.scoring import TOP_K, Scorer, score_pair
from shadowdiff.vocabulary import Outcome, Side

from _common import pin, table

PROMPT_SHARE = 0.5   # half of the tokens are the prompt's, half the answer's


def _answers(tokens: int) -> dict[str, bytes]:
    """What a vLLM server answers for a prompt and answer of ``tokens`` tokens in all."""
    rng = random.Random(tokens)
    ids = [rng.randrange(150_000) for _ in range(tokens)]
    prompt = ids[:int(tokens * PROMPT_SHARE)]
    entries: list[dict[str, dict[str, object]] | None] = [None]
    for token in ids[1:]:
        top = {str(rng.randrange(150_000)): {"logprob": -rng.random() * 5, "rank": r + 2, "decoded_token": " word"}
               for r in range(TOP_K - 1)}
        entries.append({str(token): {"logprob": -0.05, "rank": 1, "decoded_token": " word"}, **top})
    return {"prompt": json.dumps({"tokens": prompt}).encode(), "full": json.dumps({"tokens": ids}).encode(),
            "logprobs": json.dumps({"choices": [{"text": "x", "prompt_logprobs": entries}]}).encode()}


def _transport(answers: dict[str, bytes]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/tokenize":
            asked = json.loads(request.content)
            return httpx.Response(200, content=answers["full" if asked.get("continue_final_message") else "prompt"])
        return httpx.Response(200, content=answers["logprobs"])
    return httpx.MockTransport(handle)


async def _one_pair(client: httpx.AsyncClient) -> float:
    scorer = Scorer(client)
    upstreams = [Upstream(side, f"http://{side.value}:8000", "m") for side in (Side.BASELINE, Side.CANDIDATE,
                                                                               Side.REPLICA)]
    answers = {side: Answer(side, "m", "an answer") for side in (Side.BASELINE, Side.CANDIDATE, Side.REPLICA)}
    body = {"messages": [{"role": "user", "content": "a question"}], "temperature": 0}
    started = time.process_time()
    found = await score_pair(scorer, "/v1/chat/completions", body, answers, upstreams, Outcome.DIVERGENT)
    spent = time.process_time() - started
    assert "agreement" in found["score"], found
    return spent


async def _measure(tokens: int) -> tuple[float, int]:
    answers = _answers(tokens)
    async with httpx.AsyncClient(transport=_transport(answers)) as client:
        times = [await _one_pair(client) for _ in range(5)]
    return statistics.median(times), len(answers["logprobs"])


def main() -> None:
    pin(0)
    rows = [("tokens (prompt + answer)", "prompt_logprobs per server", "loop time per pair (3 servers)",
             "per 1,000 tokens per server")]
    for tokens in (250, 1000, 2000, 4000):
        seconds, size = asyncio.run(_measure(tokens))
        rows.append((f"{tokens:,}", f"{size / 1e6:.2f} MB", f"{seconds * 1000:.0f} ms",
                     f"{seconds * 1000 / 3 / (tokens / 1000):.1f} ms"))
    print(table(rows))


if __name__ == "__main__":
    main()

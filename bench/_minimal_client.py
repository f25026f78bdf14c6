"""A reference point for bench/startup_cost.py: the leanest replay client we would write.

Reads a JSONL log of chat bodies, sends each to both servers at once (streamed, with
usage), ``concurrency`` prompts in flight, reads every SSE event as JSON, keeps each
answer's text and token count and writes them as JSONL. None of shadowdiff's work: no
preflight, no store, no comparison, no retries, no timing of arrivals.

    python bench/_minimal_client.py LOG OUT CONCURRENCY MAX_TOKENS LOGPROBS BASE_URL=MODEL CAND_URL=MODEL
"""

from __future__ import annotations

import asyncio
import sys

import aiohttp
import orjson


async def answer(session: aiohttp.ClientSession, side: str, body: dict[str, object]) -> tuple[str, int]:
    parts, tokens = [], 0
    url, _, model = side.partition("=")
    async with session.post(url + "/v1/chat/completions", json={**body, "model": model}) as response:
        async for line in response.content:
            if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                continue
            chunk = orjson.loads(line[6:])
            for choice in chunk.get("choices") or ():
                parts.append(choice["delta"].get("content") or "")
            tokens = (chunk.get("usage") or {}).get("completion_tokens", tokens)
    return "".join(parts), tokens


async def main(bodies: list[dict[str, object]], out: str, urls: list[str], concurrency: int, max_tokens: int,
               logprobs: int) -> None:
    extra = {"logprobs": True, "top_logprobs": logprobs} if logprobs else {}
    pending = iter(bodies)
    total = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency * 2)) as session:
        with open(out, "wb") as written:  # noqa: ASYNC230 (a local file, as the replay's store is)

            async def worker() -> None:
                nonlocal total
                for body in pending:
                    sent = {**body, **extra, "temperature": 0, "n": 1, "max_tokens": max_tokens, "stream": True,
                            "stream_options": {"include_usage": True}}
                    answers = await asyncio.gather(*(answer(session, url, sent) for url in urls))
                    total += sum(tokens for _, tokens in answers)
                    written.write(orjson.dumps([text for text, _ in answers]) + b"\n")

            await asyncio.gather(*(worker() for _ in range(concurrency)))
    print(total)


if __name__ == "__main__":
    log, out, concurrency, max_tokens, logprobs, *sides = sys.argv[1:]
    with open(log, "rb") as f:
        bodies = [orjson.loads(line) for line in f if line.strip()]
    asyncio.run(main(bodies, out, sides, int(concurrency), int(max_tokens), int(logprobs)))

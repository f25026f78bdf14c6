"""How fast is ``shadowdiff simulate`` with every delay at zero?

The simulator must never be what limits a benchmark of the proxy or the replay
client, so this measures its own ceiling on one core (the load generator runs on the
other): non-streamed requests per second, and streamed output tokens per second.

    python bench/simulator_ceiling.py [--seconds 5] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools

import httpx

from _common import pin, run_load, shadowdiff, table

PROMPTS = [f"Question {i}: explain {t} to a newcomer, with an example." for i, t in
           enumerate(["rivers", "taxes", "compilers", "gardens", "bridges", "clouds", "markets", "proteins"] * 64)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    pin(1)
    with shadowdiff("simulate", "--served-model-name", "bench", core=0) as url:
        rows = [("workload", "concurrency", "requests/s", "output tokens/s", "p50 ms", "p99 ms", "errors")]
        for name, body, stream in [
            ("chat, 16 tokens, not streamed", {"max_tokens": 16}, False),
            ("chat, 256 tokens, not streamed", {"max_tokens": 256, "ignore_eos": True}, False),
            ("chat, 256 tokens, streamed", {"max_tokens": 256, "ignore_eos": True}, True),
        ]:
            load = asyncio.run(run_load(_request(url, body, stream), concurrency=args.concurrency,
                                        seconds=args.seconds))
            rows.append((name, str(args.concurrency), f"{load.requests / load.seconds:,.0f}",
                         f"{load.units / load.seconds:,.0f}", f"{load.median * 1000:.2f}",
                         f"{load.percentile(99) * 1000:.2f}", str(load.errors)))
    print("shadowdiff simulate, zero delays, server pinned to one core, client on the other\n")
    print(table(rows))


def _request(url: str, body: dict[str, object], stream: bool):  # type: ignore[no-untyped-def]
    prompts = itertools.cycle(PROMPTS)

    async def one(client: httpx.AsyncClient) -> int:
        payload = {"model": "bench", "messages": [{"role": "user", "content": next(prompts)}],
                   "temperature": 0, **body}
        if not stream:
            r = await client.post(url + "/v1/chat/completions", json=payload)
            r.raise_for_status()
            return int(r.json()["usage"]["completion_tokens"])
        payload["stream"] = True
        tokens = 0
        async with client.stream("POST", url + "/v1/chat/completions", json=payload) as r:
            r.raise_for_status()
            async for piece in r.aiter_raw():
                tokens += piece.count(b'"delta":{"content"')
        return tokens - 1  # the final chunk carries the end of sequence, not a token

    return one


if __name__ == "__main__":
    main()

"""What the proxy costs a client, against zero-delay simulators, in one run.

Measured (targets from ../shared/DESIGN.md):

* added latency per request, proxied minus direct, p50 and p99, at concurrency 1
  (target: p50 ≤ 0.5 ms, p99 ≤ 2 ms) and 32; requests alternate direct/proxied so
  both see the same conditions;
* added time to first streamed token, p99 (target ≤ 1 ms);
* throughput through the proxy as a share of direct (target ≥ 50 %);
* the primary's p99 through the proxy with mirroring on versus off (target: on costs
  ≤ 5 %).

The upstreams are ``bench/_instant.py`` servers, which answer at once without work
(as in the design notes' measurements), so the figures are the proxy's, not a
simulator's. They and the load generator (aiohttp) run on one core, the proxy on the
other.

    python bench/proxy_overhead.py [--requests 2000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

import aiohttp

from proxy.shadow import first_content

from _common import instant, pin, shadowdiff, table

BODY = {"model": "bench", "messages": [{"role": "user", "content": "Explain rivers."}], "temperature": 0,
        "max_tokens": 16}
STREAM = {**BODY, "stream": True, "max_tokens": 64}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def timed_post(session: aiohttp.ClientSession, url: str, body: dict[str, object]) -> float:
    started = time.perf_counter()
    async with session.post(url + "/v1/chat/completions", json=body) as r:
        await r.read()
        assert r.status == 200, r.status
    return time.perf_counter() - started


async def ttft(session: aiohttp.ClientSession, url: str) -> float:
    started = time.perf_counter()
    first = None
    async with session.post(url + "/v1/chat/completions", json=STREAM) as r:
        async for chunk in r.content.iter_any():
            if first is None and first_content(chunk):
                first = time.perf_counter() - started
    return first if first is not None else time.perf_counter() - started


async def alternate(direct: str, proxied: str, requests: int, concurrency: int,
                    one: Callable[[aiohttp.ClientSession, str], Awaitable[float]]) -> tuple[list[float], list[float]]:
    """Latencies of ``requests`` calls each way, alternating, ``concurrency`` at a time."""
    results: dict[str, list[float]] = {direct: [], proxied: []}
    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    async with aiohttp.ClientSession(connector=connector) as session:
        for url in (direct, proxied):  # warm up both paths
            for _ in range(50):
                await one(session, url)
        per_worker = requests // concurrency

        async def worker() -> None:
            for _ in range(per_worker):
                for url in (direct, proxied):
                    results[url].append(await one(session, url))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results[direct], results[proxied]


async def throughput(url: str, seconds: float, concurrency: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(50):
            await timed_post(session, url, BODY)
        stop = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < stop:
                latencies.append(await timed_post(session, url, BODY))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(latencies) / seconds, latencies


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    pin(0)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        primary = stack.enter_context(instant(core=0))
        shadow = stack.enter_context(instant(core=0))
        plain = stack.enter_context(shadowdiff("serve", "--primary", primary, "--store", f"{tmp}/a", core=1))
        mirrored = stack.enter_context(shadowdiff("serve", "--primary", primary, "--shadow", shadow,
                                                  "--store", f"{tmp}/b", core=1))
        rows = [("measure", "direct", "proxied", "added", "target")]
        for concurrency in (1, 32):
            d, p = asyncio.run(alternate(primary, plain, args.requests, concurrency,
                                         lambda s, u: timed_post(s, u, BODY)))
            for q, target in ((50, "≤ 0.5 ms" if concurrency == 1 else ""),
                              (99, "≤ 2 ms" if concurrency == 1 else "")):
                rows.append((f"latency p{q} ms, concurrency {concurrency}", ms(pct(d, q)), ms(pct(p, q)),
                             ms(pct(p, q) - pct(d, q)), target))
            rows.append((f"latency mean ms, concurrency {concurrency}", ms(statistics.mean(d)),
                         ms(statistics.mean(p)), ms(statistics.mean(p) - statistics.mean(d)), ""))
        d, p = asyncio.run(alternate(primary, plain, args.requests // 4, 1, ttft))
        rows.append(("time to first token p50 ms", ms(pct(d, 50)), ms(pct(p, 50)), ms(pct(p, 50) - pct(d, 50)), ""))
        rows.append(("time to first token p99 ms", ms(pct(d, 99)), ms(pct(p, 99)), ms(pct(p, 99) - pct(d, 99)),
                     "≤ 1 ms"))
        direct_rps, _ = asyncio.run(throughput(primary, args.seconds, 32))
        proxied_rps, off = asyncio.run(throughput(plain, args.seconds, 32))
        _, on = asyncio.run(throughput(mirrored, args.seconds, 32))
        print("shadowdiff serve vs direct, instant upstreams and client on core 0, proxy on core 1\n")
        print(table(rows))
        print()
        print(table([
            ("throughput, concurrency 32", "requests/s"),
            ("direct", f"{direct_rps:,.0f}"),
            ("through the proxy", f"{proxied_rps:,.0f}  ({100 * proxied_rps / direct_rps:.0f} % of direct; "
                                  "target ≥ 50 %)"),
        ]))
        print()
        print(table([
            ("primary through the proxy, concurrency 32", "p50 ms", "p99 ms"),
            ("mirroring off", ms(pct(off, 50)), ms(pct(off, 99))),
            ("mirroring on", ms(pct(on, 50)), ms(pct(on, 99))),
            ("on / off", f"{pct(on, 50) / pct(off, 50):.2f}", f"{pct(on, 99) / pct(off, 99):.2f}  (target ≤ 1.05)"),
        ]))


if __name__ == "__main__":
    main()

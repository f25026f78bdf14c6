"""Shared helpers for the benchmarks: processes pinned to cores, load loops, figures."""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import IO

import httpx
from httpx_aiohttp import AiohttpTransport

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.servers import free_port, wait_ready  # noqa: E402


def pin(core: int) -> None:
    """Pin this process to one core, when the machine has more than one."""
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {core % (os.cpu_count() or 1)})


@contextlib.contextmanager
def shadowdiff(*args: str, core: int = 0) -> Iterator[str]:
    """Run ``shadowdiff <args>`` on its own core; yields its base URL."""
    port = free_port()
    with server([sys.executable, "-m", "shadowdiff", *args, "--port", str(port)], port, core) as url:
        yield url


@contextlib.contextmanager
def instant(core: int = 0, answer: str | None = None) -> Iterator[str]:
    """Run bench/_instant.py (an upstream that does no work) on a core, giving ``answer``
    (its kinds of answer: see that file) if named; yields its URL."""
    port = free_port()
    with server([sys.executable, os.path.join(ROOT, "bench", "_instant.py"), str(port),
                 *([answer] if answer else [])], port, core, ready="/") as url:
        yield url


@contextlib.contextmanager
def server(cmd: list[str], port: int, core: int, ready: str = "/health") -> Iterator[str]:
    """Run a server process pinned to ``core``; yields its URL once ``ready`` answers."""
    with started(cmd, port, core, ready) as (_, url):
        yield url


@contextlib.contextmanager
def started(cmd: list[str], port: int, core: int, ready: str = "/health",
            stderr: IO[bytes] | int = subprocess.DEVNULL) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``server``, yielding the process too (its pid is the server's: taskset execs it)."""
    if (os.cpu_count() or 1) > 1:
        cmd = ["taskset", "-c", str(core % (os.cpu_count() or 1)), *cmd]
    process = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + ready, process)
        yield process, url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@dataclass
class Load:
    """Results of running a request coroutine at a fixed concurrency for a while."""

    seconds: float = 0.0
    requests: int = 0
    units: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    @property
    def median(self) -> float:
        return statistics.median(self.latencies) if self.latencies else float("nan")


async def run_load(one: Callable[[httpx.AsyncClient], Awaitable[int]], *, concurrency: int,
                   seconds: float, warmup: float = 1.0) -> Load:
    """Call ``one`` from ``concurrency`` workers; ``one`` returns the units it produced."""
    load = Load()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    # httpx's own pool contends badly at high concurrency (154 vs 842 requests/s at 32
    # here); its aiohttp transport keeps the load generator out of the figures.
    async with httpx.AsyncClient(transport=AiohttpTransport(limits=limits), timeout=60) as client:
        start = time.perf_counter()
        measure_from = start + warmup
        stop_at = measure_from + seconds

        async def worker() -> None:
            while True:
                began = time.perf_counter()
                if began >= stop_at:
                    return
                try:
                    units = await one(client)
                except httpx.HTTPError:
                    load.errors += 1
                    continue
                ended = time.perf_counter()
                if began >= measure_from:
                    load.requests += 1
                    load.units += units
                    load.latencies.append(ended - began)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        load.seconds = seconds
    return load


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)

"""``shadowdiff bench``: how much faster is the candidate, at each concurrency?

The question behind an FP8 rollout is two: did the answers change (``replay``), and
is it really faster on *our* prompts (this). For each concurrency level, each side in
turn (never both at once, so that two servers sharing a host do not slow each other)
gets a short warm-up and then ``requests`` streamed requests, ``concurrency`` in
flight, with the same prompts, decoding and ``max_tokens``. Per side and level:
requests/s, output tokens/s (the aggregate the GPU delivers), time to first token and
latency percentiles, and the candidate/baseline ratios.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from shadowdiff.answers.arrivals import answers_session
from shadowdiff.answers.client import Caller, RetryPolicy, Upstream
from shadowdiff.answers.records import Answer
from shadowdiff.errors import InputError
from shadowdiff.replay import logs
from shadowdiff.replay.runner import Overrides, ReplaySettings
from shadowdiff.statistics.percentile import nearest_rank


@dataclass(frozen=True)
class Level:
    """One side at one concurrency."""

    side: str
    concurrency: int
    requests: int
    errors: int
    seconds: float
    output_tokens: int
    ttft_p50: float | None
    ttft_p95: float | None
    latency_p50: float | None
    latency_p95: float | None
    # where the output token counts came from (``records.TOKEN_SOURCES``: "usage" from vLLM;
    # "stream" pieces from a server that sends no usage, a lower bound), answers per source
    token_sources: dict[str, int] = field(default_factory=dict)

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.output_tokens / self.seconds if self.seconds else 0.0

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "requests_per_second": self.requests_per_second,
                "tokens_per_second": self.tokens_per_second}


def _percentile(values: Sequence[float], p: float) -> float | None:
    ordered = sorted(values)
    return ordered[nearest_rank(len(ordered), p)] if ordered else None


def prompts(settings: ReplaySettings, fmt: logs.LogFormat) -> list[logs.LogRecord]:
    records = [r for r in logs.read(settings.log, fmt, turn=settings.turn, endpoint=settings.endpoint)
               if isinstance(r, logs.LogRecord)]
    if not records:
        raise InputError(f"{settings.log} holds no usable request")
    return records


async def measure(caller: Caller, upstream: Upstream, records: list[logs.LogRecord], overrides: Overrides,
                  concurrency: int, requests: int) -> Level:
    """``requests`` requests (cycling through ``records``), ``concurrency`` at a time."""
    bodies = itertools.cycle([(r.endpoint, overrides.apply(r.endpoint, r.body)) for r in records])
    work = [next(bodies) for _ in range(requests)]
    # a warm-up wave, not measured: connections, and the server's first-request costs
    await asyncio.gather(*(caller.call(upstream, path, body) for path, body in work[:concurrency]))
    answers: list[Answer] = []
    queue = iter(work)

    async def worker() -> None:
        for path, body in queue:   # one shared iterator: each request is taken once
            answers.append(await caller.call(upstream, path, body))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - started
    ok = [a for a in answers if a.ok]
    ttfts = [a.ttft for a in ok if a.ttft is not None]
    durations = [a.duration for a in ok if a.duration is not None]
    return Level(upstream.side.value, concurrency, len(answers), len(answers) - len(ok), seconds,
                 sum(a.completion_tokens or 0 for a in ok), _percentile(ttfts, 50), _percentile(ttfts, 95),
                 _percentile(durations, 50), _percentile(durations, 95),
                 dict(Counter(a.token_source or "none" for a in ok)))


def run_bench(settings: ReplaySettings, fmt: logs.LogFormat, levels: Sequence[int], requests: int,
              progress: Callable[[Level], None] = lambda _: None) -> list[Level]:
    records = prompts(settings, fmt)

    async def run() -> list[Level]:
        async with answers_session(max(levels) * 2, settings.timeout) as session:
            # a retry would hide what the server did
            caller = Caller(session, RetryPolicy(attempts=1), settings.timeout)
            results = []
            for concurrency in levels:
                for upstream in (settings.baseline, settings.candidate):
                    level = await measure(caller, upstream, records, settings.overrides, concurrency,
                                          max(requests, concurrency))
                    progress(level)
                    results.append(level)
            return results

    return asyncio.run(run())


def ratios(results: Sequence[Level]) -> list[dict[str, Any]]:
    """Candidate over baseline, per concurrency: >1 is faster for throughput, <1 for times."""
    by = {(r.side, r.concurrency): r for r in results}
    out = []
    for concurrency in sorted({r.concurrency for r in results}):
        base, cand = by.get(("baseline", concurrency)), by.get(("candidate", concurrency))
        if base is None or cand is None:
            continue
        out.append({
            "concurrency": concurrency,
            "tokens_per_second": cand.tokens_per_second / base.tokens_per_second if base.tokens_per_second else None,
            "ttft_p50": _ratio(cand.ttft_p50, base.ttft_p50),
            "latency_p50": _ratio(cand.latency_p50, base.latency_p50),
        })
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def table(results: Sequence[Level]) -> str:
    """The figures as a plain-text table, then the speedups."""

    def ms(value: float | None) -> str:
        return "—" if value is None else f"{1000 * value:,.0f}"

    rows = [("concurrency", "side", "requests", "errors", "req/s", "output tok/s", "TTFT p50 ms", "TTFT p95 ms",
             "latency p50 ms", "latency p95 ms")]
    rows += [(str(r.concurrency), r.side, str(r.requests), str(r.errors), f"{r.requests_per_second:,.2f}",
              f"{r.tokens_per_second:,.0f}", ms(r.ttft_p50), ms(r.ttft_p95), ms(r.latency_p50), ms(r.latency_p95))
             for r in results]
    text = _columns(rows)
    speed = [("concurrency", "candidate/baseline output tok/s", "TTFT p50", "latency p50")]
    speed += [(str(r["concurrency"]), _x(r["tokens_per_second"]), _x(r["ttft_p50"]), _x(r["latency_p50"]))
              for r in ratios(results)]
    return text + "\n\n" + _columns(speed)


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _columns(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)

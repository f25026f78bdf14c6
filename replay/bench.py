"""``shadowdiff bench``: how much faster is the candidate, at each concurrency?

The question behind an FP8 rollout is two: did the answers change (``replay``), and
is it really faster on *our* prompts (this). For each concurrency level, each side gets a
warm-up wave, then both are measured in ``rounds``, alternated - A then B, B then A, A
then B... - each round ``requests`` streamed requests per side, ``concurrency`` in flight,
with the same prompts, decoding and ``max_tokens``. Never both at once (two servers
sharing a host would slow each other); the alternation puts a drift of the machine's pace
(another job starting, a thermal limit) on both sides alike, where one window per side
put it on one. Per side and level: requests/s, output tokens/s, time to first token and
latency percentiles (nearest rank, over every round's answers). Per level, the
candidate/baseline ratios - each round's, then their geometric mean with a 99 % interval
(``shadowdiff.statistics.rounds``) - and a verdict that calls a difference only where the
interval leaves out 1.0.
"""

from __future__ import annotations

import asyncio
import math
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
from shadowdiff.statistics.confidence import Interval
from shadowdiff.statistics.percentile import nearest_rank
from shadowdiff.statistics.rounds import ERRORS, MIN_ROUNDS, UNEQUAL, call, geometric_mean, ratio_interval

MIN_FOR_P95 = 20    # answers: below, the nearest-rank p95 is the largest value, and is not given
# The confidence of a ratio's interval, on which a side is called faster or slower: 99 %, not
# 95 %. A rollout is decided on the call, and rounds on a shared machine are not quite
# independent: one server against itself on a loaded 2-core machine (llama.cpp, 12 rounds)
# read 1.04x [1.01, 1.08] at 95 %, "faster", once in three runs; [0.99, 1.09] at 99 %. A real
# speedup keeps its call: F16 -> Q4_0 there, 1.44x, [1.39, 1.50] at 95 %, [1.36, 1.53] at 99 %.
CONFIDENCE = 0.99


@dataclass(frozen=True)
class Round:
    """One side's requests in one round."""

    seconds: float
    output_tokens: int
    ttfts: tuple[float, ...]
    durations: tuple[float, ...]
    answered: int = 0    # the requests that answered (the rest failed)

    @property
    def tokens_per_second(self) -> float:
        return self.output_tokens / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Level:
    """One side at one concurrency, every round together."""

    side: str
    concurrency: int
    requests: int
    errors: int
    seconds: float
    output_tokens: int
    ttft_p50: float | None
    ttft_p95: float | None      # None below ``MIN_FOR_P95`` answers
    latency_p50: float | None
    latency_p95: float | None
    # where the output token counts came from (``records.TOKEN_SOURCES``: "usage" from vLLM;
    # "stream" pieces from a server that sends no usage, a lower bound), answers per source
    token_sources: dict[str, int] = field(default_factory=dict)
    rounds: tuple[Round, ...] = ()

    @property
    def requests_per_second(self) -> float:
        """Answered requests a second (a failed request is no work done)."""
        return (self.requests - self.errors) / self.seconds if self.seconds else 0.0

    @property
    def tokens_per_answer(self) -> float | None:
        answered = sum(r.answered for r in self.rounds)
        return self.output_tokens / answered if answered else None

    @property
    def tokens_per_second(self) -> float:
        return self.output_tokens / self.seconds if self.seconds else 0.0

    @property
    def answers(self) -> int:
        return sum(len(r.durations) for r in self.rounds)

    def as_json(self) -> dict[str, Any]:
        figures = {k: v for k, v in asdict(self).items() if k != "rounds"}
        return {**figures, "rounds": len(self.rounds), "requests_per_round": self.requests // max(1, len(self.rounds)),
                "requests_per_second": self.requests_per_second,
                "tokens_per_second": self.tokens_per_second, "tokens_per_answer": self.tokens_per_answer,
                "round_tokens_per_second": [r.tokens_per_second for r in self.rounds]}


def _percentile(values: Sequence[float], p: float) -> float | None:
    if not values or (p > 50 and len(values) < MIN_FOR_P95):
        return None
    ordered = sorted(values)
    return ordered[nearest_rank(len(ordered), p)]


def prompts(settings: ReplaySettings, fmt: logs.LogFormat) -> list[logs.LogRecord]:
    records = [r for r in logs.read(settings.log, fmt, turn=settings.turn, endpoint=settings.endpoint)
               if isinstance(r, logs.LogRecord)]
    if not records:
        raise InputError(f"{settings.log} holds no usable request")
    return records


async def measure(caller: Caller, upstream: Upstream, work: list[tuple[str, dict[str, Any]]],
                  concurrency: int) -> tuple[Round, list[Answer]]:
    """One round of one side: ``work``'s requests, ``concurrency`` at a time."""
    answers: list[Answer] = []
    queue = iter(work)

    async def worker() -> None:
        for path, body in queue:   # one shared iterator: each request is taken once
            answers.append(await caller.call(upstream, path, body))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - started
    ok = [a for a in answers if a.ok]
    return Round(seconds, sum(a.completion_tokens or 0 for a in ok), tuple(a.ttft for a in ok if a.ttft is not None),
                 tuple(a.duration for a in ok if a.duration is not None), len(ok)), answers


def level(side: str, concurrency: int, rounds: list[Round], answers: list[Answer]) -> Level:
    """A side's figures at one level, from its rounds."""
    ok = [a for a in answers if a.ok]
    ttfts = [t for r in rounds for t in r.ttfts]
    durations = [d for r in rounds for d in r.durations]
    return Level(side, concurrency, len(answers), len(answers) - len(ok), sum(r.seconds for r in rounds),
                 sum(r.output_tokens for r in rounds), _percentile(ttfts, 50), _percentile(ttfts, 95),
                 _percentile(durations, 50), _percentile(durations, 95),
                 dict(Counter(a.token_source or "none" for a in ok)), tuple(rounds))


async def measure_level(caller: Caller, sides: Sequence[Upstream], records: list[logs.LogRecord],
                        overrides: Overrides, concurrency: int, requests: int, rounds: int) -> list[Level]:
    """Both sides at one level: a warm-up wave each, then ``rounds`` alternated rounds."""
    bodies = [(r.endpoint, overrides.apply(r.endpoint, r.body)) for r in records]

    def work(r: int) -> list[tuple[str, dict[str, Any]]]:
        """Round ``r``'s requests, the same for both sides: the log's next ones, from its start
        again once it runs out (every round the same prompt would bench one prompt, not the log)."""
        return [bodies[(r * requests + i) % len(bodies)] for i in range(requests)]

    for upstream in sides:   # a warm-up wave, not measured: connections, and the server's first-request costs
        await asyncio.gather(*(caller.call(upstream, path, body) for path, body in work(0)[:concurrency]))
    measured: dict[str, tuple[list[Round], list[Answer]]] = {u.side.value: ([], []) for u in sides}
    for r in range(rounds):
        for upstream in sides if r % 2 == 0 else tuple(reversed(sides)):
            one, answers = await measure(caller, upstream, work(r), concurrency)
            measured[upstream.side.value][0].append(one)
            measured[upstream.side.value][1].extend(answers)
    return [level(u.side.value, concurrency, *measured[u.side.value]) for u in sides]


def run_bench(settings: ReplaySettings, fmt: logs.LogFormat, levels: Sequence[int], requests: int | None,
              progress: Callable[[Level], None] = lambda _: None, rounds: int = 12) -> list[Level]:
    """Both sides at each level in ``levels``, ``rounds`` rounds of ``requests`` each (None:
    the level's concurrency, one wave)."""
    records = prompts(settings, fmt)

    async def run() -> list[Level]:
        async with answers_session(max(levels) * 2, settings.timeout) as session:
            # a retry would hide what the server did
            caller = Caller(session, RetryPolicy(attempts=1), settings.timeout)
            results = []
            for concurrency in levels:
                for measured in await measure_level(caller, (settings.baseline, settings.candidate), records,
                                                    settings.overrides, concurrency,
                                                    max(requests or concurrency, concurrency),
                                                    rounds):
                    progress(measured)
                    results.append(measured)
            return results

    return asyncio.run(run())


LENGTHS_APART = 1.1   # tokens per answer, candidate over baseline, beyond which lengths are unequal


# what a round's ratio is taken of, per figure; and whether a higher value is faster
_FIGURES: tuple[tuple[str, Callable[[Round], float | None], bool], ...] = (
    ("tokens_per_second", lambda r: r.tokens_per_second, True),
    ("ttft_p50", lambda r: _percentile(r.ttfts, 50), False),
    ("latency_p50", lambda r: _percentile(r.durations, 50), False),
)


def _round_ratio(base: Round, cand: Round, figure: Callable[[Round], float | None]) -> float | None:
    """One round's candidate/baseline ratio of ``figure``; None where a side has none."""
    b, c = figure(base) or 0.0, figure(cand) or 0.0
    return c / b if b > 0 and c > 0 else None


def verdict(interval: Interval | None, higher_is_faster: bool) -> str:
    return call(None if interval is None else (interval.low, interval.high), higher_is_faster)


def ratios(results: Sequence[Level]) -> list[dict[str, Any]]:
    """Candidate over baseline, per concurrency, with their intervals and verdicts: >1 is
    faster for throughput, <1 for times."""
    by = {(r.side, r.concurrency): r for r in results}
    out = []
    for concurrency in sorted({r.concurrency for r in results}):
        base, cand = by.get(("baseline", concurrency)), by.get(("candidate", concurrency))
        if base is None or cand is None:
            continue
        paired = list(zip(base.rounds, cand.rounds, strict=True))
        lengths = (cand.tokens_per_answer / base.tokens_per_answer
                   if base.tokens_per_answer and cand.tokens_per_answer else None)
        entry: dict[str, Any] = {"concurrency": concurrency, "rounds": len(paired), "confidence": CONFIDENCE,
                                 "errors": base.errors + cand.errors, "length_ratio": lengths}
        unequal = lengths is not None and abs(math.log(lengths)) > math.log(LENGTHS_APART)
        for name, figure, higher in _FIGURES:
            each = [_round_ratio(b, c, figure) for b, c in paired]
            known = [r for r in each if r is not None]
            whole = bool(known) and len(known) == len(each)     # (a round without the figure: no ratio at all)
            interval = ratio_interval(known, CONFIDENCE) if whole else None
            entry[name] = geometric_mean(known) if whole else None
            entry[f"{name}_interval"] = [interval.low, interval.high] if interval is not None else None
            entry[f"{name}_verdict"] = (ERRORS if entry["errors"] else UNEQUAL if unequal and name != "ttft_p50"
                                        else verdict(interval, higher))
        out.append(entry)
    return out


def table(results: Sequence[Level]) -> str:
    """The figures as a plain-text table, then the speedups with their intervals."""

    def ms(value: float | None, n: int) -> str:
        if value is None:
            return f"n<{MIN_FOR_P95}" if n else "—"
        return f"{1000 * value:,.0f}"

    rows = [("concurrency", "side", "requests", "errors", "req/s", "output tok/s", "TTFT p50 ms", "TTFT p95 ms",
             "latency p50 ms", "latency p95 ms")]
    rows += [(str(r.concurrency), r.side, str(r.requests), str(r.errors), f"{r.requests_per_second:,.2f}",
              f"{r.tokens_per_second:,.0f}", ms(r.ttft_p50, 0), ms(r.ttft_p95, r.answers), ms(r.latency_p50, 0),
              ms(r.latency_p95, r.answers)) for r in results]
    text = _columns(rows)
    speed = [("concurrency", "rounds", f"candidate/baseline output tok/s [{CONFIDENCE * 100:.0f} % interval]",
              "verdict", "TTFT p50", "verdict", "latency p50", "verdict")]
    for r in ratios(results):
        speed.append((str(r["concurrency"]), str(r["rounds"]),
                      _x(r["tokens_per_second"], r["tokens_per_second_interval"]), r["tokens_per_second_verdict"],
                      _x(r["ttft_p50"], r["ttft_p50_interval"]), r["ttft_p50_verdict"],
                      _x(r["latency_p50"], r["latency_p50_interval"]), r["latency_p50_verdict"]))
    notes = [f"(each ratio is the geometric mean of the rounds' ratios, its {CONFIDENCE * 100:.0f} % interval "
             "Student's t over them; it is called faster or slower only where that interval leaves out 1.00; an "
             f"interval needs {MIN_ROUNDS} rounds or more; a p95 needs {MIN_FOR_P95} answers or more)"]
    for r in ratios(results):
        if r["errors"]:
            notes.append(f"(concurrency {r['concurrency']}: {r['errors']} requests failed, so its rounds timed less "
                         "work on one side than on the other: no call)")
        elif r["tokens_per_second_verdict"] == UNEQUAL:
            notes.append(f"(concurrency {r['concurrency']}: the candidate's answers are {r['length_ratio']:.2f}x the "
                         "baseline's length in tokens, so tokens/s favours the longer and latency the shorter: no "
                         "call on them; on vLLM, --extra-body ignore_eos=true makes every answer max_tokens long)")
    return text + "\n\n" + _columns(speed) + "\n" + "\n".join(notes)


def _x(value: float | None, interval: list[float] | None = None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}x" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval is not None else "")


def _columns(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)

"""What the report's plots cost: their size, and the time to build them.

Fills a SQLite store (in a temporary directory) with a replay run of ``--pairs`` pairs
drawn like a quantization change with a replica beside it: most pairs identical or
equivalent, a few near and divergent, 2 % failed; 30 categories, token positions,
timings per side, and teacher-forced scores. Then builds the plots from the store and
the run's summary (the report computes the summary anyway; its time is shown apart),
best of 3, and prints each plot's size.

    python bench/report_plots.py [--pairs 10000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace

from shadowdiff.answers.compare import Comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.report.plots import report_plots
from shadowdiff.report.summary import summarize
from shadowdiff.store import Store
from shadowdiff.vocabulary import Outcome, Side

from _common import table

OUTCOME_WEIGHTS = {Outcome.IDENTICAL: 45, Outcome.EQUIVALENT: 20, Outcome.NEAR: 20, Outcome.DIVERGENT: 13,
                   Outcome.ERROR: 2}
NOISE_WEIGHTS = {Outcome.IDENTICAL: 70, Outcome.EQUIVALENT: 15, Outcome.NEAR: 10, Outcome.DIVERGENT: 5}


def _comparison(rng: random.Random, outcome: Outcome) -> Comparison:
    if outcome is Outcome.ERROR:
        return Comparison(outcome, None, None, None, None, None)
    similarity = {Outcome.IDENTICAL: 1.0, Outcome.EQUIVALENT: 0.99, Outcome.NEAR: rng.uniform(0.9, 1.0),
                  Outcome.DIVERGENT: rng.betavariate(5, 2) * 0.9}[outcome]
    token = None if outcome is Outcome.IDENTICAL else int(rng.expovariate(1 / 60))
    return Comparison(outcome, similarity, None, None if token is None else token * 4, token, 1.0)


def _answer(rng: random.Random, side: Side, failed: bool = False) -> Answer:
    ttft = rng.lognormvariate(-2.5, 0.4) * (0.8 if side is Side.CANDIDATE else 1.0)
    return Answer(side, "m", "an answer", ttft=ttft, duration=ttft + rng.lognormvariate(1.0, 0.5),
                  error="HTTP 500" if failed else None, status=500 if failed else 200)


def _score(rng: random.Random, floor: float) -> dict[str, object]:
    tokens = rng.randrange(20, 256)
    agreed = tokens - min(tokens, int(rng.expovariate(1 / floor)))
    return {"agreement": agreed / tokens, "tokens": tokens, "agreed": agreed}


def fill(store: Store, pairs: int, seed: int = 21) -> str:
    from tests.support.bigstore import stored_run  # once _common has put the repository on the path

    return stored_run(store, {"thresholds": {"near": 0.9}}, _pairs(random.Random(seed), pairs))


def _pairs(rng: random.Random, pairs: int) -> Iterator[Pair]:
    for i in range(pairs):
        outcome = rng.choices(list(OUTCOME_WEIGHTS), list(OUTCOME_WEIGHTS.values()))[0]
        noise = rng.choices(list(NOISE_WEIGHTS), list(NOISE_WEIGHTS.values()))[0]
        answers = {Side.BASELINE: _answer(rng, Side.BASELINE),
                   Side.CANDIDATE: _answer(rng, Side.CANDIDATE, failed=outcome is Outcome.ERROR),
                   Side.REPLICA: _answer(rng, Side.REPLICA)}
        pair = Pair(f"k{i}", i, "/v1/chat/completions", f"prompt {i}", {}, _comparison(rng, outcome), answers,
                    category=f"category {int(rng.paretovariate(1.2)) % 30:02d}", noise=_comparison(rng, noise),
                    score=_score(rng, 3.0), noise_score=_score(rng, 1.5))
        yield replace(pair, comparable=rng.random() > 0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = Store.open(directory)
        run = fill(store, args.pairs)
        started = time.perf_counter()
        summary = summarize(store, run)
        summarized = time.perf_counter() - started
        times = []
        for _ in range(3):
            started = time.perf_counter()
            plots = report_plots(store, run, summary)
            times.append(time.perf_counter() - started)
        store.close()
    rows = [("plot", "SVG size")] + [(p.id, f"{len(p.svg.encode()) / 1000:.1f} KB") for p in plots]
    rows.append(("all", f"{sum(len(p.svg.encode()) for p in plots) / 1000:.1f} KB"))
    print(table(rows))
    print(f"\n{args.pairs:,} pairs: plots built in {min(times) * 1000:.0f} ms (best of 3); "
          f"the summary they take in {summarized * 1000:.0f} ms")


if __name__ == "__main__":
    main()

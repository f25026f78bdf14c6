"""What the report's plots cost: their size, and the time to build them; and how their
time and memory grow with the run, against a reference version of the code.

Sizes: fills a SQLite store (in a temporary directory) with a replay run of ``--pairs``
pairs drawn like a quantization change with a replica beside it: most pairs identical or
equivalent, a few near and divergent, 2 % failed; 30 categories, token positions,
timings per side, and teacher-forced scores. Then builds the plots from the store and
the run's summary (the report computes the summary anyway; its time is shown apart),
best of 3, and prints each plot's size.

    python bench/report_plots.py [--pairs 10000]

Growth (``--growth``): feeds ``--rows`` plot rows (store.plotrows' ``PlotRow``, drawn as
above, the same rows for every version) straight to the plots' builder, in a process of
its own per measurement: the CPU it takes (``time.process_time``, less the CPU to draw the
rows alone), and the peak of Python's allocations while it runs (``tracemalloc``, in a
second process: tracing slows it). The versions: this tree and a reference tree
(``--reference``, a checkout of the code before, e.g. ``git worktree add /tmp/ref main``),
the reference twice (the control: how far two runs of one version differ), in
interleaved rounds.

    python bench/report_plots.py --growth --reference /tmp/ref [--rows 10000,100000,1000000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
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


# Run in a process of its own with one version's tree first on its path: the plots'
# parts that grow with the rows (the one pass, the CDFs and the histogram), as
# report_plots runs them; the outcomes and categories plots draw the summary alone.
_MEASURE = r"""
import json, random, sys, time, tracemalloc
from shadowdiff.report import plots
from shadowdiff.store.plotrows import PlotRow
from shadowdiff.vocabulary import Outcome

rows, mode = int(sys.argv[1]), sys.argv[2]
OUTCOMES = [Outcome.IDENTICAL, Outcome.EQUIVALENT, Outcome.NEAR, Outcome.DIVERGENT, Outcome.ERROR]
WEIGHTS = [45, 20, 20, 13, 2]
FIELDS = set(PlotRow._fields)

def drawn():
    rng = random.Random(21)
    for i in range(rows):
        outcome, noise = rng.choices(OUTCOMES, WEIGHTS)[0], rng.choices(OUTCOMES[:4], [70, 15, 10, 5])[0]
        changed = outcome in (Outcome.NEAR, Outcome.DIVERGENT)
        ttft = [rng.lognormvariate(-2.5, 0.4) for _ in range(3)]
        row = {"id": i + 1, "comparable": rng.random() > 0.05, "outcome": outcome,
               "similarity": rng.uniform(0.5, 1.0) if changed else 1.0, "noise_outcome": noise,
               "noise_similarity": rng.uniform(0.5, 1.0), "first_token": int(rng.expovariate(1 / 60)) if changed
               else None, "first_char": int(rng.expovariate(1 / 240)) if changed else None,
               "baseline_ttft": ttft[0], "candidate_ttft": None if outcome is Outcome.ERROR else ttft[1],
               "replica_ttft": ttft[2], "baseline_duration": ttft[0] + rng.lognormvariate(1.0, 0.5),
               "candidate_duration": None if outcome is Outcome.ERROR else ttft[1] + rng.lognormvariate(1.0, 0.5),
               "replica_duration": ttft[2] + rng.lognormvariate(1.0, 0.5)}
        yield PlotRow(**{k: v for k, v in row.items() if k in FIELDS})

def build():
    data = plots._collect(drawn())
    return [plots._similarity(data, 0.9), plots._divergence(data),
            plots._timing("plot-ttft", "t", data.ttft, "time to first token", ""),
            plots._timing("plot-latency", "l", data.duration, "time for the whole answer", "")]

if mode == "feed":
    started = time.process_time()
    for _ in drawn():
        pass
    print(json.dumps({"cpu": time.process_time() - started}))
elif mode == "cpu":
    started = time.process_time()
    built = build()
    print(json.dumps({"cpu": time.process_time() - started, "svg": sum(len(p.svg) for p in built)}))
else:
    tracemalloc.start()
    build()
    print(json.dumps({"peak": tracemalloc.get_traced_memory()[1]}))
"""


def _measure(tree: str, rows: int, mode: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(rows), mode], env=env, capture_output=True,
                          text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(done.stdout)


def growth(reference: str, sizes: list[int], rounds: int) -> None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    versions = {"reference": reference, "reference again (control)": reference, "this tree": here}
    cpu: dict[tuple[str, int], list[float]] = {}
    peak: dict[tuple[str, int], list[float]] = {}
    feed: dict[int, list[float]] = {}
    for _ in range(rounds):
        for rows in sizes:
            feed.setdefault(rows, []).append(_measure(here, rows, "feed")["cpu"])
            for name, tree in versions.items():   # interleaved: each round runs every version in turn
                cpu.setdefault((name, rows), []).append(_measure(tree, rows, "cpu")["cpu"])
                peak.setdefault((name, rows), []).append(_measure(tree, rows, "memory")["peak"])
    out = [("rows", "version", "CPU, s (median)", "ratio to reference", "peak traced, MB", "ratio to reference")]
    for rows in sizes:
        base_feed = statistics.median(feed[rows])
        ref_cpu = statistics.median(cpu[("reference", rows)]) - base_feed
        ref_peak = statistics.median(peak[("reference", rows)])
        for name in versions:
            c = statistics.median(cpu[(name, rows)]) - base_feed
            m = statistics.median(peak[(name, rows)])
            out.append((f"{rows:,}", name, f"{c:.2f}", f"{c / ref_cpu:.2f}", f"{m / 1e6:.1f}", f"{m / ref_peak:.2f}"))
    print(table(out))
    print(f"\n(CPU less the {statistics.median(feed[sizes[-1]]):.2f} s it takes to draw {sizes[-1]:,} rows alone; "
          f"medians of {rounds} round(s))")
    if len(sizes) > 1:
        small, large = sizes[-2], sizes[-1]
        per = [("version", f"CPU per 1M rows (from {small:,} to {large:,})", "peak growth per 1M rows, MB",
                "peak at 10M rows, MB (extrapolated)")]
        for name in versions:
            dc = ((statistics.median(cpu[(name, large)]) - statistics.median(feed[large]))
                  - (statistics.median(cpu[(name, small)]) - statistics.median(feed[small]))) / (large - small) * 1e6
            dm = (statistics.median(peak[(name, large)]) - statistics.median(peak[(name, small)])) / (large - small)
            at10m = statistics.median(peak[(name, large)]) + dm * (10_000_000 - large)
            per.append((name, f"{dc:.2f} s", f"{dm:.1f}", f"{at10m / 1e6:.0f}"))
        print()
        print(table(per))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--growth", action="store_true", help="time and memory against --reference, by --rows")
    parser.add_argument("--reference", help="the reference version's source tree (with growth)")
    parser.add_argument("--rows", default="10000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.growth:
        if not args.reference:
            parser.error("--growth needs --reference")
        growth(args.reference, [int(n) for n in args.rows.split(",")], args.rounds)
        return
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

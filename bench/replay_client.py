"""How fast is the replay client, and does its memory stay flat as the log grows?

Two zero-delay simulators (baseline, fp8) run on one core; the replay client runs on
the other. Printed: streamed output tokens per second the client sustains, per wall
second and per CPU second of the client (the target is 20,000 per core), with and
without logprobs; then peak memory (RSS) of whole ``shadowdiff replay`` runs over
logs of different lengths, and of ``shadowdiff report`` over stored runs of those
sizes with 40 % of pairs changed (the reports' heavy case: every changed pair is
diffed and written side by side).

    python bench/replay_client.py [--prompts 600] [--memory-lines 10000,100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shadowdiff.answers.client import Upstream
from shadowdiff.answers.compare import compare
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.replay import logs
from shadowdiff.replay.runner import Overrides, Replay, ReplaySettings
from shadowdiff.store import Store
from shadowdiff.triage.signals import triage_answers
from shadowdiff.vocabulary import Side

from _common import ROOT, pin, shadowdiff, table


def write_log(path: Path, lines: int, max_tokens: int) -> None:
    with path.open("w") as f:
        for i in range(lines):
            body = {"messages": [{"role": "user", "content": f"Question {i}: explain topic {i % 97} in detail."}],
                    "ignore_eos": True, "max_tokens": max_tokens}
            f.write(json.dumps(body) + "\n")


def throughput(base: str, cand: str, prompts: int, logprobs: int, concurrency: int) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        write_log(log, prompts, 256)
        settings = ReplaySettings(
            log=log, baseline=Upstream(Side.BASELINE, base), candidate=Upstream(Side.CANDIDATE, cand),
            concurrency=concurrency, overrides=Overrides(max_tokens=256, logprobs=logprobs))
        store = Store.open(Path(tmp) / "store")
        run = store.create_run("replay", {})
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        tally = asyncio.run(Replay(settings, store, run).run(logs.LogFormat.BODIES))
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        tokens = sum((a.completion_tokens or 0) for p in store.pairs(run) for a in p.answers.values())
        store.close()
    return (f"logprobs {logprobs}", str(concurrency), str(tally.done), f"{tokens:,}", f"{wall:.2f}",
            f"{tokens / wall:,.0f}", f"{tokens / cpu:,.0f}", str(tally.errors))


# Runs the command and prints its peak RSS in KiB. A child forked straight from this
# benchmark would start with this process's (larger) high-water mark, since Linux carries
# the parent's into the child's ru_maxrss; a small Python in between starts it low.
_MEASURE = ("import resource, subprocess, sys\n"
            "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
            "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def run_measured(cmd: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Run ``cmd`` on core 1; returns (wall seconds, peak RSS in MiB) of that process,
    which must exit with one of ``ok``."""
    wrapped = [sys.executable, "-c", _MEASURE, *cmd]
    if (os.cpu_count() or 1) > 1:
        wrapped = ["taskset", "-c", "1", *wrapped]
    started = time.perf_counter()
    code, peak_kib = map(int, subprocess.run(wrapped, cwd=ROOT, capture_output=True, text=True, check=True)
                         .stdout.split())
    if code not in ok:
        raise SystemExit(f"{' '.join(cmd)} failed with {code}")
    return time.perf_counter() - started, peak_kib / 1024


def peak_memory(base: str, cand: str, lines: int) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        write_log(log, lines, 4)
        wall, peak = run_measured([sys.executable, "-m", "shadowdiff", "replay", str(log), "--baseline", base,
                                   "--candidate", cand, "--out", str(Path(tmp) / "out"), "--concurrency", "32",
                                   "--max-tokens", "keep"])
    return (f"{lines:,}", f"{wall:.0f}", f"{lines / wall:,.0f}", f"{peak:,.1f}")


def stored_run(path: Path, pairs: int, changed: float) -> None:
    """A run of ``pairs`` 60-word answers, ``changed`` of them near or divergent."""
    rng = random.Random(1)
    words = "the model answer is a number of tokens which we compare across two sides".split()
    store = Store.open(path)
    run = store.create_run("replay", {})
    batch: list[Pair] = []
    for i in range(pairs):
        a = " ".join(rng.choice(words) for _ in range(60)) + f" The total is {i}."
        b = a.replace("the", "a", 2) + f" Or {i + 1}." if rng.random() < changed else a
        base = Answer(Side.BASELINE, "base", a, "stop", 12, 70, 0.010, 0.50)
        cand = Answer(Side.CANDIDATE, "cand", b, "stop", 12, 70, 0.008, 0.33)
        comparison = compare(a, b)
        batch.append(Pair(f"k{i}", i, logs.CHAT, f"prompt {i}", {"messages": []}, comparison,
                          {Side.BASELINE: base, Side.CANDIDATE: cand}, category=f"c{i % 7}",
                          **triage_answers(base, cand, comparison, None)))
        if len(batch) == 1000:
            store.add_pairs(run, batch)
            batch = []
    store.add_pairs(run, batch)
    store.finish_run(run)
    store.close()


def report_memory(pairs: int, changed: float) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory() as tmp:
        stored_run(Path(tmp) / "store", pairs, changed)
        # exit codes PASS, FAIL, INCOMPLETE; every changed pair diffed, the heavy case
        wall, peak = run_measured([sys.executable, "-m", "shadowdiff", "report", str(Path(tmp) / "store"),
                                   "--side-by-side", "all"], ok=(0, 1, 2))
        html = (Path(tmp) / "store" / "report.html").stat().st_size
    return (f"{pairs:,}", f"{int(pairs * changed):,}", f"{wall:.1f}", f"{html / 2**20:,.1f}", f"{peak:,.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--memory-lines", default="10000,100000",
                        help="comma-separated log lengths for the memory runs ('' to skip)")
    args = parser.parse_args()
    pin(1)
    with shadowdiff("simulate", "--served-model-name", "base", core=0) as base, \
            shadowdiff("simulate", "--served-model-name", "cand", "--profile", "fp8", core=0) as cand:
        rows = [("workload", "concurrency", "pairs", "tokens", "wall s", "tokens/s (wall)", "tokens/s per CPU s",
                 "errors")]
        for logprobs in (0, 2):
            rows.append(throughput(base, cand, args.prompts, logprobs, args.concurrency))
        print("replay client, streamed, 256 tokens a side, zero-delay simulators on the other core\n")
        print(table(rows))
        if args.memory_lines:
            rows = [("log lines", "wall s", "pairs/s", "peak RSS MiB")]
            for lines in (int(n) for n in args.memory_lines.split(",")):
                rows.append(peak_memory(base, cand, lines))
            print("\nwhole `shadowdiff replay` runs (4 tokens a side, reports included): peak memory\n")
            print(table(rows))
    if args.memory_lines:
        rows = [("stored pairs", "changed", "wall s", "report.html MiB", "peak RSS MiB")]
        for lines in (int(n) for n in args.memory_lines.split(",")):
            rows.append(report_memory(lines, 0.4))
        print("\n`shadowdiff report --side-by-side all` over a stored run, 40 % of pairs changed: peak memory\n")
        print(table(rows))


if __name__ == "__main__":
    main()

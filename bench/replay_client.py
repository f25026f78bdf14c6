"""How fast is the replay client, and does its memory stay flat as the log grows?

Two zero-delay simulators (baseline, fp8) run on one core; the replay client runs on
the other. Printed: streamed output tokens per second the client sustains, per wall
second and per CPU second of the client (the target is 20,000 per core), with and
without logprobs; then peak memory (RSS) of whole ``shadowdiff replay`` runs over
logs of different lengths.

    python bench/replay_client.py [--prompts 600] [--memory-lines 10000,100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proxy.records import Side
from proxy.store import Store
from replay import logs
from replay.client import Upstream
from replay.runner import Overrides, Replay, ReplaySettings

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


def peak_memory(base: str, cand: str, lines: int) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        write_log(log, lines, 4)
        started = time.perf_counter()
        cmd = [sys.executable, "-m", "shadowdiff", "replay", str(log), "--baseline", base, "--candidate", cand,
               "--out", str(Path(tmp) / "out"), "--concurrency", "32", "--max-tokens", "keep"]
        if (os.cpu_count() or 1) > 1:
            cmd = ["taskset", "-c", "1", *cmd]
        process = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # wait4 gives this child's own peak (RUSAGE_CHILDREN would keep the largest so far)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            raise SystemExit(f"shadowdiff replay failed with {process.returncode}")
        wall = time.perf_counter() - started
        peak_kib = usage.ru_maxrss
    return (f"{lines:,}", f"{wall:.0f}", f"{lines / wall:,.0f}", f"{peak_kib / 1024:,.1f}")


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


if __name__ == "__main__":
    main()

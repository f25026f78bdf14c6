"""Is one server as fast as itself? The replay's speed ratios with one server as both sides.

One simulator (10 ms a token, 30 ms to the first, no slowdown with the batch, so that its
pace is the same for every request) serves baseline and candidate alike, on one core;
the replay client runs on the other, at each concurrency in turn, so that it goes from
idle to busy (at 96, 192 streams: some 19,000 tokens/s to read). Every ratio should be
1.00: what differs from it is the client's bias (before the client timed
tokens at their arrival, one server came out 1.83x "faster" as candidate, or its TTFT
1.3-1.6x slower). Printed per concurrency: pairs, tokens/s the client read (wall), each
side's TTFT and inter-token latency p50, and the candidate/baseline ratios.

    python bench/same_server_speed.py [--prompts 1200] [--concurrency 8,32,96] [--tpot 0.01]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from shadowdiff.answers.client import Upstream
from shadowdiff.replay import logs
from shadowdiff.replay.runner import Replay, ReplaySettings
from shadowdiff.report.summary import summarize
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side

from _common import pin, shadowdiff, table


def replay_once(url: str, prompts: int, concurrency: int) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "prompts.txt"
        log.write_text("".join(f"Question {i}: explain topic {i * 7 % 113} in a few sentences.\n"
                               for i in range(prompts)), encoding="utf-8")
        settings = ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, url),
                                  candidate=Upstream(Side.CANDIDATE, url), concurrency=concurrency)
        store = Store.open(Path(tmp) / "store")
        run = store.create_run("replay", {})
        started = time.perf_counter()
        tally = asyncio.run(Replay(settings, store, run).run(logs.LogFormat.TEXT))
        wall = time.perf_counter() - started
        summary = summarize(store, run)
        store.close()
    base, cand = summary.sides["baseline"], summary.sides["candidate"]
    tokens = base["output_tokens"] + cand["output_tokens"]
    ratios = summary.ratios

    def x(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    def ms(value: float | None) -> str:
        return "—" if value is None else f"{1000 * value:.1f}"

    return (str(concurrency), str(tally.done), f"{tokens / wall:,.0f}", ms(base["ttft_p50"]), ms(cand["ttft_p50"]),
            ms(base["inter_token_latency_p50"]), ms(cand["inter_token_latency_p50"]), x(ratios["ttft_p50"]),
            x(ratios["inter_token_latency_p50"]), x(ratios["latency_p50"]), x(summary.speedup))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=1200)
    parser.add_argument("--concurrency", default="8,32,96")
    parser.add_argument("--tpot", default="0.01", help="the simulator's seconds per token")
    args = parser.parse_args()
    pin(1)
    rows = [("concurrency", "pairs", "tokens/s read", "TTFT ms base", "TTFT ms cand", "ITL ms base",
             "ITL ms cand", "TTFT ratio", "ITL ratio", "latency ratio", "speedup")]
    with shadowdiff("simulate", "--ttft", "0.03", "--tpot", args.tpot, "--batch-slowdown", "0", core=0) as url:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            rows.append(replay_once(url, args.prompts, concurrency))
    print(f"one simulator as both sides ({args.tpot} s a token), {args.prompts} prompts; ratios are "
          "candidate/baseline p50 and should be 1.000\n")
    print(table(rows))


if __name__ == "__main__":
    main()

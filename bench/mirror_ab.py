"""Two builds' CPU per mirrored request, or their clients' latency, A/B in one run: where
``mirror_cpu.py`` sets one build against a reference proxy, this sets two source trees
against each other, for a change whose effect is smaller than the machine's drift between
two runs.

Both run ``shadowdiff serve --pair-worker W`` (``process`` by default) on core 1 in front
of the same instant upstreams (``bench/_instant.py``, on core 0): a shadow answering what
the primary answers (``identical``) or a little differently (``changed``: every pair
stored).

* CPU (the default): both proxies up; rounds alternate A then B, B then A, each
  ``--seconds`` at concurrency 32 and ``--rate`` requests a second. The figures are medians
  over rounds of the event loop's CPU a request, the whole process's, and the pair
  process's, then B less A round by round.
* ``--latency``: one proxy up at a time (the other's pairs would be worked on during its
  requests), A then B then A..., ``--requests`` requests each at concurrency 1, each
  after a direct one (the upstream's core rests as it would between clients); with
  ``--busy N``, N busy loops share the proxy's core, as other work on a busy node would.
  The figures are each build's latency percentiles over all its rounds.

    git archive <rev> | tar -x -C /tmp/a    # each build a source tree of its own
    python bench/mirror_ab.py /tmp/a /tmp/b [--rounds 10] [--answers identical|changed]
    python bench/mirror_ab.py /tmp/a /tmp/b --latency --busy 2 --answers changed [--pair-worker thread]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import aiohttp
from mirror_cpu import _listening_pid, cpu, load, metric, post, quiet

from shadowdiff.statistics.percentile import nearest_rank

from _common import free_port, instant, pin, server, table


def serve(tree: str, primary: str, shadow: str, store: str, worker: str) -> contextlib.AbstractContextManager[str]:
    """``shadowdiff serve`` from the source tree ``tree`` (run from it: ``-m`` puts the
    working directory first on the path, before any installed copy)."""
    port = free_port()
    argv = [sys.executable, "-m", "shadowdiff", "serve", "--primary", primary, "--shadow", shadow, "--store", store,
            "--pair-worker", worker, "--port", str(port)]
    line = f"cd {shlex.quote(tree)} && PYTHONPATH={shlex.quote(tree)} exec {shlex.join(argv)}"
    return server(["sh", "-c", line], port, 1)


def cpu_ab(args: argparse.Namespace, trees: dict[str, str], primary: str, shadow: str, tmp: str) -> None:
    with contextlib.ExitStack() as stack:
        urls = {name: stack.enter_context(serve(tree, primary, shadow, f"{tmp}/{name}", args.pair_worker))
                for name, tree in trees.items()}
        pids = {name: _listening_pid(int(url.rsplit(":", 1)[1])) for name, url in urls.items()}
        figures: dict[str, list[tuple[float, float, float]]] = {"A": [], "B": []}
        for r in range(args.rounds):
            for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
                pid = pids[name]
                quiet(pid)
                before = cpu(pid)
                n = asyncio.run(load(urls[name], args.seconds, 32, args.rate))
                quiet(pid)     # (the pairs still being made and stored count)
                spent = cpu(pid) - before
                figures[name].append((spent.loop / n * 1e3, spent.total / n * 1e3, spent.children / n * 1e3))
    rows = [("build", "tree", "loop ms/req", "sd", "process+children ms/req", "children ms/req")]
    for name, values in figures.items():
        loops = [v[0] for v in values]
        rows.append((name, trees[name], f"{statistics.median(loops):.4f}", f"{statistics.stdev(loops):.4f}",
                     f"{statistics.median(v[1] for v in values):.4f}",
                     f"{statistics.median(v[2] for v in values):.4f}"))
    print(f"{args.answers} answers, --pair-worker {args.pair_worker}, {args.rate:g} requests/s at concurrency 32, "
          f"{args.rounds} rounds of {args.seconds:g} s alternated; medians over rounds\n")
    print(table(rows))
    for label, part in (("loop", 0), ("children", 2)):
        d = [b[part] - a[part] for a, b in zip(figures["A"], figures["B"], strict=True)]
        print(f"B - A, {label}, per round: median {statistics.median(d):+.4f} ms, mean {statistics.mean(d):+.4f}, "
              f"sd {statistics.stdev(d):.4f}")


def ready(url: str, worker: str) -> None:
    """Wait for the pair process to take the pairs (until it does, the proxy makes them itself)."""
    deadline = time.monotonic() + 60
    while worker == "process" and metric(url, "shadowdiff_pair_process_up") != 1:
        if time.monotonic() > deadline:
            raise SystemExit(f"the pair process of {url} was not up within 60 s")
        time.sleep(0.1)


async def one_at_a_time(direct: str, proxied: str, requests: int) -> list[float]:
    """Latencies of ``requests`` proxied requests, each after a direct one, at concurrency 1."""
    latencies = []
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            await post(session, proxied)
        for _ in range(requests):
            await post(session, direct)
            latencies.append(await post(session, proxied))
    return latencies


def latency_ab(args: argparse.Namespace, trees: dict[str, str], primary: str, shadow: str, tmp: str) -> None:
    latencies: dict[str, list[float]] = {"A": [], "B": []}
    for r in range(args.rounds):
        for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
            with serve(trees[name], primary, shadow, f"{tmp}/{name}-{r}", args.pair_worker) as url:
                ready(url, args.pair_worker)
                busy = [subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", "while True: pass"])
                        for _ in range(args.busy)]
                try:
                    latencies[name] += asyncio.run(one_at_a_time(primary, url, args.requests))
                finally:
                    for process in busy:
                        process.kill()
                        process.wait()
    rows = [("build", "tree", "requests", "p50 ms", "p90 ms", "p99 ms", "max ms")]
    for name, values in latencies.items():
        values.sort()
        at = [values[nearest_rank(len(values), p)] * 1e3 for p in (50, 90, 99)]
        rows.append((name, trees[name], f"{len(values):,}", *(f"{v:.3f}" for v in at), f"{values[-1] * 1e3:.1f}"))
    print(f"{args.answers} answers, --pair-worker {args.pair_worker}, concurrency 1, {args.busy} busy loops on the "
          f"proxy's core, {args.rounds} rounds of {args.requests} requests, one proxy at a time; percentiles "
          "(nearest rank) over all rounds\n")
    print(table(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--answers", choices=("identical", "changed"), default="identical")
    parser.add_argument("--pair-worker", choices=("process", "thread"), default="process")
    parser.add_argument("--latency", action="store_true", help="the clients' latency at concurrency 1, not CPU")
    parser.add_argument("--requests", type=int, default=800, help="--latency: requests per build and round")
    parser.add_argument("--busy", type=int, default=0, help="--latency: busy loops on the proxy's core")
    args = parser.parse_args()
    pin(0)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        primary = stack.enter_context(instant(0, "long"))
        shadow = stack.enter_context(instant(0, "long" if args.answers == "identical" else "changed"))
        trees = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
        (latency_ab if args.latency else cpu_ab)(args, trees, primary, shadow, tmp)


if __name__ == "__main__":
    main()

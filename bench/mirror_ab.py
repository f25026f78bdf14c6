"""Two builds' CPU per mirrored request, A/B in one run: where ``mirror_cpu.py`` sets one
build against a reference proxy, this sets two source trees against each other, for a
change whose effect is smaller than the machine's drift between two runs.

Both run ``shadowdiff serve --pair-worker process`` on core 1 in front of the same instant
upstreams (``bench/_instant.py``, on core 0): a shadow answering what the primary answers
(``identical``) or a little differently (``changed``: every pair stored). Rounds alternate
A then B, B then A; each is ``--seconds`` at concurrency 32 and ``--rate`` requests a second.
The figures are medians over rounds of the event loop's CPU a request, the whole
process's, and the pair process's, then B less A round by round.

    git archive <rev> | tar -x -C /tmp/a    # each build a source tree of its own
    python bench/mirror_ab.py /tmp/a /tmp/b [--rounds 10] [--answers identical|changed]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import statistics
import sys
import tempfile

from mirror_cpu import _listening_pid, cpu, load, quiet

from _common import free_port, instant, pin, server, table


def serve(tree: str, primary: str, shadow: str, store: str) -> contextlib.AbstractContextManager[str]:
    """``shadowdiff serve`` from the source tree ``tree`` (run from it: ``-m`` puts the
    working directory first on the path, before any installed copy)."""
    port = free_port()
    argv = [sys.executable, "-m", "shadowdiff", "serve", "--primary", primary, "--shadow", shadow, "--store", store,
            "--pair-worker", "process", "--port", str(port)]
    line = f"cd {shlex.quote(tree)} && PYTHONPATH={shlex.quote(tree)} exec {shlex.join(argv)}"
    return server(["sh", "-c", line], port, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--answers", choices=("identical", "changed"), default="identical")
    args = parser.parse_args()
    pin(0)

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        primary = stack.enter_context(instant(0, "long"))
        shadow = stack.enter_context(instant(0, "long" if args.answers == "identical" else "changed"))
        trees = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
        urls = {name: stack.enter_context(serve(tree, primary, shadow, f"{tmp}/{name}"))
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
    print(f"{args.answers} answers, {args.rate:g} requests/s at concurrency 32, {args.rounds} rounds of "
          f"{args.seconds:g} s alternated; medians over rounds\n")
    print(table(rows))
    for label, part in (("loop", 0), ("children", 2)):
        d = [b[part] - a[part] for a, b in zip(figures["A"], figures["B"], strict=True)]
        print(f"B - A, {label}, per round: median {statistics.median(d):+.4f} ms, mean {statistics.mean(d):+.4f}, "
              f"sd {statistics.stdev(d):.4f}")


if __name__ == "__main__":
    main()

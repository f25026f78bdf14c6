"""What the report's per-pair exports cost (pairs.jsonl, pairs.csv, the texts files), and
what the whole ``shadowdiff report`` costs, against a reference version of the code.

On a store holding one run (``--store``, a SQLite directory or a PostgreSQL URL; or
``--pairs N`` to fill a temporary SQLite store with tests/support/bigstore.py's run),
each variant runs in a process of its own with its version's tree first on the path:

* exports: the reference's ``_write_pairs`` (every file, plain), and this tree's for
  each ``--pairs-export``/``--compress`` choice: CPU (``time.process_time``), the
  process's peak RSS growth while it writes (``VmHWM`` less ``VmRSS`` before), and the
  bytes written per pair;
* with ``--whole``: ``shadowdiff report STORE --out DIR`` with default options, each
  version: the command's CPU (user + system, from ``wait4``) and peak RSS.

The reference runs twice (the control: how far two runs of one version differ), and the
variants run in interleaved rounds. The reference tree is a checkout of the code before,
e.g. ``git worktree add /tmp/ref main``.

    python bench/report_exports.py --reference /tmp/ref --store /path/to/store [--rounds 2] [--whole]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, table

_EXPORT = r"""
import json, sys, time
from pathlib import Path
from shadowdiff.report import write
from shadowdiff.store import Store

def memory(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)

location, out, choice, compress = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
store = Store.open_existing(location)
run = store.latest_run().id
stored = store.count_pairs(run)
out.mkdir(parents=True, exist_ok=True)
before = memory("VmRSS")
started = time.process_time()
if choice == "reference":
    write._write_pairs(store, run, out, None)
else:
    exports = write.Exports.of(choice, {"yes": True, "no": False, "auto": None}[compress], stored)
    write._write_pairs(store, run, out, None, exports)
cpu = time.process_time() - started
print(json.dumps({"cpu": cpu, "rss": memory("VmHWM") - before, "pairs": stored,
                  "files": {f.name: f.stat().st_size for f in out.iterdir()}}))
"""

VARIANTS = {  # name: (tree, --pairs-export, --compress)
    "reference (every file, plain)": ("reference", "reference", "no"),
    "reference again (control)": ("reference", "reference", "no"),
    "both, plain": ("here", "both", "no"),
    "both, gzip": ("here", "both", "yes"),
    "jsonl, gzip": ("here", "jsonl", "yes"),
    "csv, gzip": ("here", "csv", "yes"),
    "none": ("here", "none", "no"),
}


def _export(tree: str, location: str, choice: str, compress: str) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="report-exports-"))
    try:
        done = subprocess.run([sys.executable, "-c", _EXPORT, location, str(out), choice, compress],
                              env={**os.environ, "PYTHONPATH": tree}, capture_output=True, text=True,
                              cwd=tempfile.gettempdir())
        if done.returncode:
            raise RuntimeError(done.stderr)
        result: dict[str, Any] = json.loads(done.stdout)
        return result
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _whole(tree: str, location: str) -> tuple[float, float]:
    """CPU seconds and peak RSS (bytes) of ``shadowdiff report`` with default options."""
    out = Path(tempfile.mkdtemp(prefix="report-whole-"))
    try:
        process = subprocess.Popen([sys.executable, "-m", "shadowdiff", "report", location, "--out", str(out)],
                                   env={**os.environ, "PYTHONPATH": tree}, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1, 2):
            raise RuntimeError(process.stderr.read().decode() if process.stderr else "report failed")
        return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", required=True, help="the reference version's source tree")
    parser.add_argument("--store", help="a store holding the run (default: fill one with --pairs)")
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--whole", action="store_true", help="also time the whole report command")
    args = parser.parse_args()
    trees = {"reference": args.reference, "here": ROOT}
    location = args.store
    if location is None:
        from shadowdiff.store import Store
        from tests.support.bigstore import big_run

        location = tempfile.mkdtemp(prefix="report-exports-store-")
        store = Store.open(location)
        big_run(store, args.pairs)
        store.close()
    results: dict[str, list[dict[str, Any]]] = {}
    whole: dict[str, list[tuple[float, float]]] = {}
    started = time.monotonic()
    for _ in range(args.rounds):
        for name, (tree, choice, compress) in VARIANTS.items():
            results.setdefault(name, []).append(_export(trees[tree], location, choice, compress))
        if args.whole:
            for name in ("reference", "reference again (control)", "this tree"):
                whole.setdefault(name, []).append(_whole(trees["here" if name == "this tree" else "reference"],
                                                         location))
    pairs = int(results["none"][0]["pairs"])
    ref = statistics.median(float(r["cpu"]) for r in results["reference (every file, plain)"])
    rows = [("exports", "CPU, s (median)", "µs a pair", "ratio to reference", "peak RSS growth, MB",
             "bytes a pair", "files")]
    for name, runs in results.items():
        cpu = statistics.median(float(r["cpu"]) for r in runs)
        rss = statistics.median(float(r["rss"]) for r in runs)
        files: dict[str, int] = runs[0]["files"]
        size = sum(files.values())
        rows.append((name, f"{cpu:.2f}", f"{cpu / pairs * 1e6:.0f}", f"{cpu / ref:.2f}", f"{rss / 1e6:.1f}",
                     f"{size / pairs:,.0f}", ", ".join(f"{n} {s / pairs:,.0f}" for n, s in sorted(files.items()))))
    took = time.monotonic() - started
    print(f"{pairs:,} pairs in {location}; {args.rounds} round(s), interleaved, in {took:.0f} s\n")
    print(table(rows))
    if whole:
        ref_cpu = statistics.median(c for c, _ in whole["reference"])
        out = [("shadowdiff report (default options)", "CPU, s (median)", "ratio to reference", "peak RSS, MB")]
        for name, measured in whole.items():
            cpu = statistics.median(c for c, _ in measured)
            peak = statistics.median(m for _, m in measured)
            out.append((name, f"{cpu:.1f}", f"{cpu / ref_cpu:.2f}", f"{peak / 1e6:.0f}"))
        print()
        print(table(out))


if __name__ == "__main__":
    sys.exit(main())

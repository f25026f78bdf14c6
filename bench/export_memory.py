"""How much memory the review UI's export takes, now that it reads every verdict before
sending its first byte (an export is whole or an error).

Fills a store with N reviewed pairs (one verdict each, a 200-character note), then
serves ``shadowdiff review`` on it in a process of its own, downloads export.csv and
export.jsonl, and reports the server's peak RSS growth over its RSS before (Linux:
``VmHWM`` from /proc) and the bytes sent.

    .venv/bin/python bench/export_memory.py [--reviews 100000] [--store postgresql://…]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from shadowdiff.store import Store, schema
from shadowdiff.store.review import ReviewQueue
from tests.support.factories import pair
from tests.support.servers import free_port, wait_ready

TOKEN = "export-memory-bench"


def fill(location: str, reviews: int) -> None:
    store = Store.open(location)
    run = store.create_run("replay", {})
    for start in range(0, reviews, 1000):
        store.add_pairs(run, [pair(f"k{i}", f"The total is {i} dollars.", f"The total is {i + 1} dollars.")
                              for i in range(start, min(start + 1000, reviews))])
    ids = [row["id"] for row in ReviewQueue(store).page(_all(run), limit=reviews)]
    now = datetime.now(UTC)
    # written in bulk (add_review's one transaction a verdict would take minutes on PostgreSQL)
    with store.engine.begin() as c:
        c.execute(schema.reviews.insert(), [{"pair_id": pair_id, "reviewer": "reviewer-name", "verdict": "wording",
                                             "wrong_side": None, "note": "n" * 200, "created_at": now}
                                            for pair_id in ids])
    store.close()


def _all(run: str) -> object:
    from shadowdiff.store.review import Filters

    return Filters(run_id=run)


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--store", default=None)
    args = parser.parse_args()
    location = args.store or tempfile.mkdtemp(prefix="export-memory-")
    started = time.monotonic()
    fill(location, args.reviews)
    print(f"filled {args.reviews} reviews in {time.monotonic() - started:.0f} s")
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "shadowdiff", "review", location, "--token", TOKEN,
                                "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/review"
        wait_ready(base + "/login", process)
        for path in ("/export.csv", "/export.jsonl"):
            before = memory_kb(process.pid, "VmRSS")
            started = time.monotonic()
            body = httpx.get(base + path, headers={"x-review-token": TOKEN}, timeout=600).content
            took = time.monotonic() - started
            peak = memory_kb(process.pid, "VmHWM")
            print(f"{path}: {len(body) / 1e6:.1f} MB sent in {took:.1f} s; server RSS {before / 1024:.0f} MB "
                  f"before, peak {peak / 1024:.0f} MB (+{(peak - before) / 1024:.0f} MB)")
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    main()

"""How much memory a pair held for a failing store takes, against what the writer's
byte bound counts (``--store-queue-bytes``, ``shadowdiff.store.writer.held_size``).

Starts two simulators and ``shadowdiff serve`` (SQLite store, every pair kept), sends
300 requests to warm up, locks the store (an exclusive SQLite transaction, held past
the proxy's --store-timeout so that nothing is written), sends N more, and compares
serve's RSS growth with the queue it reports (``shadowdiff_store_queue_pairs`` and
``_bytes``). Then releases the lock and checks that every pair was written.

    .venv/bin/python bench/held_memory.py [--requests 3000] [--stream]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.servers import free_port, wait_ready


def start(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "shadowdiff", *args, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, f"http://127.0.0.1:{port}"


def rss(pid: int) -> int:
    match = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
    assert match is not None
    return int(match.group(1)) * 1024


def metric(url: str, name: str) -> float:
    for line in httpx.get(url + "/metrics", timeout=30).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise LookupError(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="held-memory-"))
    baseline, base_url = start("simulate")
    candidate, cand_url = start("simulate", "--served-model-name", "fp8", "--profile", "fp8")
    processes = [baseline, candidate]
    try:
        wait_ready(base_url + "/health")
        wait_ready(cand_url + "/health")
        serve, url = start("serve", "--primary", base_url, "--shadow", cand_url, "--shadow-model", "fp8", "--store",
                           str(store), "--keep-rate", "1", "--store-timeout", "600")
        processes.append(serve)
        wait_ready(url + "/healthz")

        def ask(i: int) -> int:
            body = {"model": "simulated-model", "max_tokens": 200, "temperature": 0, "stream": args.stream,
                    "messages": [{"role": "user", "content": f"Tell me about topic {i} in detail with numbers."}]}
            return httpx.post(url + "/v1/chat/completions", json=body, timeout=60).status_code

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(ask, range(300)))
        time.sleep(2)
        before = rss(serve.pid)
        lock = sqlite3.connect(store / "shadowdiff.sqlite", timeout=0, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(ask, range(1000, 1000 + args.requests)))
        time.sleep(3)
        grown = rss(serve.pid) - before
        pairs = metric(url, "shadowdiff_store_queue_pairs")
        counted = metric(url, "shadowdiff_store_queue_bytes")
        lock.execute("ROLLBACK")
        lock.close()
        print(f"{args.requests} requests ({'streamed' if args.stream else 'not streamed'}), "
              f"{sum(code != 200 for code in codes)} errors")
        print(f"held for the store: {pairs:.0f} pairs; serve's RSS grew {grown / 1e6:.1f} MB: "
              f"{grown / max(pairs, 1) / 1e3:.1f} KB per pair; the bound counted {counted / 1e6:.1f} MB: "
              f"{counted / max(pairs, 1) / 1e3:.1f} KB per pair (RSS / counted: {grown / max(counted, 1):.2f})")
        deadline = time.monotonic() + 60
        while metric(url, "shadowdiff_store_queue_pairs") and time.monotonic() < deadline:
            time.sleep(0.5)
        print(f"after the lock: stored {metric(url, 'shadowdiff_pairs_stored_total'):.0f} of "
              f"{300 + args.requests}")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(60)


if __name__ == "__main__":
    main()

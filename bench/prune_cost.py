"""What retention costs: a prune of half of a 300,000-pair store.

Builds a serve run of ``--pairs`` pairs (~1.7 KB each as stored: a chat request, two
answers of a few hundred characters, triage signals) through ``Store.add_pairs`` in
batches, the older half dated ten days back; 1 % of the old pairs get a review (kept).
Then prunes the pairs older than five days while a writer adds 200 pairs every 50 ms
to the same run (the proxy's batches), and prints: the prune's time and rows/s, its
transactions and the longest one, the writer's slowest write meanwhile (what a proxy
waits for at worst), the store's size before, after, and after VACUUM, and the time of
``shadowdiff report`` on the run before and after, and what building migration
0009's index over such a store takes. On SQLite (a file in a temporary
directory) and on PostgreSQL (a database made for it and dropped after).

    python bench/prune_cost.py [--pairs 300000] [--postgres postgresql://postgres@127.0.0.1:5432/postgres]
        [--backend sqlite|postgresql|both] [--no-report]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import shadowdiff.store.store as store_module
from shadowdiff.answers.records import Pair
from shadowdiff.store import Store, database_url, schema
from shadowdiff.store.prune import BATCH, prune, vacuum
from shadowdiff.store.review import ReviewQueue

from _common import ROOT, table

DATABASE = "shadowdiff_prune_bench"
WORDS = ("the model answer total river north value result because however which number first second "
         "quantization weights latency token decode prefill cache batch").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def templates(count: int = 64) -> list[Pair]:
    """Pairs of realistic size: a request of a system and a user message, answers of
    ~80 words differing in a word or two (near) or more (divergent)."""
    from tests.support.factories import pair  # (after _common, which puts the repository on the path)

    rng = random.Random(17)
    out = []
    for i in range(count):
        base = " ".join(sentence(rng, 12) for _ in range(4))
        words = base.split()
        for _ in range(1 if i % 3 else 12):
            words[rng.randrange(len(words))] = rng.choice(WORDS)
        p = pair(f"k{i}", base, " ".join(words))
        prompt = sentence(rng, 24)
        request = {"model": "Qwen/Qwen3-8B", "temperature": 0, "max_tokens": 256,
                   "messages": [{"role": "system", "content": sentence(rng, 12)}, {"role": "user", "content": prompt}]}
        out.append(replace(p, prompt=prompt, request=request, category=rng.choice(("chat", "code", "math"))))
    return out


class _Clock(datetime):
    at: datetime | None = None

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return cls.at or datetime.now(tz)


@contextlib.contextmanager
def dated(when: datetime) -> Iterator[None]:
    """``Store.add_pairs`` dates its pairs ``when`` (instead of updating them after, which
    would leave PostgreSQL a dead copy of every row and skew the sizes)."""
    setattr(store_module, "datetime", _Clock)  # noqa: B010 (a bench's monkeypatch)
    _Clock.at = when
    try:
        yield
    finally:
        setattr(store_module, "datetime", datetime)  # noqa: B010


def build(store: Store, n: int) -> str:
    run_id = store.create_run("serve", {})
    shapes = templates()
    old = datetime.now(UTC) - timedelta(days=10)
    counts: Counter[tuple[str, str, bool]] = Counter()
    started = time.monotonic()
    for start in range(0, n, 1_000):
        batch = [replace(shapes[i % len(shapes)], key=f"p{i}", seq=i) for i in range(start, min(n, start + 1_000))]
        with dated(old if start < n // 2 else datetime.now(UTC)):
            store.add_pairs(run_id, batch)
        counts.update(("pairs", p.comparison.outcome.value, True) for p in batch)
    counts["pairs", "identical", True] += 10 * n    # the identical pairs a proxy only counts
    store.add_counts(run_id, counts)
    queue = ReviewQueue(store)
    p = schema.pairs.c
    with store.engine.connect() as c:
        ids = c.execute(sa.select(p.id).where(p.run_id == run_id).order_by(p.id).limit(n // 2)).scalars().all()
    for pair_id in ids[::100]:
        queue.add_review(pair_id, "ann", "wording")
    print(f"  built {n:,} pairs in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return run_id


def size(store: Store, location: str) -> int:
    """Bytes the store takes: the SQLite file (its log written in), or PostgreSQL's tables with their indexes."""
    if store.dialect == "sqlite":
        raw = store.engine.raw_connection()
        try:
            raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()
        return Path(location, "shadowdiff.sqlite").stat().st_size
    with store.engine.connect() as c:
        return int(c.execute(sa.text("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                                     "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"))
                   .scalar_one())


def time_report(location: str, run_id: str, out: Path) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "shadowdiff", "report", location, "--run", run_id, "--out", str(out)],
                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=3_600)
    return time.monotonic() - started


def writer(store: Store, run_id: str, stop: threading.Event, waits: list[float]) -> None:
    """The proxy's writer: 200 pairs every 50 ms, each batch timed."""
    shapes = templates(8)
    i = 0
    while not stop.is_set():
        batch = [replace(shapes[j % len(shapes)], key=f"w{i + j}") for j in range(200)]
        started = time.monotonic()
        store.add_pairs(run_id, batch)
        waits.append(time.monotonic() - started)
        i += 200
        stop.wait(0.05)


def measure(location: str, n: int, reports: bool) -> dict[str, str]:
    store = Store.open(location)
    try:
        run_id = build(store, n)
        if store.dialect == "postgresql":
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.exec_driver_sql("VACUUM ANALYZE")
        before = size(store, location)
        # what migration 0009 costs a store that has these pairs already (on PostgreSQL
        # CREATE INDEX blocks writes to pairs meanwhile)
        started = time.monotonic()
        with store.engine.begin() as c:
            c.exec_driver_sql("DROP INDEX ix_pairs_run_created")
            c.exec_driver_sql("CREATE INDEX ix_pairs_run_created ON pairs (run_id, created_at, id)")
        index_time = time.monotonic() - started
        with tempfile.TemporaryDirectory() as out:
            report_before = time_report(location, run_id, Path(out)) if reports else None
        stop, waits, alone = threading.Event(), list[float](), list[float]()
        shapes = templates(8)
        for i in range(5):   # the writer's batch without a prune, for comparison
            batch = [replace(shapes[j % len(shapes)], key=f"a{i}-{j}") for j in range(200)]
            started = time.monotonic()
            store.add_pairs(run_id, batch)
            alone.append(time.monotonic() - started)
        thread = threading.Thread(target=writer, args=(store, run_id, stop, waits))
        thread.start()
        started = time.monotonic()
        result = prune(store, 5 * 86_400.0)
        took = time.monotonic() - started
        stop.set()
        thread.join()
        after = size(store, location)
        started = time.monotonic()
        vacuum(store)
        vacuumed, vacuum_time = size(store, location), time.monotonic() - started
        full = "-"
        if store.dialect == "postgresql":   # gives the files back, but locks the tables while it rewrites them
            started = time.monotonic()
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.exec_driver_sql("VACUUM FULL pairs, answers, reviews")
            full = f"{size(store, location) / 1e6:,.0f} MB (took {time.monotonic() - started:.1f} s)"
        with tempfile.TemporaryDirectory() as out:
            report_after = time_report(location, run_id, Path(out)) if reports else None
        return {
            "pairs deleted": f"{result.total:,} of {n:,} (kept: {sum(result.kept_reviewed.values()):,} reviewed)",
            "prune time": f"{took:.1f} s",
            "pairs deleted/s": f"{result.total / took:,.0f}",
            "transactions": f"{result.batches} (of up to {BATCH:,} pairs)",
            "longest transaction": f"{result.longest_batch:.2f} s",
            "writer's slowest 200-pair write, pruning": f"{max(waits):.2f} s (median {statistics.median(waits):.3f} s "
                                                        f"of {len(waits)})",
            "writer's 200-pair write, alone": f"median {statistics.median(alone):.3f} s",
            "size before": f"{before / 1e6:,.0f} MB ({before / n:,.0f} B/pair)",
            "size after prune": f"{after / 1e6:,.0f} MB",
            "size after VACUUM (prune --vacuum)": f"{vacuumed / 1e6:,.0f} MB (VACUUM took {vacuum_time:.1f} s)",
            "size after VACUUM FULL": full,
            "migration 0009 (its index over these pairs)": f"{index_time:.1f} s",
            "report before": "-" if report_before is None else f"{report_before:.0f} s",
            "report after": "-" if report_after is None else f"{report_after:.0f} s",
        }
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300_000)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--no-report", action="store_true", help="Skip timing `shadowdiff report`.")
    args = parser.parse_args()
    columns: dict[str, dict[str, str]] = {}
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as directory:
            columns["SQLite"] = measure(directory, args.pairs, not args.no_report)
    if args.backend in ("postgresql", "both"):
        admin = sa.create_engine(database_url(args.postgres), isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)'))
            c.execute(sa.text(f'CREATE DATABASE "{DATABASE}"'))
        try:
            columns["PostgreSQL"] = measure(args.postgres.rsplit("/", 1)[0] + "/" + DATABASE, args.pairs,
                                            not args.no_report)
        finally:
            with admin.connect() as c:
                c.execute(sa.text(f'DROP DATABASE "{DATABASE}" WITH (FORCE)'))
            admin.dispose()
    names = list(columns)
    rows = [("", *names)] + [(key, *(columns[n][key] for n in names)) for key in columns[names[0]]]
    print(table(rows))


if __name__ == "__main__":
    main()

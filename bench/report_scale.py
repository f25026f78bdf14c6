"""What `shadowdiff report` costs as a run grows: CPU, wall time and peak memory of the
command at 10k, 100k and 1M pairs, on SQLite and PostgreSQL, extrapolated to 10M.

Each store is generated fast: a few thousand template pairs are made as replay makes them
(tests/support/bigstore.py: answers of ~1.2 KB, compared and triaged; ~40 % changed, 2 %
failed, a replica beside them), then copied into the store's tables in bulk, each copy
with its own key, log line and timings. ``shadowdiff report`` then runs as a child
process: its CPU (user + system) and peak RSS come from ``wait4`` (the child's own
rusage), and on PostgreSQL the CPU of the server's backends serving its database, sampled
from /proc while it runs (a backend's last ~0.1 s before it exits is not seen).

    .venv/bin/python bench/report_scale.py [--sizes 10000,100000,1000000] [--backend sqlite,postgres]
        [--postgres postgresql://postgres@127.0.0.1:5432] [--summaries DIR] [-- REPORT OPTIONS]

Each PostgreSQL store is a database of its own (shadowdiff_bench_scale_N), dropped after.
``--summaries DIR`` keeps each report's summary.json (to compare two builds on the same
stores: the generation is seeded). Options after ``--`` go to ``shadowdiff report``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from shadowdiff.answers.compare import Thresholds, compare, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.store import Store, schema
from shadowdiff.store.rows import answer_row, pair_row
from shadowdiff.triage.signals import triage_answers
from shadowdiff.vocabulary import Outcome, Side
from tests.support.bigstore import CATEGORIES, CHANGES, _answer_text, _reword, _sentence

from _common import table

# ~40 % of the pairs changed (equivalent, near or divergent), 2 % failed
WEIGHTS = {Outcome.IDENTICAL: 59, Outcome.EQUIVALENT: 14, Outcome.NEAR: 20, Outcome.DIVERGENT: 7}
TEMPLATES = 2_000
CHUNK = 5_000
CLK = os.sysconf("SC_CLK_TCK")


def _template(rng: random.Random, i: int) -> Pair:
    """One pair as replay makes it, with answers of ~1.2 KB."""
    base_text = _answer_text(rng) + "\n\n" + _answer_text(rng)
    failed = rng.random() < 0.02
    kinds = list(WEIGHTS)
    cand_text = None if failed else CHANGES[rng.choices(kinds, list(WEIGHTS.values()))[0]][1](rng, base_text)
    replica_text = _reword(rng, base_text) if rng.random() < 0.05 else base_text
    answers = {Side.BASELINE: _answer(Side.BASELINE, base_text), Side.CANDIDATE: _answer(Side.CANDIDATE, cand_text),
               Side.REPLICA: _answer(Side.REPLICA, replica_text)}
    thresholds = Thresholds()
    comparison = error_comparison() if failed else compare(base_text, cand_text or "", thresholds=thresholds)
    tokens = len(base_text) // 4
    agreed = tokens - (min(tokens, int(rng.expovariate(1 / 2.0))) if comparison.outcome is not Outcome.IDENTICAL
                       else 0)
    pair = Pair(f"t{i}", i, "/v1/chat/completions", f"Question {i}: {_sentence(rng)}",
                {"messages": [{"role": "user", "content": f"Question {i}"}], "temperature": 0},
                comparison, answers, category=rng.choice(CATEGORIES),
                noise=compare(base_text, replica_text, thresholds=thresholds),
                score=None if failed else {"agreement": agreed / tokens, "tokens": tokens, "agreed": agreed},
                noise_score={"agreement": 1.0, "tokens": tokens, "agreed": tokens})
    return replace(pair, **triage_answers(answers[Side.BASELINE], answers[Side.CANDIDATE], comparison, None))


def _answer(side: Side, text: str | None) -> Answer:
    if text is None:
        return Answer(side, "m", error="HTTP 500: server error", status=500, duration=0.1)
    return Answer(side, "m", text, "stop", 40, len(text) // 4, 0.1, 1.0, 200, ttfat=0.1, ttlt=0.9)


def _timed(row: dict[str, Any], rng: random.Random, speed: float) -> dict[str, Any]:
    """An answer row with timings of its own (the percentiles are over real spreads)."""
    if row["error"] is not None:
        return row
    ttft = rng.lognormvariate(-2.3, 0.3) * speed
    decode = (row["completion_tokens"] or 1) * 0.02 * speed * rng.uniform(0.8, 1.25)
    return {**row, "ttft": ttft, "ttfat": ttft, "ttlt": ttft + decode, "duration": ttft + decode + 0.001}


def fill(location: str, pairs: int, seed: int = 38) -> str:
    """A finished replay run of ``pairs`` pairs in a new store at ``location``; its id."""
    rng = random.Random(seed)
    templates = [_template(rng, i) for i in range(TEMPLATES)]
    store = Store.open(location)
    run = store.create_run("replay", {"thresholds": {"near": 0.9}, "score": True, "sides": {
        "baseline": {"url": "http://bf16:8000", "model": "Qwen/Qwen3-8B"},
        "candidate": {"url": "http://fp8:8000", "model": "Qwen/Qwen3-8B-FP8"},
        "replica": {"url": "http://bf16-b:8000", "model": "Qwen/Qwen3-8B"}}})
    now = datetime.now(UTC)
    pair_rows = [pair_row(run, t, now) for t in templates]
    answer_rows = [[answer_row(0, a) for a in t.answers.values()] for t in templates]
    speeds = {Side.BASELINE.value: 1.0, Side.CANDIDATE.value: 0.7, Side.REPLICA.value: 1.0}
    with store.engine.begin() as c:
        first = int(c.execute(sa.select(sa.func.coalesce(sa.func.max(schema.pairs.c.id), 0))).scalar_one()) + 1
    for start in range(0, pairs, CHUNK):
        chunk_pairs, chunk_answers = [], []
        for i in range(start, min(start + CHUNK, pairs)):
            t = i % TEMPLATES
            chunk_pairs.append({**pair_rows[t], "id": first + i, "key": f"p{i:07d}", "seq": i,
                                "prompt": f"Question {i}: {pair_rows[t]['prompt']}"})
            chunk_answers += [_timed({**a, "pair_id": first + i}, rng, speeds[a["side"]]) for a in answer_rows[t]]
        with store.engine.begin() as c:
            c.execute(schema.pairs.insert(), chunk_pairs)
            c.execute(schema.answers.insert(), chunk_answers)
    if store.dialect == "postgresql":   # the ids were given: move the sequence past them
        with store.engine.begin() as c:
            c.execute(sa.text("SELECT setval(pg_get_serial_sequence('pairs', 'id'), (SELECT max(id) FROM pairs))"))
    store.finish_run(run)
    store.close()
    return run


@dataclass
class Measured:
    cpu: float = 0.0
    wall: float = 0.0
    rss_mb: float = 0.0
    server_cpu: float | None = None
    exit_code: int = 0


def _proc_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK   # utime, stime


class _Backends:
    """The CPU of the PostgreSQL backends serving one database, sampled while a command runs."""

    def __init__(self, admin: str, database: str) -> None:
        self.engine = sa.create_engine(admin.replace("postgresql://", "postgresql+psycopg://") + "/postgres")
        self.database = database
        self.cpu: dict[int, float] = {}
        self.start: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        with self.engine.connect() as c:
            while not self.stop.is_set():
                pids = c.execute(sa.text("SELECT pid FROM pg_stat_activity WHERE datname = :d"),
                                 {"d": self.database}).scalars().all()
                c.rollback()
                for pid in pids:
                    if (cpu := _proc_cpu(pid)) is not None:
                        self.cpu[pid] = cpu
                self.stop.wait(0.1)

    def __enter__(self) -> _Backends:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()
        self.engine.dispose()

    @property
    def total(self) -> float:
        return sum(self.cpu.values())


def report(location: str, out: Path, options: list[str], backends: _Backends | None) -> Measured:
    """``shadowdiff report`` on the store, as a child process, measured."""
    started = time.perf_counter()
    with backends or contextlib.nullcontext():
        process = subprocess.Popen([sys.executable, "-m", "shadowdiff", "report", location, "--out", str(out),
                                    *options], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        error = process.stderr.read().decode() if process.stderr else ""
    wall = time.perf_counter() - started
    if process.returncode not in (0, 1, 2):
        raise RuntimeError(f"report failed ({process.returncode}): {error[-2000:]}")
    return Measured(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024,
                    backends.total if backends else None, process.returncode)


@contextlib.contextmanager
def store_at(backend: str, pairs: int, admin: str) -> Iterator[tuple[str, _Backends | None]]:
    """A location for a new store of ``pairs`` pairs, removed after."""
    if backend == "sqlite":
        directory = tempfile.mkdtemp(prefix="report-scale-")
        try:
            yield str(Path(directory) / "store.sqlite"), None
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return
    database = f"shadowdiff_bench_scale_{pairs}"
    engine = sa.create_engine(admin.replace("postgresql://", "postgresql+psycopg://") + "/postgres",
                              isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(sa.text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        c.execute(sa.text(f'CREATE DATABASE "{database}"'))
    try:
        yield f"{admin}/{database}", _Backends(admin, database)
    finally:
        with engine.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        engine.dispose()


def _growth(rows: list[tuple[int, Measured]]) -> list[str]:
    """Per step of size: the exponent of growth (1: linear, 2: quadratic), and the CPU,
    server CPU and memory at 10M pairs extrapolated from the last two sizes."""
    lines = []
    for (n0, a), (n1, b) in itertools.pairwise(rows):
        k = math.log(b.cpu / a.cpu) / math.log(n1 / n0) if a.cpu > 0 and b.cpu > 0 else float("nan")
        lines.append(f"  {n0:,} -> {n1:,}: CPU x{b.cpu / a.cpu:.2f} for x{n1 / n0:g} pairs (exponent {k:.2f})")
    if len(rows) >= 2:
        (n0, a), (n1, b) = rows[-2], rows[-1]
        per_pair = (b.cpu - a.cpu) / (n1 - n0)
        ten_m = b.cpu + per_pair * (10_000_000 - n1)
        rss = b.rss_mb + (b.rss_mb - a.rss_mb) / (n1 - n0) * (10_000_000 - n1)
        line = (f"  10M pairs (linear from the last two): CPU {ten_m:,.0f} s ({per_pair * 1e6:.1f} µs a pair), "
                f"peak RSS {rss:,.0f} MB")
        if a.server_cpu is not None and b.server_cpu is not None:
            server = b.server_cpu + (b.server_cpu - a.server_cpu) / (n1 - n0) * (10_000_000 - n1)
            line += f", server CPU {server:,.0f} s"
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--backend", default="sqlite,postgres")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--summaries", type=Path, help="keep each report's summary.json here")
    parser.add_argument("report_options", nargs="*", help="after --: options for shadowdiff report")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    figures: list[tuple[str, ...]] = [("backend", "pairs", "generate s", "report CPU s", "µs/pair", "wall s",
                                       "peak RSS MB", "server CPU s", "exit")]
    growth: dict[str, list[tuple[int, Measured]]] = {}
    for backend in args.backend.split(","):
        for n in sizes:
            with store_at(backend, n, args.postgres) as (location, backends), \
                    tempfile.TemporaryDirectory(prefix="report-scale-out-") as out:
                began = time.perf_counter()
                fill(location, n)
                generated = time.perf_counter() - began
                m = report(location, Path(out), args.report_options, backends)
                if args.summaries:
                    args.summaries.mkdir(parents=True, exist_ok=True)
                    shutil.copy(Path(out) / "summary.json", args.summaries / f"{backend}-{n}.json")
            growth.setdefault(backend, []).append((n, m))
            figures.append((backend, f"{n:,}", f"{generated:.1f}", f"{m.cpu:.2f}", f"{m.cpu / n * 1e6:.1f}",
                            f"{m.wall:.1f}", f"{m.rss_mb:.0f}",
                            "—" if m.server_cpu is None else f"{m.server_cpu:.2f}", str(m.exit_code)))
            print(json.dumps({"backend": backend, "pairs": n, "generate_s": round(generated, 1),
                              "cpu_s": round(m.cpu, 2), "wall_s": round(m.wall, 1), "rss_mb": round(m.rss_mb),
                              "server_cpu_s": m.server_cpu and round(m.server_cpu, 2)}), flush=True)
    print(table(figures))
    for backend, rows in growth.items():
        print(f"{backend}:")
        print("\n".join(_growth(rows)))


if __name__ == "__main__":
    main()

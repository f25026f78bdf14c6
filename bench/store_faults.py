"""What a failing store costs the proxy's clients: real processes, one fault.

Two simulated vLLM servers and ``shadowdiff serve`` (the first the primary, the
second the shadow, every pair kept: ``--keep-rate 1``) start from the checkout being
measured; N chat completions, half of them streamed, go through the proxy at
concurrency C while a store fault is injected partway through:

* ``sqlite-lock``: an exclusive transaction held on the SQLite store (past its 10 s busy timeout);
* ``pg-lock``: ``LOCK TABLE pairs IN ACCESS EXCLUSIVE MODE`` held;
* ``pg-terminate``: every session of the proxy's database terminated every 2 s;
* ``pg-stop``: a PostgreSQL server of the bench's own (initdb/pg_ctl, never the
  machine's shared one) stopped ``-m immediate``, started, stopped ``-m fast``, started;
* ``none``: the baseline.

``pg-lock`` and ``pg-terminate`` use a fresh database on ``--postgres``, dropped after.
``/healthz`` and ``/metrics`` are polled every 0.5 s (30 s client timeout, so a scrape
that hangs shows with its duration). Printed: client errors, latency before, during and
after the fault, throughput, the polls' worst times, serve's log size and RSS, the pair
counters from /metrics once the proxy has caught up (or stalled), how long SIGTERM took
against ``--drain-timeout``, and what the store holds after exit. Only the CLI is used,
so any checkout can be measured (``--checkout``, with its own ``.venv``):

    python bench/store_faults.py --fault sqlite-lock [--requests 3000] [--concurrency 8]
    python bench/store_faults.py --fault pg-terminate --checkout /work/wt-before --json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families

from _common import ROOT, table

if ROOT not in sys.path:   # (_common has put it there; the tests' helpers below need it)
    sys.path.insert(0, ROOT)
from tests.support.pgserver import Cluster, throwaway_postgres
from tests.support.servers import free_port, wait_ready
from tests.support.storefaults import Fault, PgLock, PgStop, PgTerminate, SqliteLock

MODEL = "Qwen/Qwen3-8B"
FAULTS = ("none", "sqlite-lock", "pg-lock", "pg-terminate", "pg-stop")
HOLD = {"sqlite-lock": 15.0, "pg-lock": 40.0, "pg-terminate": 20.0, "pg-stop": 10.0, "none": 0.0}
POLL_EVERY = 0.5
POLL_TIMEOUT = 30.0


@dataclass
class Checkout:
    """The code measured: its directory, the Python of its venv, its commit."""

    root: Path
    python: str

    @property
    def commit(self) -> str:
        result = subprocess.run(["git", "-C", str(self.root), "log", "-1", "--format=%h %s"], capture_output=True,
                                text=True)
        return result.stdout.strip()[:70]

    def command(self, *args: str) -> list[str]:
        return [self.python, "-m", "shadowdiff", *args]


@contextlib.contextmanager
def process(checkout: Checkout, args: list[str], core: int,
            log: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A ``shadowdiff`` process of the checkout (its directory first on sys.path), pinned to ``core``."""
    cmd = checkout.command(*args)
    if (os.cpu_count() or 1) > 1:
        cmd = ["taskset", "-c", str(core % (os.cpu_count() or 1)), *cmd]
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR" and not k.startswith("SHADOWDIFF_")}
    out = log.open("wb") if log else subprocess.DEVNULL
    child = subprocess.Popen(cmd, cwd=checkout.root, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=out,
                             stderr=subprocess.STDOUT if log else subprocess.DEVNULL)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(30)
        if log:
            out.close()  # type: ignore[union-attr]


@contextlib.contextmanager
def simulator(checkout: Checkout, args: argparse.Namespace) -> Iterator[str]:
    port = free_port()
    with process(checkout, ["simulate", "--served-model-name", MODEL, "--ttft", str(args.ttft), "--tpot",
                            str(args.tpot), "--port", str(port)], core=0) as child:
        wait_ready(f"http://127.0.0.1:{port}/health", child)
        yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    name = f"shadowdiff_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@dataclass
class Schedule:
    """The fault's cycles (inject, hold, release), run in a thread; the windows it was on."""

    cycles: list[Fault]
    after: float
    hold: float
    gap: float = 5.0
    until_released: bool = False      # the last cycle holds until ``released`` is set (--stop-in-fault)
    released: threading.Event = field(default_factory=threading.Event)
    windows: list[tuple[float, float]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def run(self, started: float) -> None:
        try:
            time.sleep(max(0.0, started + self.after - time.monotonic()))
            for i, fault in enumerate(self.cycles):
                if i:
                    time.sleep(self.gap)
                fault.inject()
                began = time.monotonic()
                time.sleep(self.hold)
                if self.until_released and i == len(self.cycles) - 1:
                    self.released.wait()
                fault.release()
                self.windows.append((began - started, time.monotonic() - started))
        except BaseException as exc:  # reported with the figures
            self.error = exc
        finally:
            self.done.set()

    @property
    def window(self) -> tuple[float, float] | None:
        return (self.windows[0][0], self.windows[-1][1]) if self.windows else None


@dataclass
class Sample:
    began: float
    seconds: float
    outcome: str          # "ok", "HTTP 504", an exception's name, "incomplete"


async def one_request(client: httpx.AsyncClient, url: str, i: int, max_tokens: int) -> str:
    stream = i % 2 == 0
    body = {"model": MODEL, "messages": [{"role": "user", "content": f"Tell me about topic {i}."}],
            "temperature": 0, "max_tokens": max_tokens, "stream": stream}
    async with client.stream("POST", url + "/v1/chat/completions", json=body) as r:
        raw = await r.aread()
    if r.status_code != 200:
        return f"HTTP {r.status_code}"
    if stream:
        return "ok" if raw.rstrip().endswith(b"data: [DONE]") else "incomplete"
    return "ok" if json.loads(raw)["choices"][0]["message"]["content"] else "incomplete"


async def drive(url: str, args: argparse.Namespace, started: float) -> list[Sample]:
    samples: list[Sample] = []
    next_i = 0
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(timeout=args.client_timeout, limits=limits) as client:
        async def worker() -> None:
            nonlocal next_i
            while next_i < args.requests and time.monotonic() - started < args.max_seconds:
                i, next_i = next_i, next_i + 1
                began = time.monotonic()
                try:
                    outcome = await one_request(client, url, i, args.max_tokens)
                except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:
                    outcome = type(exc).__name__
                samples.append(Sample(began - started, time.monotonic() - began, outcome))

        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    return samples


async def poll(url: str, stop: asyncio.Event, started: float, pid: int, rss: list[int] | None = None,
               last: list[str] | None = None) -> list[Sample]:
    """GET ``url`` every POLL_EVERY seconds (one at a time, as Prometheus scrapes) until
    ``stop``; the last body answered with 200 is kept in ``last``."""
    samples: list[Sample] = []
    async with httpx.AsyncClient(timeout=POLL_TIMEOUT) as client:
        while not stop.is_set():
            began = time.monotonic()
            try:
                r = await client.get(url)
                outcome = "ok" if r.status_code == 200 else f"HTTP {r.status_code}"
                if last is not None and r.status_code == 200:
                    last[:] = [r.text]
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            samples.append(Sample(began - started, time.monotonic() - began, outcome))
            if rss is not None:
                rss.append(rss_of(pid))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(0.0, began + POLL_EVERY - time.monotonic()))
    return samples


def rss_of(pid: int) -> int:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def scrape(url: str) -> dict[str, float]:
    """The samples of /metrics by name and labels, e.g. ``shadowdiff_pairs_dropped_total{reason=shutdown}``."""
    return samples_of(httpx.get(url + "/metrics", timeout=POLL_TIMEOUT).text)


def samples_of(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            found[s.name + (f"{{{labels}}}" if labels else "")] = s.value
            found[s.name + "[sum]"] = found.get(s.name + "[sum]", 0.0) + s.value
    return found


def pair_figures(metrics: dict[str, float]) -> dict[str, float]:
    return {"pairs_total": metrics.get("shadowdiff_pairs_total[sum]", 0.0),
            "stored_total": metrics.get("shadowdiff_pairs_stored_total", 0.0),
            **{f"dropped_{k.split('reason=')[1].rstrip('}')}": v for k, v in metrics.items()
               if k.startswith("shadowdiff_pairs_dropped_total{")},
            "store_up": metrics.get("shadowdiff_store_up", float("nan"))}


def settle(url: str, ok: int, limit: float = 120.0, stall: float = 15.0) -> tuple[dict[str, float], float, str]:
    """Poll /metrics until every answered request is a pair and every pair stored or
    dropped, or nothing has moved for ``stall`` seconds; the last figures, time, why."""
    began = last_move = time.monotonic()
    seen: tuple[float, ...] = ()
    figures = pair_figures({})
    while True:
        with contextlib.suppress(httpx.HTTPError):   # a scrape that failed or hung: as if nothing moved
            figures = pair_figures(scrape(url))
        accounted = figures["stored_total"] + sum(v for k, v in figures.items() if k.startswith("dropped_"))
        now = time.monotonic()
        if figures["pairs_total"] >= ok and accounted >= figures["pairs_total"]:
            return figures, now - began, "caught up"
        if (figures["pairs_total"], accounted) != seen:
            seen, last_move = (figures["pairs_total"], accounted), now
        if now - last_move > stall:
            return figures, now - began, f"stalled {stall:.0f} s"
        if now - began > limit:
            return figures, now - began, f"gave up after {limit:.0f} s"
        time.sleep(0.5)


def store_rows(location: str) -> dict[str, int]:
    """Rows of pairs and the run_counts sums, read after serve exited."""
    queries = {"pairs_rows": "SELECT count(*) FROM pairs",
               "run_counts_pairs": "SELECT coalesce(sum(pairs), 0) FROM run_counts WHERE of = 'pairs'"}
    if location.startswith("postgresql://"):
        with psycopg.connect(location) as c:
            return {k: int(c.execute(q).fetchone()[0]) for k, q in queries.items()}  # type: ignore[index]
    with contextlib.closing(sqlite3.connect(Path(location) / "shadowdiff.sqlite")) as c:
        return {k: int(c.execute(q).fetchone()[0]) for k, q in queries.items()}


def latency_rows(samples: list[Sample], window: tuple[float, float] | None, total: float) -> list[tuple[str, ...]]:
    def row(name: str, chosen: list[Sample], seconds: float) -> tuple[str, ...]:
        times = sorted(s.seconds for s in chosen)
        if not times:
            return (name, "0", "-", "-", "-", "-")
        p50, p99 = (times[min(len(times) - 1, int(p * len(times)))] for p in (0.5, 0.99))
        return (name, str(len(times)), f"{p50 * 1000:.0f}", f"{p99 * 1000:.0f}", f"{times[-1] * 1000:.0f}",
                f"{len(times) / seconds:.1f}" if seconds > 0 else "-")

    rows = [("requests", "n", "p50 ms", "p99 ms", "max ms", "req/s")]
    if window is None:
        return [*rows, row("all", samples, total)]
    a, b = window
    before = [s for s in samples if s.began + s.seconds < a]
    during = [s for s in samples if s.began <= b and s.began + s.seconds >= a]
    after = [s for s in samples if s.began > b]
    last = max((s.began + s.seconds for s in samples), default=b)
    return [*rows, row("before the fault", before, a), row("during the fault", during, min(b, last) - a),
            row("after the fault", after, max(0.0, last - b)), row("all", samples, total)]


def poll_figures(samples: list[Sample], window: tuple[float, float] | None) -> dict[str, Any]:
    inside = [s for s in samples if window and s.began <= window[1] and s.began + s.seconds >= window[0]]
    failed = [s for s in samples if s.outcome != "ok"]
    return {"polls": len(samples), "max_ms": round(max((s.seconds for s in samples), default=0) * 1000),
            "max_during_fault_ms": round(max((s.seconds for s in inside), default=0) * 1000),
            "failed": dict(Counter(s.outcome for s in failed)),
            "failed_seconds": [round(s.seconds, 1) for s in failed][:10]}


async def measure(url: str, serve: subprocess.Popen[bytes], schedule: Schedule | None,
                  args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    if schedule is not None:
        threading.Thread(target=schedule.run, args=(started,), daemon=True).start()
    stop = asyncio.Event()
    rss: list[int] = []
    health = asyncio.create_task(poll(url + "/healthz", stop, started, serve.pid, rss))
    last: list[str] = []
    metrics = asyncio.create_task(poll(url + "/metrics", stop, started, serve.pid, last=last))
    samples = await drive(url, args, started)
    load_seconds = time.monotonic() - started
    if schedule is not None and not args.stop_in_fault:
        await asyncio.to_thread(schedule.done.wait)
    stop.set()
    return {"samples": samples, "load_seconds": load_seconds, "healthz": await health, "metrics": await metrics,
            "rss": rss, "last_metrics": last[0] if last else ""}


def sigterm(serve: subprocess.Popen[bytes], drain: float) -> tuple[float, int | None]:
    began = time.monotonic()
    serve.send_signal(signal.SIGTERM)
    try:
        code: int | None = serve.wait(drain + 90)
    except subprocess.TimeoutExpired:
        serve.kill()
        serve.wait()
        code = None
    return time.monotonic() - began, code


def faults(args: argparse.Namespace, location: str, workdir: Path, cluster: Cluster | None) -> list[Fault]:
    """The fault's cycles: one, or pg-stop's two outages (a crash, then a fast stop)."""
    if args.fault == "sqlite-lock":
        return [SqliteLock(workdir / "store" / "shadowdiff.sqlite")]
    if args.fault == "pg-lock":
        return [PgLock(location)]
    if args.fault == "pg-terminate":
        return [PgTerminate(location, args.every)]
    if args.fault == "pg-stop" and cluster is not None:
        return [PgStop(cluster, "immediate"), PgStop(cluster, "fast")]
    return []


def run(args: argparse.Namespace, checkout: Checkout, workdir: Path) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(throwaway_postgres()) if args.fault == "pg-stop" else None
        if cluster is not None:
            location = cluster.url
        elif args.fault in ("pg-lock", "pg-terminate") or args.store == "postgres":
            location = stack.enter_context(fresh_database(args.postgres))
        else:
            location = str(workdir / "store")
        cycles = faults(args, location, workdir, cluster)
        schedule = Schedule(cycles, args.fault_after, args.hold, until_released=args.stop_in_fault) if cycles else None
        primary = stack.enter_context(simulator(checkout, args))
        shadow = stack.enter_context(simulator(checkout, args))
        port = free_port()
        log = workdir / "serve.log"
        serve = stack.enter_context(process(checkout, [
            "serve", "--primary", primary, "--shadow", shadow, "--store", location, "--keep-rate", "1",
            "--drain-timeout", str(args.drain_timeout), "--port", str(port)], core=1, log=log))
        url = f"http://127.0.0.1:{port}"
        wait_ready(url + "/healthz", serve, timeout=60)
        figures = asyncio.run(measure(url, serve, schedule, args))
        ok = sum(s.outcome == "ok" for s in figures["samples"])
        if args.stop_in_fault:
            # (a scrape now may hang on the store: the last one that answered, during the load)
            settled, settle_seconds, how = pair_figures(samples_of(figures["last_metrics"])), 0.0, \
                "the last scrape that answered, before SIGTERM in the fault"
        else:
            settled, settle_seconds, how = settle(url, ok)
        rss_end = rss_of(serve.pid)
        exit_seconds, code = sigterm(serve, args.drain_timeout)
        if schedule is not None:
            schedule.released.set()
            schedule.done.wait(120)
        rows = store_rows(location)
    text = log.read_text(errors="replace")
    if args.keep_log is not None:
        args.keep_log.write_text(text)
    window = schedule.window if schedule else None
    samples: list[Sample] = figures["samples"]
    return {
        "fault": args.fault, "commit": checkout.commit, "requests": len(samples), "ok": ok,
        "errors": dict(Counter(s.outcome for s in samples if s.outcome != "ok")),
        "fault_windows": [(round(a, 1), round(b, 1)) for a, b in schedule.windows] if schedule else [],
        "fault_error": repr(schedule.error) if schedule and schedule.error else None,
        "terminated_sessions": sum(getattr(c, "killed", 0) for c in cycles),
        "store": "throwaway PostgreSQL cluster (pg_ctl)" if cluster else location.split("@")[-1],
        "load_seconds": round(figures["load_seconds"], 1),
        "latency": latency_rows(samples, window, figures["load_seconds"]),
        "healthz": poll_figures(figures["healthz"], window), "metrics": poll_figures(figures["metrics"], window),
        "log_bytes": len(text.encode()), "log_lines": text.count("\n"), "log_tracebacks": text.count("Traceback"),
        "log_head": [line[:160] for line in text.splitlines()[:6]],
        "rss_max_mb": round(max(figures["rss"], default=0) / 2**20), "rss_end_mb": round(rss_end / 2**20),
        "pairs": settled, "settle": f"{how} in {settle_seconds:.1f} s",
        "exit_seconds": round(exit_seconds, 1), "exit_code": code, "drain_timeout": args.drain_timeout,
        "store_rows": rows,
    }


def summary(r: dict[str, Any]) -> str:
    lines = [f"store fault: {r['fault']}  windows (s from start): {r['fault_windows'] or '-'}"
             + (f"  sessions terminated: {r['terminated_sessions']}" if r["terminated_sessions"] else ""),
             f"checkout: {r['commit']}", f"store: {r['store']}"]
    if r["fault_error"]:
        lines.append(f"THE FAULT FAILED: {r['fault_error']}")
    lines += [f"client: {r['requests']} requests in {r['load_seconds']} s, {r['ok']} ok, "
              f"errors: {r['errors'] or 'none'}",
              table(r["latency"])]
    for name in ("healthz", "metrics"):
        p = r[name]
        lines.append(f"/{name}: {p['polls']} polls, max {p['max_ms']} ms, max during the fault "
                     f"{p['max_during_fault_ms']} ms, failed: {p['failed'] or 'none'}"
                     + (f" after {p['failed_seconds']} s" if p["failed"] else ""))
    pairs = r["pairs"]
    lines += [f"serve log: {r['log_bytes']} bytes, {r['log_lines']} lines, {r['log_tracebacks']} tracebacks",
              *(f"  | {line}" for line in r["log_head"]),
              f"serve RSS: max {r['rss_max_mb']} MB, at the end {r['rss_end_mb']} MB",
              f"/metrics at the end ({r['settle']}): pairs counted {pairs['pairs_total']:.0f}, stored "
              f"{pairs['stored_total']:.0f}, " + (", ".join(f"{k} {v:.0f}" for k, v in pairs.items()
                                                             if k.startswith("dropped_")) or "no dropped metric")
              + f", store_up {pairs['store_up']:g}",
              f"SIGTERM: exit after {r['exit_seconds']} s (--drain-timeout {r['drain_timeout']:g}), code "
              f"{r['exit_code'] if r['exit_code'] is not None else 'none: killed'}",
              f"store after exit: {r['store_rows']['pairs_rows']} pairs rows, run_counts pairs sum "
              f"{r['store_rows']['run_counts_pairs']}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fault", choices=FAULTS, default="sqlite-lock")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-seconds", type=float, default=240.0, help="stop sending after this long")
    parser.add_argument("--fault-after", type=float, default=5.0, help="seconds into the load")
    parser.add_argument("--hold", type=float, default=None,
                        help="seconds the fault lasts (each of pg-stop's two outages); default by fault: "
                             + ", ".join(f"{k} {v:g}" for k, v in HOLD.items() if v))
    parser.add_argument("--every", type=float, default=2.0, help="pg-terminate: seconds between terminations")
    parser.add_argument("--stop-in-fault", action="store_true",
                        help="SIGTERM serve while the fault still holds (released once serve exits)")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite", help="for --fault none")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="server for pg-lock/pg-terminate (a database is created and dropped)")
    parser.add_argument("--checkout", type=Path, default=Path(ROOT), help="the code measured (uses its .venv)")
    parser.add_argument("--python", default=None, help="the checkout's Python (default: its .venv's, else this one)")
    parser.add_argument("--drain-timeout", type=float, default=10.0)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--ttft", type=float, default=0.01, help="the simulators' seconds to the first token")
    parser.add_argument("--tpot", type=float, default=0.001, help="the simulators' seconds per token")
    parser.add_argument("--client-timeout", type=float, default=60.0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--keep-log", type=Path, default=None, help="copy serve's log here")
    args = parser.parse_args()
    args.hold = HOLD[args.fault] if args.hold is None else args.hold
    root = args.checkout.resolve()
    venv = root / ".venv" / "bin" / "python"
    checkout = Checkout(root, args.python or (str(venv) if venv.exists() else sys.executable))
    with tempfile.TemporaryDirectory(prefix="store-faults-") as workdir:
        result = run(args, checkout, Path(workdir))
    print(summary(result))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()

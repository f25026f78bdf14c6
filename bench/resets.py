"""Client errors through the proxy and direct, each kind counted apart, with stalls.

Runs N streamed chat requests at concurrency C through ``shadowdiff serve`` (mirroring on:
a shadow upstream is configured) and then directly against the same upstream, with the
client the official ``openai`` package uses: httpx2 with its pool (openai's limits, the
default 5 s keep-alive expiry), no retries. Every request ends as one of

* ``ok``: status 200 and a stream that ends with ``data: [DONE]``;
* ``status NNN``: any other status;
* ``truncated``: a 200 whose stream ended cleanly without ``[DONE]``, or carried an error
  event (the proxy ends a primary's broken stream so);
* ``reset`` (ECONNRESET), ``disconnected`` (the server closed without an answer, or before
  its end: httpx's RemoteProtocolError), ``timeout``, ``connect`` or ``other``, each split
  by whether anything of the answer had arrived ("before head" / "mid-answer") and
  whether the connection was reused from the pool or opened for the request.

``--stall S --every E`` stops the server the client talks to (the proxy, or the upstream
when direct) with SIGSTOP for S seconds every E seconds, then SIGCONT: a stall of the kind
a loaded host gives a process. ``--pause-share P`` sends that share of requests after a pause
of up to ``--pause`` seconds, as clients that are not always sending do: their pooled
connections sit idle meanwhile, which is what a server's keep-alive deadline closes. The
upstreams are ``bench/_instant.py`` (64 frames, no work) or, with ``--upstream simulate``,
``shadowdiff simulate``. The proxy's log is kept and its lines counted (a failure the
proxy saw is logged; one uvicorn dealt with is not).

    python bench/resets.py [--requests 100000] [--concurrency 32] [--stall 4 --every 15]
                           [--pause-share 0.02 --pause 5] [--only proxied|direct]
                           [--upstream instant|simulate] [--proxy-option=--client-idle-timeout=5]

Figures (docs/serve.md, "Client connections are bounded"): with ``--stall 4 --every 15
--pause-share 0.02``, 28 resets in 100,000 through the proxy with uvicorn's 5 s keep-alive,
0 with ``--client-idle-timeout`` at its 75 s, 59 direct (the upstream's uvicorn, 5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2

from _common import ROOT, free_port, pin, started, table

BODY = {"model": "bench", "messages": [{"role": "user", "content": "Explain rivers."}], "temperature": 0,
        "max_tokens": 64, "stream": True}
# the official openai client's pool (openai._constants.DEFAULT_CONNECTION_LIMITS): keep-alive
# expiry left at httpx's default, 5 s
LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
DONE = b"data: [DONE]\n\n"


@dataclass
class Tally:
    """What became of each request of one run."""

    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    failed_at: list[float] = field(default_factory=list)     # time.monotonic() of each failure
    seconds: float = 0.0
    stall_ends: list[float] = field(default_factory=list)

    def near_stalls(self, within: float = 1.0) -> int:
        """Failures within ``within`` seconds after a stall ended."""
        return sum(any(0 <= t - end <= within for end in self.stall_ends) for t in self.failed_at)


def kind_of(exc: BaseException) -> str:
    """One word for a transport error (the cause chain holds the OS error, if any)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionResetError) or "reset by peer" in str(seen).lower():
            return "reset"
        if isinstance(seen, BrokenPipeError):
            return "broken pipe"
        seen = seen.__cause__ or seen.__context__
    if isinstance(exc, httpx2.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx2.ConnectError):
        return "connect"
    if isinstance(exc, httpx2.RemoteProtocolError):
        return "disconnected"
    return f"other ({type(exc).__name__})"


async def one(client: httpx2.AsyncClient, url: str) -> str:
    """Send one streamed chat request; what became of it."""
    fresh = False
    head = False

    async def trace(event: str, _info: dict[str, Any]) -> None:
        nonlocal fresh
        fresh = fresh or event.startswith("connection.connect_tcp")

    try:
        async with client.stream("POST", url + "/v1/chat/completions", json=BODY,
                                 extensions={"trace": trace}) as r:
            head = True
            if r.status_code != 200:
                await r.aread()
                return f"status {r.status_code}"
            tail = b""
            broken = False
            async for chunk in r.aiter_raw():
                window = tail + chunk
                broken = broken or b'data: {"error"' in window
                tail = window[-64:]
            return "truncated" if broken or not tail.endswith(DONE) else "ok"
    except httpx2.HTTPError as exc:
        where = "mid-answer" if head else "before head"
        return f"{kind_of(exc)}, {where}, {'fresh' if fresh else 'reused'} connection"


@contextlib.contextmanager
def stalling(pid: int, stall: float, every: float, tally: Tally) -> Iterator[None]:
    """Stop ``pid`` for ``stall`` seconds every ``every`` seconds while the block runs."""
    done = threading.Event()

    def run() -> None:
        while not done.wait(every - stall):
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(stall)
            finally:
                os.kill(pid, signal.SIGCONT)
            tally.stall_ends.append(time.monotonic())

    thread = threading.Thread(target=run, daemon=True)
    if stall > 0:
        thread.start()
    try:
        yield
    finally:
        done.set()
        if stall > 0:
            thread.join()


async def load(url: str, args: argparse.Namespace, tally: Tally) -> None:
    remaining = iter(range(args.requests))
    timeout = httpx2.Timeout(60.0, connect=10.0)
    async with httpx2.AsyncClient(limits=LIMITS, timeout=timeout) as client:

        async def worker() -> None:
            for _ in remaining:
                if args.pause_share and random.random() < args.pause_share:
                    await asyncio.sleep(random.uniform(0, args.pause))   # a client between requests
                result = await one(client, url)
                tally.kinds[result] += 1
                if result != "ok":
                    tally.failed_at.append(time.monotonic())

        started_at = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        tally.seconds = time.monotonic() - started_at


def measure(url: str, pid: int, args: argparse.Namespace) -> Tally:
    tally = Tally()
    with stalling(pid, args.stall, args.every, tally):
        asyncio.run(load(url, args, tally))
    return tally


def upstream_command(kind: str, port: int, *extra: str) -> list[str]:
    if kind == "instant":
        return [sys.executable, os.path.join(ROOT, "bench", "_instant.py"), str(port)]
    return [sys.executable, "-m", "shadowdiff", "simulate", "--served-model-name", "bench", *extra,
            "--port", str(port)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--stall", type=float, default=0.0, help="seconds each SIGSTOP lasts (0: none)")
    parser.add_argument("--every", type=float, default=15.0, help="seconds from one stall's start to the next")
    parser.add_argument("--pause-share", type=float, default=0.0,
                        help="share of requests a worker sends after a pause (its connection idle meanwhile)")
    parser.add_argument("--pause", type=float, default=5.0, help="longest pause, seconds (drawn uniformly)")
    parser.add_argument("--proxy-option", action="append", default=[], metavar="FLAG",
                        help="a flag for shadowdiff serve, e.g. --proxy-option=--client-idle-timeout=5")
    parser.add_argument("--only", choices=("proxied", "direct"))
    parser.add_argument("--upstream", choices=("instant", "simulate"), default="instant")
    args = parser.parse_args()
    if args.stall and args.every <= args.stall:
        parser.error("--every must be longer than --stall")
    pin(0)
    ready = "/" if args.upstream == "instant" else "/health"
    tallies: dict[str, Tally] = {}
    log_lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        port = free_port()
        primary_process, primary = stack.enter_context(started(upstream_command(args.upstream, port), port, 0, ready))
        if args.only != "direct":
            port = free_port()
            _, shadow = stack.enter_context(started(upstream_command(args.upstream, port, "--profile", "fp8"),
                                                    port, 0, ready))
            port = free_port()
            log_path = os.path.join(tmp, "serve.log")
            log_file = stack.enter_context(open(log_path, "wb"))
            serve = [sys.executable, "-m", "shadowdiff", "serve", "--primary", primary, "--shadow", shadow,
                     "--store", os.path.join(tmp, "store"), *args.proxy_option, "--port", str(port)]
            proxy_process, proxy = stack.enter_context(started(serve, port, 1, "/healthz", stderr=log_file))
            tallies["proxied"] = measure(proxy, proxy_process.pid, args)
            with open(log_path, errors="replace") as f:
                log_lines = [line.rstrip() for line in f if not line.startswith("shadowdiff serve:")]
        if args.only != "proxied":
            tallies["direct"] = measure(primary, primary_process.pid, args)
    report(tallies, log_lines, args)


def report(tallies: dict[str, Tally], log_lines: list[str], args: argparse.Namespace) -> None:
    names = list(tallies)
    kinds = sorted({k for t in tallies.values() for k in t.kinds}, key=lambda k: (k != "ok", k))
    stalls = f"SIGSTOP {args.stall:g} s every {args.every:g} s" if args.stall else "no stalls"
    print(f"{args.requests:,} streamed chat requests at concurrency {args.concurrency}, {args.upstream} upstream, "
          f"{stalls} (of the server the client talks to), {args.pause_share:.0%} of requests after a pause of up "
          f"to {args.pause:g} s; client: httpx2 pool as openai's, no retries; proxy options: "
          f"{' '.join(args.proxy_option) or 'defaults'}\n")
    rows: list[tuple[str, ...]] = [("outcome", *names)]
    rows += [(k, *(f"{tallies[n].kinds[k]:,}" for n in names)) for k in kinds]
    rows.append(("failures within 1 s after a stall", *(f"{tallies[n].near_stalls():,}" for n in names)))
    rows.append(("stalls", *(f"{len(tallies[n].stall_ends)}" for n in names)))
    rows.append(("wall time, s", *(f"{tallies[n].seconds:.0f}" for n in names)))
    rows.append(("requests/s", *(f"{args.requests / tallies[n].seconds:,.0f}" for n in names)))
    print(table(rows))
    if "proxied" in tallies:
        print(f"\nthe proxy's log: {len(log_lines)} lines")
        for line, count in collections.Counter(line[:160] for line in log_lines).most_common(8):
            print(f"  {count} x {line}")


if __name__ == "__main__":
    main()

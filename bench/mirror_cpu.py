"""What mirroring costs the proxy in CPU, against a minimal reference proxy, in one run.

Upstreams answer at once (``bench/_instant.py``, non-streamed, ~1,000 characters), so
every figure is the proxy's own work. Five paths are measured in interleaved rounds
(each round runs each path once, so drift on the shared machine hits all alike):

* ``direct``: the client against the primary itself (the control for throughput);
* ``reference``: ``bench/_minimal_proxy.py`` (aiohttp, ~60 lines, no mirroring);
* ``serve, mirroring off``: ``shadowdiff serve`` with no shadow;
* ``serve, identical, W``: a shadow that answers what the primary answers (pairs counted,
  1 % kept);
* ``serve, all changed, W``: a shadow whose every answer differs a little from the primary's
  (numbers and words): every pair compared, triaged, redacted and stored (SQLite);

each of the last two with every ``--pair-worker`` W asked for (``thread,process`` by
default: the pairs made in the proxy's thread, or in its pair process).

At concurrency 32 (``--seconds`` per path and round) the proxy's CPU per request is read
from /proc: the whole process, its event-loop thread (the main thread) and its other
threads apart, and its child processes (the pair process) apart; the proxy's CPU is
measured until it goes quiet after the load, so the pairs still being stored count.
Back to back, an instant upstream saturates the proxy's core, which then mirrors only
what its pairs' work gets through (the rest is served, not mirrored: ``pairs_behind``);
``--rate`` paces the requests instead, so that below what the proxy keeps up with every
request is mirrored and the CPU per request is that of a mirrored one.
At concurrency 1 each path's requests alternate with direct ones, one at a time, and the
added p50 is proxied minus direct; the control alternates two direct servers.

The upstreams and the client share core 0; the proxies run on core 1.

    python bench/mirror_cpu.py [--rounds 3] [--seconds 4] [--requests 600] [--rate 800]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass

import aiohttp

from _common import ROOT, free_port, instant, pin, server, shadowdiff, table

BODY = {"model": "bench", "messages": [{"role": "user", "content": "Explain rivers."}], "temperature": 0,
        "max_tokens": 256}
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Cpu:
    """CPU seconds of a process: its main (event-loop) thread, its other threads, its children."""

    loop: float = 0.0
    threads: float = 0.0
    children: float = 0.0

    @property
    def process(self) -> float:
        return self.loop + self.threads

    @property
    def total(self) -> float:
        return self.process + self.children

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.loop - other.loop, self.threads - other.threads, self.children - other.children)


def _ticks(path: str, children: bool = False) -> float:
    """utime + stime (and, with ``children``, cutime + cstime: the children reaped) of a stat file, in seconds."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    used = int(fields[11]) + int(fields[12])
    if children:
        used += int(fields[13]) + int(fields[14])
    return used / TICK


def _descendants(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    found += [int(child), *_descendants(int(child))]
    return found


def cpu(pid: int) -> Cpu:
    """The process's CPU so far, split by thread; its live descendants' and reaped children's apart."""
    loop = threads = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            used = _ticks(f"/proc/{pid}/task/{task}/stat")
            if int(task) == pid:
                loop = used
            else:
                threads += used
    children = _ticks(f"/proc/{pid}/stat", children=True) - _ticks(f"/proc/{pid}/stat")
    for child in _descendants(pid):
        with contextlib.suppress(OSError):
            children += _ticks(f"/proc/{child}/stat")
    return Cpu(loop, threads, children)


def quiet(pid: int, limit: float = 10.0) -> None:
    """Wait until the process has finished what the load left it (pairs to store): a
    quarter second using under 5 ms of CPU."""
    deadline = time.monotonic() + limit
    before = cpu(pid).total
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = cpu(pid).total
        if now - before < 0.005:
            return
        before = now


async def post(session: aiohttp.ClientSession, url: str) -> float:
    started = time.perf_counter()
    async with session.post(url + "/v1/chat/completions", json=BODY) as r:
        await r.read()
        assert r.status == 200, r.status
    return time.perf_counter() - started


async def load(url: str, seconds: float, concurrency: int, rate: float | None = None) -> int:
    """Requests completed in ``seconds`` at ``concurrency``: back to back, or with ``rate``
    sent at that many a second (each at its time, by whichever of the ``concurrency``
    workers is free), so that a proxy that keeps up mirrors them all."""
    done = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        for _ in range(20):
            await post(session, url)
        start = time.perf_counter()
        stop = start + seconds
        sent = 0

        async def worker() -> None:
            nonlocal done, sent
            while time.perf_counter() < stop:
                if rate is not None:
                    at = start + sent / rate
                    sent += 1
                    if at >= stop:
                        return
                    await asyncio.sleep(max(0.0, at - time.perf_counter()))
                await post(session, url)
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


async def alternate(direct: str, proxied: str, requests: int) -> tuple[float, float]:
    """p50 of ``requests`` calls each way, alternating, one at a time. (One proxy at a time:
    going round every proxy in turn, each met the pairs the one before left its core.)"""
    d: list[float] = []
    p: list[float] = []
    async with aiohttp.ClientSession() as session:
        for _ in range(20):
            await post(session, direct)
            await post(session, proxied)
        for _ in range(requests):
            d.append(await post(session, direct))
            p.append(await post(session, proxied))
    return statistics.median(d), statistics.median(p)


def _mirrored(url: str, path: str) -> float:
    """Requests a path's proxy has mirrored so far (none for direct, the reference, or serve
    without a shadow): past its bound of pairs not yet complete, a proxy serves a request
    without mirroring it (``pairs_behind``), so a round's CPU per request is only
    mirroring's cost in the share of requests mirrored."""
    if not path.startswith("serve, ") or path == "serve, mirroring off":
        return 0.0
    return metric(url, "shadowdiff_shadow_requests_total", 'result="mirrored"')


def metric(url: str, name: str, labels: str = "") -> float:
    """The sum of a metric's samples on a proxy's /metrics whose labels contain ``labels``."""
    async def get() -> str:
        async with aiohttp.ClientSession() as session, session.get(url + "/metrics") as r:
            return await r.text()
    text = asyncio.run(get())
    return sum(float(m.group(2)) for m in re.finditer(rf"^{name}(\{{[^}}]*\}})? (\S+)$", text, re.M)
               if labels in (m.group(1) or ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--requests", type=int, default=600, help="requests each way at concurrency 1, per round")
    parser.add_argument("--rate", type=float, default=None,
                        help="requests a second at concurrency 32 (default: back to back): below what the proxy "
                             "keeps up with, every request is mirrored")
    parser.add_argument("--pair-worker", default="thread,process",
                        help="serve's --pair-worker for the mirrored paths, comma-separated: one pair of paths each")
    args = parser.parse_args()
    pin(0)

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        primary = stack.enter_context(instant(0, "long"))
        control = stack.enter_context(instant(0, "long"))
        same = stack.enter_context(instant(0, "long"))
        changed = stack.enter_context(instant(0, "changed"))
        port = free_port()
        processes: dict[str, tuple[str, int]] = {}
        ref_url = stack.enter_context(server([sys.executable, os.path.join(ROOT, "bench", "_minimal_proxy.py"),
                                              primary, str(port)], port, 1, ready="/healthz"))
        paths = {"direct": primary, "reference": ref_url}
        paths["serve, mirroring off"] = stack.enter_context(
            shadowdiff("serve", "--primary", primary, "--store", f"{tmp}/off", core=1))
        changing = []
        for worker in args.pair_worker.split(","):
            # (the pair process inherits the proxy's core: its CPU is counted, and shares that core)
            paths[f"serve, identical, {worker}"] = stack.enter_context(shadowdiff(
                "serve", "--primary", primary, "--shadow", same, "--store", f"{tmp}/same-{worker}",
                "--pair-worker", worker, core=1))
            changing.append(f"serve, all changed, {worker}")
            paths[changing[-1]] = stack.enter_context(shadowdiff(
                "serve", "--primary", primary, "--shadow", changed, "--store", f"{tmp}/changed-{worker}",
                "--pair-worker", worker, core=1))
        for name, url in paths.items():
            processes[name] = (url, _listening_pid(int(url.rsplit(":", 1)[1])))
        spent: dict[str, list[tuple[Cpu, int, float, float]]] = {name: [] for name in paths}
        added: dict[str, list[float]] = {name: [] for name in ["control", *paths] if name != "direct"}
        for _ in range(args.rounds):
            for name, (url, pid) in processes.items():
                quiet(pid)
                mirrored = _mirrored(url, name)
                before = cpu(pid)
                n = asyncio.run(load(url, args.seconds, 32, args.rate))
                quiet(pid)
                spent[name].append((cpu(pid) - before, n, n / args.seconds, _mirrored(url, name) - mirrored))
            for name, url in [("control", control), *((n, u) for n, (u, _) in processes.items() if n != "direct")]:
                d, p = asyncio.run(alternate(primary, url, args.requests))
                added[name].append(p - d)
        for name in changing:
            quiet(processes[name][1])   # (the last pairs stored)
        time.sleep(1.0)
        counted = {name: (sum(metric(paths[name], "shadowdiff_pairs_total", f'outcome="{o}"')
                              for o in ("equivalent", "near", "divergent")),
                          metric(paths[name], "shadowdiff_pairs_stored_total"),
                          metric(paths[name], "shadowdiff_pairs_dropped_total")) for name in changing}
    report(spent, added, args, counted)


def _listening_pid(port: int) -> int:
    """The pid of the process listening on ``port`` (the server itself: taskset execs it)."""
    wanted = f":{port:04X}"
    inode = None
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(wanted) and fields[3] == "0A":
                inode = fields[9]
                break
    assert inode is not None, port
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
    raise LookupError(port)


def report(spent: dict[str, list[tuple[Cpu, int, float, float]]], added: dict[str, list[float]],
           args: argparse.Namespace, counted: dict[str, tuple[float, float, float]]) -> None:
    def per_request(name: str, part: str) -> float:
        # median over rounds of each round's CPU per request
        return statistics.median(getattr(c, part) / n for c, n, _, _ in spent[name])

    def per_mirrored(name: str, part: str = "total") -> tuple[float, float]:
        """(share of requests mirrored, the CPU of one mirrored request in ``part``): the
        round's CPU less what its unmirrored requests cost at mirroring off's rate, over the
        mirrored ones."""
        off = per_request("serve, mirroring off", part)
        rounds = [(getattr(c, part), n, m) for c, n, _, m in spent[name] if m > 0]
        if not rounds:
            return 0.0, float("nan")
        return (statistics.median(m / n for _, n, m in rounds),
                statistics.median((t - off * (n - m)) / m for t, n, m in rounds))

    ref_total = per_request("reference", "total")
    ref_loop = per_request("reference", "loop")
    direct_rps = statistics.median(r for _, _, r, _ in spent["direct"])
    rows = [("concurrency 32", "requests/s", "% of direct", "CPU/req ms (process)", "loop thread",
             "other threads", "children", "process+children", "x reference", "loop x ref", "mirrored",
             "per mirrored request ms", "x reference", "process x ref", "loop x ref")]
    for name in spent:
        rps = statistics.median(r for _, _, r, _ in spent[name])
        share, each = per_mirrored(name)
        total = per_request(name, "total")
        loop = per_request(name, "loop")
        rows.append((name, f"{rps:,.0f}", f"{100 * rps / direct_rps:.0f} %",
                     f"{per_request(name, 'process') * 1e3:.3f}", f"{loop * 1e3:.3f}",
                     f"{per_request(name, 'threads') * 1e3:.3f}",
                     f"{per_request(name, 'children') * 1e3:.3f}", f"{total * 1e3:.3f}",
                     "" if name == "direct" else f"{total / ref_total:.2f}",
                     "" if name == "direct" else f"{loop / ref_loop:.2f}",
                     f"{100 * share:.0f} %" if share else "",
                     f"{each * 1e3:.3f}" if share else "", f"{each / ref_total:.2f}" if share else "",
                     f"{per_mirrored(name, 'process')[1] / ref_total:.2f}" if share else "",
                     f"{per_mirrored(name, 'loop')[1] / ref_loop:.2f}" if share else ""))
    pace = "back to back" if args.rate is None else f"{args.rate:g} requests/s"
    print(f"shadowdiff serve's CPU per request against instant upstreams (~1,000-character answers), "
          f"{args.rounds} interleaved rounds of {args.seconds:g} s per path, {pace}; medians over rounds")
    print("(direct: the primary upstream's own CPU; the proxies on core 1, the client and upstreams on core 0)\n")
    print(table(rows))
    for name, (changed_pairs, stored, dropped) in counted.items():
        print(f"\n{name}: {changed_pairs:,.0f} changed pairs counted, {stored:,.0f} stored, {dropped:,.0f} dropped")
    print("(targets: CPU ≤ 2x reference, loop thread ≤ 1.5x reference, for a mirrored request: where not "
          "every request was mirrored, read the last four columns, each part's CPU less the unmirrored requests' "
          "at mirroring off's)\n")
    off = statistics.median(added["serve, mirroring off"])
    rows = [("concurrency 1", "added p50 ms (proxied - direct)", "min", "max", "mirroring adds ms")]
    for name, values in added.items():
        rows.append((name, f"{statistics.median(values) * 1e3:.3f}", f"{min(values) * 1e3:.3f}",
                     f"{max(values) * 1e3:.3f}",
                     f"{(statistics.median(values) - off) * 1e3:.3f}" if name.startswith("serve, ") and
                     name != "serve, mirroring off" else ""))
    print(table(rows))
    print(f"\n({args.requests} requests each way per round, alternating with direct ones; the range is over rounds; "
          "target: mirroring adds ≤ 0.3 ms p50)")


if __name__ == "__main__":
    main()

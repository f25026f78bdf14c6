"""The store fails; the client cannot tell.

A real ``shadowdiff serve`` process in front of two simulators, eight clients (the
official ``openai`` client, half of them streaming) asking all along (each every 0.2 s or
so), while the store fails as production stores fail: a SQLite file locked past its 10 s
busy timeout, ``LOCK TABLE pairs`` held on PostgreSQL, the proxy's connections terminated mid-write,
the PostgreSQL server stopped and started (a throwaway cluster of the test's own,
tests/support/pgserver.py). Each test checks what a user of the proxy would: no client
error, every answer whole and the primary's own, ``/healthz`` answering throughout,
every pair stored once the store is back (none dropped: the queue holds 10,000),
``shadowdiff_store_up`` going 0 and back to 1, and a few log lines per outage.
No timing is asserted; waits poll with generous limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import openai
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.fixtures import need_postgres, postgres_database
from tests.support.pgserver import Unavailable, throwaway_postgres
from tests.support.proxying import FP8, serve
from tests.support.servers import shadowdiff_process
from tests.support.storefaults import PgLock, PgStop, SqliteLock, injected, terminate_backends

MODEL = "Qwen/Qwen3-8B"
CLIENTS = 8
# Each client waits this long between its requests, as users do: up to 40 requests a second
# still reach the proxy all through each outage (hundreds of pairs held while the store is
# down), where at full speed the clients and servers kept both cores busy through each
# fault's fixed waits for no more than a longer queue.
PAUSE = 0.2
PROMPTS = [f"Tell me about topic {i}." for i in range(16)]
# per outage, each of the store's users says it once when it fails and once when it works again: the
# writer ("the store failed", "the store is back"), the heartbeat (every 2 s: it meets every outage)
# and the reads of the review state
STORE_LINES = 6


@pytest.fixture(scope="module")
def backends() -> Iterator[tuple[str, str]]:
    """The primary and the shadow (answering alike; serve keeps every pair: --keep-rate 1)."""
    with shadowdiff_process("simulate", "--served-model-name", MODEL) as (_, primary), \
            shadowdiff_process("simulate", "--served-model-name", FP8) as (_, shadow):
        yield primary, shadow


@dataclass
class Answer:
    prompt: str
    stream: bool
    text: str
    finish: str | None


@dataclass
class Traffic:
    """Clients asking through the proxy, and scrapes of /healthz and /metrics, until ``stop``."""

    url: str
    answers: list[Answer] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    health: list[str] = field(default_factory=list)       # "ok", or what a poll got instead
    store_up: list[float] = field(default_factory=list)   # every value a scrape of /metrics showed
    scrapes_failed: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    async def _client(self, n: int) -> None:
        client = openai.AsyncOpenAI(base_url=self.url + "/v1", api_key="test", max_retries=0, timeout=60)
        i = n
        async with client:
            while not self.stop.is_set():
                prompt, stream = PROMPTS[i % len(PROMPTS)], i % 2 == 0
                i += CLIENTS
                try:
                    self.answers.append(await ask(client, prompt, stream))
                except openai.OpenAIError as exc:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(PAUSE)

    def _clients(self) -> None:
        async def all_clients() -> None:
            await asyncio.gather(*(self._client(n) for n in range(CLIENTS)))

        asyncio.run(all_clients())

    def _poll_health(self) -> None:
        # as a load balancer would: every half second
        with httpx.Client(timeout=30) as http:
            while not self.stop.wait(0.5):
                try:
                    r = http.get(self.url + "/healthz")
                    self.health.append("ok" if r.status_code == 200 else f"HTTP {r.status_code}")
                except httpx.HTTPError as exc:
                    self.health.append(type(exc).__name__)

    def _poll_metrics(self) -> None:
        # as Prometheus would: one scrape at a time, every half second
        with httpx.Client(timeout=30) as http:
            while not self.stop.wait(0.5):
                began = time.monotonic()
                try:
                    self.store_up.append(metrics(http, self.url).get("shadowdiff_store_up", float("nan")))
                except httpx.HTTPError as exc:
                    self.scrapes_failed.append(f"{type(exc).__name__} after {time.monotonic() - began:.1f} s")

    @contextlib.contextmanager
    def running(self) -> Iterator[Traffic]:
        threads = [threading.Thread(target=f, daemon=True) for f in (self._clients, self._poll_health,
                                                                      self._poll_metrics)]
        for thread in threads:
            thread.start()
        try:
            yield self
        finally:
            self.stop.set()
            for thread in threads:
                thread.join(90)


async def ask(client: openai.AsyncOpenAI, prompt: str, stream: bool) -> Answer:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": prompt}]
    if not stream:
        r = await client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=64)
        return Answer(prompt, False, r.choices[0].message.content or "", r.choices[0].finish_reason)
    text, finish = "", None
    async for chunk in await client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                            max_tokens=64, stream=True):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    return Answer(prompt, True, text, finish)


def metrics(http: httpx.Client, url: str) -> dict[str, float]:
    """/metrics' unlabelled samples, and labelled ones summed by name."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(http.get(url + "/metrics").raise_for_status().text):
        for s in family.samples:
            found[s.name] = found.get(s.name, 0.0) + s.value if s.labels else s.value
    return found


def caught_up(url: str, answered: int) -> dict[str, float]:
    """/metrics once every answered request's pair is counted and stored, and the store is
    seen up again (polled, up to 90 s: a pool's connection the fault killed fails its next
    use, and the component that met it reports the store down until its next try)."""
    deadline = time.monotonic() + 90
    with httpx.Client(timeout=30) as http:
        while True:
            seen = metrics(http, url)
            if (seen["shadowdiff_pairs_total"] >= answered
                    and seen["shadowdiff_pairs_stored_total"] >= seen["shadowdiff_pairs_total"]
                    and seen.get("shadowdiff_store_up") == 1.0):
                return seen
            assert time.monotonic() < deadline, f"not caught up: {seen['shadowdiff_pairs_total']} counted, " \
                                                f"{seen['shadowdiff_pairs_stored_total']} stored of {answered}, " \
                                                f"store up {seen.get('shadowdiff_store_up')}"
            time.sleep(0.5)


def direct_answers(primary: str) -> dict[tuple[str, bool], Answer]:
    async def all_of_them() -> dict[tuple[str, bool], Answer]:
        async with openai.AsyncOpenAI(base_url=primary + "/v1", api_key="test", max_retries=0) as client:
            answers = await asyncio.gather(*(ask(client, p, s) for p in PROMPTS for s in (False, True)))
        return {(a.prompt, a.stream): a for a in answers}

    return asyncio.run(all_of_them())


def store_rows(location: str) -> tuple[int, int]:
    """Pairs rows and the run's counted pairs, read after serve exited."""
    queries = ("SELECT count(*) FROM pairs", "SELECT coalesce(sum(pairs), 0) FROM run_counts WHERE of = 'pairs'")
    if location.startswith("postgresql://"):
        with psycopg.connect(location) as c:
            rows = [c.execute(q).fetchone() for q in queries]
    else:
        with contextlib.closing(sqlite3.connect(Path(location) / "shadowdiff.sqlite")) as c:
            rows = [c.execute(q).fetchone() for q in queries]
    return int(rows[0][0]), int(rows[1][0])  # type: ignore[index]


def wait_until(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def through_a_fault(backends: tuple[str, str], location: str, tmp_path: Path, fault: Callable[[], None],
                    outages: int = 1, goes_down: bool = True, worker: str = "thread") -> None:
    """Clients ask through serve while ``fault()`` runs; then everything a user sees is
    checked. With ``worker`` ``process``, the pair process stores the pairs it makes with a
    writer of its own, which meets the outage too (and says so: two lines more)."""
    log = tmp_path / "serve.log"
    with serve(backends, location, log, "--drain-timeout", "20", "--pair-worker", worker) as (process, url):
        with Traffic(url).running() as traffic:
            wait_until(lambda: len(traffic.answers) >= 50)     # under way before the fault
            fault()
            done = len(traffic.answers)
            wait_until(lambda: len(traffic.answers) >= done + 50)   # and after it
        seen = caught_up(url, len(traffic.answers))
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()
    assert traffic.errors == []
    expected = direct_answers(backends[0])
    wrong = [a for a in traffic.answers if (a.text, a.finish) != (expected[a.prompt, a.stream].text,
                                                                     expected[a.prompt, a.stream].finish)]
    assert wrong == [] and all(a.text and a.finish for a in traffic.answers)
    assert traffic.health and set(traffic.health) == {"ok"}, traffic.health
    # every pair stored once the store was back: none dropped, none lost
    assert seen["shadowdiff_pairs_dropped_total"] == 0
    assert seen["shadowdiff_pairs_stored_total"] == seen["shadowdiff_pairs_total"] == len(traffic.answers)
    assert store_rows(location) == (len(traffic.answers), len(traffic.answers))
    assert seen["shadowdiff_store_up"] == 1.0
    lines = log.read_text().splitlines()
    # the writer's own: a line when the store fails, one when it is back (and the heartbeat's)
    about_the_store = [line for line in lines if line.startswith(("WARNING:", "ERROR:")) and "store" in line]
    if goes_down:
        assert any("the store failed" in line for line in about_the_store), lines[:20]
        assert any("the store is back" in line for line in about_the_store), lines[:20]
    assert len(about_the_store) <= (STORE_LINES + 2 * (worker == "process")) * outages, about_the_store
    if worker == "process" and goes_down:     # (the child's writer met the outage: it held the pairs)
        assert any("the pair process: the store failed" in line for line in about_the_store), lines[:20]
        assert any("the pair process: the store is back" in line for line in about_the_store), lines[:20]
    # /metrics: answering throughout, showing the store down; nothing else in the log
    problems = [f"/metrics failed: {traffic.scrapes_failed}"] if traffic.scrapes_failed else []
    if goes_down and 0.0 not in traffic.store_up:
        problems.append(f"no scrape showed shadowdiff_store_up 0 ({len(traffic.store_up)} answered)")
    others = [line for line in lines[1:] if line not in about_the_store]
    if others:
        problems.append(f"{len(others)} more log lines: {others[:3]}")
    assert problems == []


def test_a_sqlite_store_locked_past_its_busy_timeout(backends: tuple[str, str], tmp_path: Path) -> None:
    location = str(tmp_path / "store")

    def fault() -> None:
        with injected(SqliteLock(Path(location) / "shadowdiff.sqlite")):
            time.sleep(13)        # the writer's transaction waits 10 s (busy_timeout), fails, and retries

    # (the pairs made, and stored, by the pair process: what `auto` picks with two cores)
    through_a_fault(backends, location, tmp_path, fault, worker="process")


def test_a_postgresql_table_lock(backends: tuple[str, str], tmp_path: Path) -> None:
    with postgres_database() as location:
        def fault() -> None:
            with injected(PgLock(location)):
                time.sleep(8)     # writes wait on the lock (no error: the store never says it is down)

        through_a_fault(backends, location, tmp_path, fault, goes_down=False)


def test_postgresql_connections_terminated_mid_write(backends: tuple[str, str], tmp_path: Path) -> None:
    with postgres_database() as location:
        def fault() -> None:
            with injected(PgLock(location)):
                for _ in range(3):   # the writer's insert waits on the lock: kill it there, three times
                    wait_until(lambda: waiting(location) > 0, 30)
                    terminate_backends(location, waiting=True)
                    time.sleep(1)
            terminate_backends(location)          # and every idle connection of the proxy's pool

        through_a_fault(backends, location, tmp_path, fault, worker="process")


def waiting(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as c:
        row = c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND wait_event_type = 'Lock'").fetchone()
    return int(row[0]) if row else 0


def test_the_postgresql_server_stopped_and_started(backends: tuple[str, str], tmp_path: Path) -> None:
    need_postgres()
    try:
        cluster_context = throwaway_postgres()
        cluster = cluster_context.__enter__()
    except Unavailable as exc:
        pytest.skip(f"no PostgreSQL server of the test's own: {exc}")
    try:
        def fault() -> None:
            for mode in ("immediate", "fast"):   # a crash, then an orderly stop
                with injected(PgStop(cluster, mode)):
                    time.sleep(4)
                time.sleep(3)

        through_a_fault(backends, cluster.url, tmp_path, fault, outages=2)
    finally:
        cluster_context.__exit__(None, None, None)

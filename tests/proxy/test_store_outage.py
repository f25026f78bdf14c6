"""Nothing a client, a probe or a scrape waits for waits for the store.

With the store locked for real (PostgreSQL's ``LOCK TABLE``, SQLite's exclusive
transaction): ``/metrics`` answers with the last review figures it read, ``/readyz``
stays ready and says the store is failing, clients are served; SIGTERM with the store
hung exits within ``--drain-timeout`` and a few seconds, not the store's timeout. And
every upstream pool closes idle connections itself, before the upstream would.
"""

from __future__ import annotations

import http.server
import signal
import socketserver
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from shadowdiff.store import STORE_FILE, Store
from tests.support.fixtures import postgres_database
from tests.support.proxying import chat, wait_for
from tests.support.servers import free_port, wait_ready

Start = Callable[..., Any]


def metric(url: str, name: str) -> float | None:
    text = httpx.get(url + "/metrics", timeout=30).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return None


def pairs_counted(url: str) -> float:
    text = httpx.get(url + "/metrics", timeout=30).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "shadowdiff_pairs_total")


def test_scrapes_and_readiness_never_wait_for_a_locked_store(start_simulator: Start, start_proxy: Start) -> None:
    with postgres_database() as db:
        url, app = start_proxy(primary=start_simulator(), shadow=start_simulator(), store=db, keep_rate=1,
                               store_timeout=3, review_token="outage-review-token")
        reviewer = httpx.Client(base_url=url, timeout=30)
        assert reviewer.post("/review/login", data={"token": "outage-review-token", "reviewer": "ana"},
                             follow_redirects=True).status_code == 200
        for i in range(6):
            assert httpx.post(url + "/v1/chat/completions", json=chat(f"q{i}")).is_success
        wait_for(lambda: app.metrics.stored._value.get() == 6)
        app.state.review.fresh_for = 0            # every scrape asks the store again
        before = metric(url, "shadowdiff_review_queue_pairs")
        assert before is not None
        locker = sa.create_engine(db)
        try:
            with locker.connect() as c:
                c.execute(sa.text("LOCK TABLE pairs IN ACCESS EXCLUSIVE MODE"))   # readers wait too
                locked = time.monotonic()
                # a scrape answers while the lock is held, with the last figures read
                assert metric(url, "shadowdiff_review_queue_pairs") == before
                assert (metric(url, "shadowdiff_review_state_age_seconds") or 0) > 0
                for i in range(6):        # clients are served; their pairs wait
                    assert httpx.post(url + "/v1/chat/completions", json=chat(f"during {i}")).is_success
                # the reads and the writer find the store failing (lock_timeout = --store-timeout, 3 s)
                wait_for(lambda: metric(url, "shadowdiff_store_up") == 0, 30)
                # the review UI: a short 503, not a 500 and a traceback
                page = reviewer.get("/review/")
                assert page.status_code == 503 and "not answering" in page.text
                ready = httpx.get(url + "/readyz", timeout=30)
                assert ready.status_code == 200 and ready.json()["status"] == "ready"
                assert ready.json()["store"]["status"] == "failing"
                assert time.monotonic() - locked < 60   # (all of it while the lock was held)
                c.commit()
        finally:
            locker.dispose()
        wait_for(lambda: metric(url, "shadowdiff_store_up") == 1, 30)
        wait_for(lambda: app.metrics.stored._value.get() == 12, 30)
        assert httpx.get(url + "/readyz").json()["store"]["status"] == "up"
        assert reviewer.get("/review/").status_code == 200
        reviewer.close()
        assert not sum(app.writer.dropped.values())


def test_sigterm_with_a_hung_store_exits_within_the_drain_timeout(start_simulator: Start, tmp_path: Path) -> None:
    """A store whose calls hang for 60 s (SQLite's busy timeout, --store-timeout): the
    shutdown gives up on it after --drain-timeout and a few seconds, counts the pairs
    it held as dropped, and exits 0."""
    primary, shadow = start_simulator(), start_simulator()
    log = tmp_path / "serve.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "shadowdiff", "serve", "--primary", primary, "--shadow", shadow, "--store",
             str(tmp_path), "--keep-rate", "1", "--drain-timeout", "2", "--store-timeout", "60", "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_ready(url + "/healthz", process)
        for i in range(5):
            assert httpx.post(url + "/v1/chat/completions", json=chat(f"q{i}")).is_success
        wait_for(lambda: metric(url, "shadowdiff_pairs_stored_total") == 5)
        locker = sqlite3.connect(tmp_path / STORE_FILE, timeout=0, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            for i in range(5):
                assert httpx.post(url + "/v1/chat/completions", json=chat(f"held {i}")).is_success
            # all five compared and handed to the writer, which holds them (in its hands or queued)
            wait_for(lambda: pairs_counted(url) == 10)
            time.sleep(0.5)
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            code = process.wait(60)
            took = time.monotonic() - started
        finally:
            locker.execute("ROLLBACK")
            locker.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text()
    assert code == 0, text
    # --drain-timeout 2 s, the writer's second, leaving the run given up on after 2 s: not the store's 60 s
    assert took < 15, (took, text)
    assert "5 pairs the store had not taken by the deadline were dropped" in text, text
    assert "gave up on leaving the run" in text, text
    assert "Traceback" not in text, text
    store = Store.open_existing(tmp_path)
    run = store.latest_run("serve")
    assert run is not None and store.count_pairs(run.id) == 5
    store.close()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_store_that_cannot_be_opened_fails_the_start_with_exit_code_3(workers: str) -> None:
    refused = f"postgresql://nobody@127.0.0.1:{free_port()}/x"     # nothing listens there
    done = subprocess.run(
        [sys.executable, "-m", "shadowdiff", "serve", "--primary", "http://127.0.0.1:9", "--shadow",
         "http://127.0.0.1:10", "--store", refused, "--port", str(free_port()), "--workers", workers],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "cannot open store" in done.stderr


class _Recording(http.server.BaseHTTPRequestHandler):
    """An OpenAI-ish upstream that notes the client port of every request (one port per
    connection), a POST's in ``ports`` and every request's in ``seen``, and keeps
    connections open as long as the client likes."""

    protocol_version = "HTTP/1.1"
    ports: list[int]
    seen: list[tuple[str, int]]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.ports.append(self.client_address[1])
        self.seen.append(("POST", self.client_address[1]))
        body = (b'{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
                b'"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],'
                b'"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}')
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.seen.append(("GET", self.client_address[1]))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def recording() -> Iterator[Callable[[], tuple[str, list[int], list[tuple[str, int]]]]]:
    servers: list[socketserver.ThreadingTCPServer] = []

    def start() -> tuple[str, list[int], list[tuple[str, int]]]:
        ports: list[int] = []
        seen: list[tuple[str, int]] = []
        handler = type("Handler", (_Recording,), {"ports": ports, "seen": seen})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", ports, seen

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("idle", [0.5, 30.0])
def test_every_pool_closes_idle_connections_itself(recording: Callable[[], tuple[str, list[int], list[Any]]],
                                                    start_proxy: Start, idle: float) -> None:
    """--upstream-idle-timeout: past it, the next request (primary's, shadow's, replica's)
    goes on a new connection - the proxy closed the idle one, not the upstream; within it,
    on a connection already open (the first request's, or a start-up probe's GET)."""
    (primary, at_primary, seen_primary), (shadow, at_shadow, seen_shadow), (replica, at_replica, seen_replica) = (
        recording(), recording(), recording())
    url, _ = start_proxy(primary=primary, shadow=shadow, replica=replica, replica_rate=1.0,
                           upstream_idle_timeout=idle)
    with httpx.Client() as client:
        for i in range(2):
            assert client.post(url + "/v1/chat/completions", json=chat(f"q{i}")).is_success
            wait_for(lambda n=i + 1: len(at_shadow) == n and len(at_replica) == n)
            time.sleep(1.5 if i == 0 else 0)
    for ports, seen in ((at_primary, seen_primary), (at_shadow, seen_shadow), (at_replica, seen_replica)):
        assert len(ports) == 2
        second = [i for i, (method, _) in enumerate(seen) if method == "POST"][1]
        before = {port for _, port in seen[:second]}    # the connections used before the second POST
        assert (ports[1] not in before) is (idle < 1.5), (ports, seen)

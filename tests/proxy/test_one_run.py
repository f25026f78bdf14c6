"""One deployment, one run: the workers of ``serve --workers 2``, and two
``serve`` processes of one deployment on one store, write ONE run, so the report counts
every pair; the run stays open (INCOMPLETE) while any of them serves, and finishes when
the last one stops. Real processes, real HTTP, a simulated backend."""

from __future__ import annotations

import signal
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from shadowdiff.proxy.membership import Membership
from shadowdiff.store import Run, Store
from shadowdiff.store.members import RunMembers, StillRunning
from tests.support import cli
from tests.support.proxying import chat, report, serve, stop, wait_for
from tests.support.storing import SETTINGS

REQUESTS = 200
CONCURRENCY = 8


def drive(urls: list[str], requests: int = REQUESTS) -> None:
    """REQUESTS chat requests, CONCURRENCY at a time, spread over ``urls``, a new connection
    each (a kept-alive one would stay with one worker)."""
    def one(i: int) -> None:
        with httpx.Client(timeout=30) as client:
            response = client.post(urls[i % len(urls)] + "/v1/chat/completions", json=chat(f"topic {i}"))
            assert response.is_success, response.text

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(one, range(requests)))


def the_run(location: str) -> Run:
    """The store's one serve run, once every request sent has been counted in it."""
    store = Store.open_existing(location)
    try:
        runs = [r for r in store.runs() if r.kind == "serve"]
        assert len(runs) == 1, [r.id for r in runs]

        def seen() -> int:
            return sum(n for (of, _, _), n in store.counts(runs[0].id).items() if of == "pairs")

        wait_for(lambda: seen() >= REQUESTS, seconds=60)
        assert seen() == REQUESTS
        # both processes compared some: each pair's key starts with its member's id
        members = RunMembers(store).members(runs[0].id)
        by_member = Counter(p["key"].split("-")[0] for p in store.pairs(runs[0].id))
        assert len(members) == 2 and set(by_member) == {m.id for m in members}, (members, by_member)
        assert sum(by_member.values()) == REQUESTS
        return runs[0]
    finally:
        store.close()


def test_workers_write_one_run(backends: tuple[str, str], location: str, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with serve(backends, location, log, "--workers", "2") as (process, url):
        drive([url])
        run = the_run(location)
        code, text, summary = report(location, tmp_path / "open")
        assert code == 2 and "still open" in text
        assert text.startswith(f"run {run.id} (serve, started ") and "not finished, 2 proxies, 2 still running" in text
        assert summary["pairs"] == REQUESTS
        stop(process, log)
    code, text, summary = report(location, tmp_path / "done")
    assert code == 0, text
    assert summary["pairs"] == REQUESTS and "2 proxies)" in text.splitlines()[0]


def test_two_serve_processes_of_one_deployment_write_one_run(backends: tuple[str, str], location: str,
                                                             tmp_path: Path) -> None:
    logs = tmp_path / "a.log", tmp_path / "b.log"
    with serve(backends, location, logs[0], "--deployment", "prod") as (a, url_a), \
            serve(backends, location, logs[1], "--deployment", "prod") as (b, url_b):
        drive([url_a, url_b])
        run = the_run(location)
        stop(a, logs[0])
        code, text, summary = report(location, tmp_path / "one-left")
        assert code == 2 and "2 proxies, 1 still running" in text.splitlines()[0], text
        assert summary["pairs"] == REQUESTS
        closing = cli.shadowdiff("close", location, "--run", run.id)
        assert closing.returncode == 1 and "1 proxy still running" in closing.stderr, closing.stderr
        stop(b, logs[1])
    code, text, summary = report(location, tmp_path / "done")
    assert code == 0, text
    assert summary["pairs"] == REQUESTS and text.startswith(f"run {run.id} (serve, started ")


def test_a_member_closed_under_it_moves_to_a_new_run(store: Store) -> None:
    membership = Membership(store, "prod", SETTINGS, "a", heartbeat=0.05)
    moved = threading.Event()
    membership.on_moved = lambda run_id: moved.set()
    first = membership.join()
    try:
        assert RunMembers(store).heartbeat(first, "a")
        with pytest.raises(StillRunning):
            RunMembers(store).close(first)
        assert [m.ended for m in RunMembers(store).close(first, force=True)] == ["forced"]
        assert moved.wait(10)
        assert membership.run_id != first and store.run(first).finished_at is not None
        assert [m.ended for m in RunMembers(store).members(first)] == ["forced"]
    finally:
        membership.leave()
    assert membership.run_id is not None and store.run(membership.run_id).finished_at is not None


def test_a_run_closed_by_force_takes_nothing_more(backends: tuple[str, str], location: str, tmp_path: Path) -> None:
    """After ``close --force`` the proxy's next pairs go to a new run at once (not at its
    next heartbeat, up to 2 s later): the forced run's counts stay as they were, and its report
    decides once the proxy is found in the new run (alive: nothing it held is missing)."""
    log = tmp_path / "serve.log"

    def seen(store: Store, run_id: str) -> int:
        return sum(n for (of, _, _), n in store.counts(run_id).items() if of == "pairs")

    # (the pairs stored by the pair process's writer too, which moves with the proxy)
    with serve(backends, location, log, "--deployment", "prod", "--pair-worker", "process") as (process, url):
        drive([url], 50)
        store = Store.open_existing(location)
        try:
            (forced,) = store.runs()
            wait_for(lambda: seen(store, forced.id) >= 50, seconds=60)
            # the proxy is paused while the run is closed and reported on: its heartbeat (every
            # 2 s) would otherwise, now and then, find the run closed and move on first
            process.send_signal(signal.SIGSTOP)
            closing = cli.shadowdiff("close", location, "--run", forced.id,
                                     "--force")
            assert closing.returncode == 0, closing.stderr
            code, text, before = report(location, tmp_path / "forced", "--run", forced.id)
            # until the proxy shows up in a new run it may as well have been killed: no decision yet
            assert code == 2 and before["pairs"] == 50 and "closed by --force" in text, text
            assert "closed by --force, 1 proxy was still running" in text.splitlines()[0], text
            process.send_signal(signal.SIGCONT)
            drive([url], 30)
            wait_for(lambda: len(store.runs()) == 2 and seen(store, store.runs()[1].id) >= 30, seconds=60)
            moved = store.runs()[1]
            assert seen(store, moved.id) == 30 and len(list(store.pairs(moved.id))) == 30
            assert seen(store, forced.id) == 50 and len(list(store.pairs(forced.id))) == 50
            assert moved.name == "prod" and moved.finished_at is None
        finally:
            store.close()
        code, text, after = report(location, tmp_path / "forced-again", "--run", forced.id)
        assert code == 0 and after["pairs"] == 50, text
        stop(process, log)
    assert f"run {forced.id} was closed while this proxy served" in log.read_text()
    code, text, summary = report(location, tmp_path / "moved", "--run", moved.id)
    assert code == 0 and summary["pairs"] == 30, text

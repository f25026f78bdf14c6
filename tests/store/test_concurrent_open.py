"""Processes opening one new SQLite store at the same moment (``serve --workers N`` on its
first start): each opens it, none fails. Turning a new database file to WAL needs an
exclusive lock that SQLite takes without its busy handler, so one of several openers at once
was refused at once with "database is locked" (a worker's start-up then failed, and uvicorn
stopped the whole server)."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Event
from pathlib import Path

from shadowdiff.store import Store

OPENERS = 3
ROUNDS = 20


def _open(location: str, go: Event, results: multiprocessing.Queue[str]) -> None:
    go.wait()
    try:
        Store.open(location).close()
        results.put("ok")
    except Exception as exc:   # (what the test reports)
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    # (fork: the openers start within a millisecond of each other, as uvicorn's workers do)
    context = multiprocessing.get_context("fork")
    failures = []
    for n in range(ROUNDS):
        go, results = context.Event(), context.Queue()
        location = str(tmp_path / f"store-{n}")
        openers = [context.Process(target=_open, args=(location, go, results)) for _ in range(OPENERS)]
        for p in openers:
            p.start()
        go.set()
        outcomes = [results.get(timeout=60) for _ in openers]
        for p in openers:
            p.join(60)
        failures += [o for o in outcomes if o != "ok"]
        # and the store they made is one store, at the newest revision
        store = Store.open_existing(location)
        try:
            assert store.runs() == []
        finally:
            store.close()
    assert failures == []

"""``serve --retain``: the proxy deletes its deployment's old pairs itself, at
start-up and periodically, in a thread of its own; the run's counts and report stay
as they were; a failing store is logged once per state change and never reaches the
proxy; shutdown does not wait for a prune held up by the store."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.exc import OperationalError

import shadowdiff.proxy.retention
from shadowdiff.proxy.retention import Retention
from shadowdiff.store import Store, schema
from shadowdiff.store.prune import prune
from tests.support.proxying import FP8, chat, report, serve, stop, wait_for
from tests.support.pruning import serve_run


def age_all(where: str, days: float) -> None:
    store = Store.open_existing(where)
    try:
        with store.engine.begin() as c:
            c.execute(schema.pairs.update().values(created_at=datetime.now(UTC) - timedelta(days=days)))
    finally:
        store.close()


def stored(where: str, run_id: str) -> int:
    store = Store.open_existing(where)
    try:
        return store.count_pairs(run_id)
    finally:
        store.close()


def test_serve_retain_prunes_older_runs_at_start_up_and_their_report_stands(
        backends: tuple[str, str], location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(backends, location, tmp_path / "a.log") as (process, url):
        for i in range(30):
            assert httpx.post(url + "/v1/chat/completions", json=chat(f"topic {i}"), timeout=30).is_success
        stop(process, tmp_path / "a.log")
    store = Store.open_existing(location)
    (old,) = store.runs()
    counts = store.counts(old.id)
    store.close()
    assert stored(location, old.id) == 30
    code, _, before = report(location, tmp_path / "before")
    age_all(location, 2)

    monkeypatch.setenv("SHADOWDIFF_RETAIN", "1d")     # as a Kubernetes ConfigMap would set it
    with serve(backends, location, tmp_path / "b.log") as (process, url):
        wait_for(lambda: stored(location, old.id) == 0, seconds=60)
        for i in range(5):
            assert httpx.post(url + "/v1/chat/completions", json=chat(f"new {i}"), timeout=30).is_success
        metrics = httpx.get(url + "/metrics").text
        assert "shadowdiff_pairs_pruned_total 30.0" in metrics
        stop(process, tmp_path / "b.log")
    store = Store.open_existing(location)
    try:
        new = next(r for r in store.runs() if r.id != old.id)
        assert store.counts(old.id) == counts and store.count_pairs(new.id) == 5   # its own new pairs stay
    finally:
        store.close()
    after_code, text, after = report(location, tmp_path / "after", "--run", old.id)
    assert after_code == code == 0
    for key in ("pairs", "outcomes", "comparable_outcomes", "changed_rate", "substantive_rate"):
        assert after[key] == before[key], key
    assert after["stored"] == 0 and after["pruned"] == 30 and "30 more stored pairs were deleted" in text


def test_serve_retain_prunes_periodically(start_simulator: Callable[..., str],
                                          start_proxy: Callable[..., tuple[str, Any]]) -> None:
    url, app = start_proxy(primary=start_simulator(), shadow=start_simulator(served_model_names=(FP8,)),
                           shadow_model=FP8, keep_rate=1.0, retain=3600.0, retain_every=0.05)
    assert app.retention is not None and app.retention._thread.name == "shadowdiff-retention"
    for i in range(10):
        assert httpx.post(url + "/v1/chat/completions", json=chat(f"topic {i}"), timeout=30).is_success
    wait_for(lambda: app.store.count_pairs(app.run_id) == 10)
    passes = app.retention.passes
    assert passes >= 1     # the one at start-up, with nothing old yet
    old = [p["id"] for p in app.store.pairs(app.run_id)][:4]
    with app.store.engine.begin() as c:
        c.execute(schema.pairs.update().where(schema.pairs.c.id.in_(old))
                  .values(created_at=datetime.now(UTC) - timedelta(hours=2)))
    wait_for(lambda: app.store.count_pairs(app.run_id) == 6)
    wait_for(lambda: app.retention.passes > passes + 1)
    assert {p["id"] for p in app.store.pairs(app.run_id)}.isdisjoint(old) and app.store.count_pairs(app.run_id) == 6
    # (the pass that deleted them counted them before it counted itself a pass)
    wait_for(lambda: app.metrics.pruned._value.get() == 4, seconds=30)
    assert sum(n for (of, _, _), n in app.store.counts(app.run_id).items() if of == "pairs") == 10


def test_a_failing_store_is_logged_once_per_state_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    real = prune
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= 5:
            raise OperationalError("DELETE", {}, Exception("server closed the connection unexpectedly"))
        return real(*args, **kwargs)

    monkeypatch.setattr(shadowdiff.proxy.retention, "prune", flaky)
    store = Store.open(tmp_path)
    try:
        serve_run(store)
        with store.engine.begin() as c:
            c.execute(schema.pairs.update().values(created_at=datetime.now(UTC) - timedelta(days=2)))
        retention = Retention(store, 86_400.0, None, every=0.01)
        with caplog.at_level(logging.INFO, logger="shadowdiff.proxy"):
            retention.start()
            wait_for(lambda: retention.passes >= 3)
            retention.stop()
        assert store.count_pairs(store.runs()[0].id) == 0
    finally:
        store.close()
    lines = [r.getMessage() for r in caplog.records]
    assert sum("pruning the store failed" in m for m in lines) == 1 and "server closed" in lines[0]
    assert sum("works again" in m for m in lines) == 1
    assert sum("retention: deleted 42 pairs" in m for m in lines) == 1


@pytest.fixture
def locked_sqlite(tmp_path: Path) -> Iterator[Store]:
    """A SQLite store with old pairs whose write lock another connection holds until the test ends."""
    store = Store.open(tmp_path)
    serve_run(store)
    with store.engine.begin() as c:
        c.execute(schema.pairs.update().values(created_at=datetime.now(UTC) - timedelta(days=2)))
    holder = sqlite3.connect(tmp_path / "shadowdiff.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield store
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()


def test_shutdown_does_not_wait_for_a_prune_the_store_holds_up(locked_sqlite: Store,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    retention = Retention(locked_sqlite, 86_400.0, None)
    started = threading.Event()
    real = prune

    def traced(*args: Any, **kwargs: Any) -> Any:
        started.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(shadowdiff.proxy.retention, "prune", traced)
    retention.start()
    assert started.wait(10)
    retention.stop(timeout=0.2)     # the prune waits for the lock (busy_timeout 10 s); stop does not wait for it
    assert retention._thread.is_alive() and retention.passes == 0

"""The pair writer lives through the store failing.

A held SQLite lock and PostgreSQL connections terminated under it, for real; a store
that fails a few times, to pin the retry, the bound and the shutdown. A failed write
is retried with backoff and the batch kept; what arrives meanwhile waits in a bounded
queue, and a pair that finds it full is dropped and counted, never blocking its
caller; one log line when the store goes down and one when it is back; the outcome
counts are never dropped; close(timeout) returns in time whatever the store does.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from shadowdiff.store import STORE_FILE, Store
from shadowdiff.store import writer as writer_module
from shadowdiff.store.writer import PairWriter
from tests.support.fixtures import postgres_database
from tests.support.storing import pair


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "RETRY_FIRST", 0.05)
    monkeypatch.setattr(writer_module, "RETRY_MAX", 0.2)


def _state_lines(caplog: pytest.LogCaptureFixture) -> tuple[int, int]:
    texts = [r.getMessage() for r in caplog.records if r.name == "shadowdiff.store"]
    return sum("the store failed" in t for t in texts), sum("the store is back" in t for t in texts)


def _wait(condition: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)


def test_a_held_sqlite_lock_holds_pairs_drops_past_the_bound_and_loses_none_it_kept(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "shadowdiff.store")
    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    states: list[bool] = []
    dropped: list[tuple[str, int]] = []
    writer = PairWriter(store, run, max_queue=20, max_delay=0.01, on_state=states.append,
                        on_dropped=lambda reason, n: dropped.append((reason, n)))
    locker = sqlite3.connect(tmp_path / STORE_FILE, timeout=0, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")     # as another process's long transaction would (past busy_timeout)
    try:
        writer.submit(pair("first", 0))
        _wait(lambda: states == [False])  # the first write failed (after the store's 10 s busy timeout)
        started = time.perf_counter()
        for i in range(1, 60):
            writer.submit(pair(f"k{i}", i))        # never blocks: queued, or dropped and counted
        writer.add_counts({("pairs", "identical", True): 1000})
        submitting = time.perf_counter() - started
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    writer.close(timeout=60)
    assert submitting < 1.0, submitting          # (59 submits; a blocked one would wait 10 s)
    kept = store.count_pairs(run)
    assert dropped and {reason for reason, _ in dropped} == {"queue_full"}
    assert kept + sum(n for _, n in dropped) == 60 and kept >= 21        # the held batch and a full queue
    assert store.counts(run)[("pairs", "identical", True)] == 1000
    # the run knows what it lost, by outcome: a verdict cannot pass on pairs nobody can review
    lost = {key: n for key, n in store.counts(run).items() if key[0] == "dropped"}
    assert sum(lost.values()) == sum(n for _, n in dropped)
    assert states == [False, True] and _state_lines(caplog) == (1, 1)


def test_retries_write_each_pair_once_and_counts_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "shadowdiff.store")
    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    add_counts = store.add_counts
    failures = iter(range(5))

    def flaky_counts(run_id: str, counts: object, **member: Any) -> None:
        # the pairs were written; the counts' transaction fails five times over
        if next(failures, None) is not None:
            raise OperationalError("UPDATE run_counts", {}, Exception("server closed the connection"))
        add_counts(run_id, counts, **member)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "add_counts", flaky_counts)
    written: list[int] = []
    duplicates: list[object] = []
    writer = PairWriter(store, run, on_written=written.append, on_duplicate=duplicates.append, max_delay=0.01)
    writer.add_counts({("pairs", "minor", True): 3})
    for i in range(10):
        writer.submit(pair(f"k{i}", i))
    writer.close(timeout=30)
    assert store.count_pairs(run) == 10 and sum(written) == 10 and not duplicates
    assert store.counts(run) == {("pairs", "minor", True): 3}
    assert _state_lines(caplog) == (1, 1)       # five failures, one line each way


class AdminShutdown(Exception):
    pass


class UndefinedTable(Exception):
    pass


def test_an_outage_that_goes_on_for_another_reason_says_so_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """A PostgreSQL database dropped, then made again empty: the server was down, now the
    table is missing. The first line named only the first reason, for as long as it lasted."""
    caplog.set_level(logging.WARNING, "shadowdiff.store")
    monkeypatch.setattr(writer_module, "CAUSE_EVERY", 0.0)
    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    add_pairs = store.add_pairs
    failures = iter([AdminShutdown("terminating connection")] * 3 + [UndefinedTable('relation "pairs"')] * 3)

    def failing(*args: object) -> object:
        if (cause := next(failures, None)) is not None:
            raise OperationalError("INSERT", {}, cause)
        return add_pairs(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "add_pairs", failing)
    writer = PairWriter(store, run, max_delay=0.01)
    writer.submit(pair("k", 0))
    writer.close(timeout=30)
    assert store.count_pairs(run) == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "shadowdiff.store"]
    assert [line.split(" (")[0].split(" after")[0] for line in lines] == [
        "the store failed", "the store still fails, now for another reason", "the store is back"]
    assert "relation" in lines[1]


def test_close_returns_in_time_when_the_store_never_comes_back(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.open(tmp_path)
    run = store.create_run("serve", {})

    def down(*_args: object) -> None:
        raise OperationalError("INSERT", {}, Exception("could not connect to server"))

    monkeypatch.setattr(store, "add_pairs", down)
    dropped: list[tuple[str, int]] = []
    writer = PairWriter(store, run, max_delay=0.01, on_dropped=lambda reason, n: dropped.append((reason, n)))
    for i in range(30):
        writer.submit(pair(f"k{i}", i))
    started = time.monotonic()
    writer.close(timeout=1.0)
    assert time.monotonic() - started < 3.0
    assert sum(n for reason, n in dropped if reason == "shutdown") == 30


def test_a_replay_writer_gives_up_on_a_long_outage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.open(tmp_path)
    run = store.create_run("replay", {})
    monkeypatch.setattr(store, "add_pairs", lambda *_: (_ for _ in ()).throw(
        OperationalError("INSERT", {}, Exception("disk I/O error"))))
    writer = PairWriter(store, run, max_delay=0.01, block_when_full=True, give_up_after=0.3)
    writer.submit(pair("k", 0))
    with pytest.raises(OperationalError):
        writer.close()


def test_postgresql_connections_terminated_under_the_writer(caplog: pytest.LogCaptureFixture) -> None:
    # The writer's connection killed mid-write, twice (pg_terminate_backend while its
    # insert waits on a lock another session holds), then the lock released.
    caplog.set_level(logging.WARNING, "shadowdiff.store")
    with postgres_database() as url:
        store = Store.open(url)
        run = store.create_run("serve", {})
        writer = PairWriter(store, run, max_delay=0.01)
        admin = sa.create_engine(url)
        killer = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as locker:
                locker.execute(sa.text("LOCK TABLE pairs IN ACCESS EXCLUSIVE MODE"))
                for i in range(20):
                    writer.submit(pair(f"k{i}", i))
                for _ in range(2):
                    time.sleep(0.5)        # the writer's insert is waiting on the lock: kill its connection
                    with killer.connect() as c:   # (its own transaction: activity is a snapshot per one)
                        killed = c.execute(sa.text(
                            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND wait_event_type = 'Lock'")).scalar_one()
                    assert killed >= 1
                locker.commit()            # the lock goes
        finally:
            admin.dispose()
            killer.dispose()
        writer.close(timeout=60)
        assert store.count_pairs(run) == 20 and not writer.dropped
        assert _state_lines(caplog) == (1, 1)
        store.close()


def test_the_queue_is_bounded_in_bytes_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A store that is down: what is held is bounded by the sizes submit() is told,
    # one pair always taken however large; the rest dropped, counted, never blocking.
    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    monkeypatch.setattr(store, "add_pairs", lambda *_: (_ for _ in ()).throw(
        OperationalError("INSERT", {}, Exception("could not connect to server"))))
    dropped: list[tuple[str, int]] = []
    queued: list[tuple[int, int]] = []
    writer = PairWriter(store, run, max_delay=0.01, max_bytes=1000, max_batch=1,
                        on_dropped=lambda reason, n: dropped.append((reason, n)),
                        on_queue=lambda pairs, size: queued.append((pairs, size)))
    writer.submit(pair("huge", 0), 5000)          # alone: taken, though over the bound
    _wait(lambda: writer.queued == 0)             # (in the writer's hands, retried: still held)
    assert writer.queued_bytes == 5000
    writer.submit(pair("k1", 1), 400)             # over: dropped
    assert dropped == [("queue_full", 1)]
    writer.close(timeout=0.5)
    assert dropped == [("queue_full", 1), ("shutdown", 1)] and writer.queued_bytes == 0
    assert queued[0] == (1, 5000) and queued[-1][1] == 0


def test_bytes_are_released_as_pairs_are_written(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    writer = PairWriter(store, run, max_delay=0.01, max_bytes=1000)
    for i in range(30):
        writer.submit(pair(f"k{i}", i), 300)      # 9 KB in all, through a 1 KB bound: the store keeps up
        _wait(lambda: writer.queued_bytes == 0)
    writer.close(timeout=30)
    assert store.count_pairs(run) == 30 and not writer.dropped


def test_a_pair_the_store_refuses_costs_only_itself(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal that no retry can cure (PostgreSQL's "value too long", "integer out of
    range"): the batch is written pair by pair, the refused one dropped and counted."""
    from sqlalchemy.exc import DataError

    caplog.set_level(logging.WARNING, "shadowdiff.store")
    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    add_pairs = store.add_pairs

    def refusing(run_id: str, batch: list[object]) -> object:
        if any(p.key == "poison" for p in batch):  # type: ignore[attr-defined]
            raise DataError("INSERT INTO pairs", {}, Exception("value too long for type character varying(255)"))
        return add_pairs(run_id, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "add_pairs", refusing)
    dropped: list[tuple[str, int]] = []
    writer = PairWriter(store, run, max_delay=0.05, on_dropped=lambda reason, n: dropped.append((reason, n)))
    for i in range(10):
        writer.submit(pair("poison" if i == 4 else f"k{i}", i))
    writer.add_counts({("pairs", "identical", True): 10})
    writer.close(timeout=30)
    assert store.count_pairs(run) == 9 and dropped == [("rejected", 1)]
    assert store.counts(run)[("pairs", "identical", True)] == 10
    assert [r.getMessage()[:31] for r in caplog.records] == ["the store refused a pair (DataE"]


def test_values_that_do_not_fit_a_column_are_fitted_not_refused() -> None:
    """What PostgreSQL refuses outright: a category over 255 characters, a token count over
    32 bits, a NUL in a text. Stored cut, held and replaced, on both backends."""
    from dataclasses import replace

    with postgres_database() as url:
        store = Store.open(url)
        run = store.create_run("serve", {})
        p = pair("k", 0)
        p.answers[next(iter(p.answers))] = replace(next(iter(p.answers.values())), completion_tokens=2**40,
                                                   text="nul\x00here")
        store.add_pairs(run, [replace(p, category="c" * 600, key="k" * 400)])
        [stored] = list(store.pairs(run))
        assert stored["category"] == "c" * 255 and stored["key"] == "k" * 255
        answer = next(iter(stored.answers.values()))
        assert answer.completion_tokens == 2**31 - 1 and answer.text == "nul\ufffdhere"
        store.close()

"""Store faults as production stores fail, done from outside the proxy: a
SQLite file locked by another process, a PostgreSQL table locked, the proxy's
connections terminated, the server stopped. Each has ``inject()`` and ``release()``;
``injected(fault)`` does both around a block. Used by tests/proxy/test_store_faults.py
and bench/store_faults.py.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import psycopg

from tests.support.pgserver import Cluster


class Fault(Protocol):
    def inject(self) -> None: ...

    def release(self) -> None: ...


class SqliteLock:
    """An exclusive transaction held on the store's file, as another process's long one
    would: the proxy's writes wait its busy timeout and fail."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None

    def inject(self) -> None:
        # (waits, if need be, for a write under way to end: the lock is then ours)
        self._connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._connection.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        if self._connection is not None:
            self._connection.execute("ROLLBACK")
            self._connection.close()
            self._connection = None


class PgLock:
    """``LOCK TABLE pairs IN ACCESS EXCLUSIVE MODE`` held: every write and read of pairs waits."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._connection: psycopg.Connection[tuple[object, ...]] | None = None

    def inject(self) -> None:
        self._connection = psycopg.connect(self.url)
        self._connection.execute("LOCK TABLE pairs IN ACCESS EXCLUSIVE MODE")

    def release(self) -> None:
        if self._connection is not None:
            self._connection.rollback()
            self._connection.close()
            self._connection = None


def terminate_backends(url: str, *, waiting: bool = False) -> int:
    """``pg_terminate_backend`` of every session of the database but this one (with
    ``waiting``, of those waiting on a lock: a write under way); how many."""
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                 "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                                 + (" AND wait_event_type = 'Lock'" if waiting else "")).fetchone()
    return int(row[0]) if row else 0


class PgTerminate:
    """The database's sessions (the proxy's) terminated every ``every`` seconds, from
    ``inject()`` to ``release()``."""

    def __init__(self, url: str, every: float = 2.0) -> None:
        self.url = url
        self.every = every
        self.killed = 0
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while True:
            self.killed += terminate_backends(self.url)
            self.rounds += 1
            if self._stop.wait(self.every):
                return

    def inject(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="pg-terminate", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class PgStop:
    """The server stopped (``immediate``: as in a crash; ``fast``: sessions ended, then
    stopped) and started again at ``release()``."""

    def __init__(self, cluster: Cluster, mode: str = "immediate") -> None:
        self.cluster = cluster
        self.mode = mode

    def inject(self) -> None:
        self.cluster.stop(self.mode)

    def release(self) -> None:
        self.cluster.start()


@contextlib.contextmanager
def injected(fault: Fault) -> Iterator[Fault]:
    """The fault for the length of the block, released however it ends."""
    fault.inject()
    try:
        yield fault
    finally:
        fault.release()

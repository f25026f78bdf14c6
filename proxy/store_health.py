"""What the proxy knows about its store without ever waiting for it.

The store may be slow or gone (a lock held, a connection terminated, the server
restarting) while the proxy keeps serving: nothing a client, a health probe or a
Prometheus scrape waits for may wait for the database. Two pieces:

* ``StoreHealth``: whether the store is taking work, as the parts that use it last
  found (the pair writer, the membership heartbeat, the reads for ``/metrics``). The
  store is up when every part's last attempt succeeded; ``/readyz`` shows it and
  ``shadowdiff_store_up`` exports it, so an alert can fire while readiness (about the
  primary only) keeps the proxy in service.
* ``LastKnown``: a value read from the store in a thread of its own, one read at a
  time, refreshed when older than ``fresh_for``. A caller waits at most ``wait`` for a
  fresh value and otherwise gets the last one read (and its age): a scrape during an
  outage answers at once with what was known, instead of hanging with the database
  and piling up threads. The thread is a daemon, so a read stuck on a vanished
  server never holds up the process's exit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger("shadowdiff.store")


class StoreHealth:
    """Whether the store takes work, from what its users last found; thread-safe."""

    def __init__(self, on_change: Callable[[bool], None] = lambda _up: None) -> None:
        self._down: set[str] = set()
        self._lock = threading.Lock()
        self._on_change = on_change
        self.since = time.monotonic()    # when the store last went up or down

    @property
    def up(self) -> bool:
        return not self._down

    def report(self, part: str, up: bool) -> None:
        """``part`` (writer, heartbeat, reads) found the store working or failing."""
        with self._lock:
            was = not self._down
            if up:
                self._down.discard(part)
            else:
                self._down.add(part)
            now = not self._down
            if now != was:
                self.since = time.monotonic()
        if now != was:
            self._on_change(now)

    def describe(self) -> dict[str, object]:
        """For ``/readyz``: up or failing, for how long, and which parts found it failing."""
        seconds = round(time.monotonic() - self.since, 1)
        if self.up:
            return {"status": "up", "for_seconds": seconds}
        return {"status": "failing", "for_seconds": seconds, "failing": sorted(self._down)}


class LastKnown(Generic[T]):
    """``read()``'s last value, refreshed in a thread of its own; never waits long."""

    def __init__(self, read: Callable[[], T], *, name: str, fresh_for: float = 10.0, wait: float = 1.0,
                 on_result: Callable[[bool], None] = lambda _ok: None) -> None:
        self._read = read
        self._name = name
        self.fresh_for = fresh_for
        self.wait = wait
        self._on_result = on_result
        self._lock = threading.Lock()
        self._value: T | None = None
        self._read_at: float | None = None        # monotonic time of the last successful read
        self._refresh: Future[T] | None = None     # the read under way, if any
        self._failing = False

    def get(self, wait: bool = True) -> tuple[T | None, float | None]:
        """The freshest value at hand (None before any read succeeded) and its age in seconds.

        Only the caller that starts a refresh waits for it, and only while the store has
        been answering: callers that come meanwhile, or while it fails, get the last value
        at once (a dozen pollers during an outage must not queue up a second each)."""
        refresh = None
        with self._lock:
            stale = self._read_at is None or time.monotonic() - self._read_at > self.fresh_for
            if stale and self._refresh is None:
                self._refresh = Future()
                threading.Thread(target=self._run, args=(self._refresh,), name=f"shadowdiff-{self._name}",
                                 daemon=True).start()
                if wait and not self._failing:
                    refresh = self._refresh
        if refresh is not None:
            # still reading, or the read failed (the reading thread logs it, once per
            # state change): either way the last value will do
            with contextlib.suppress(FutureTimeout, Exception):
                refresh.result(timeout=self.wait)
        with self._lock:
            age = None if self._read_at is None else time.monotonic() - self._read_at
            return self._value, age

    def _run(self, future: Future[T]) -> None:
        try:
            value = self._read()
        except Exception as exc:
            self._settle(future, None, exc)
            if not self._failing:
                self._failing = True
                log.warning("reading the %s from the store failed (%s); serving the last value read",
                            self._name.replace("-", " "), type(exc).__name__)
            self._on_result(False)
            return
        self._settle(future, value, None)
        if self._failing:
            self._failing = False
            log.warning("reading the %s from the store works again", self._name.replace("-", " "))
        self._on_result(True)

    def _settle(self, future: Future[T], value: T | None, error: Exception | None) -> None:
        with self._lock:
            if error is None:
                self._value, self._read_at = value, time.monotonic()
            self._refresh = None
        if error is None:
            future.set_result(value)   # type: ignore[arg-type]
        else:
            future.set_exception(error)

"""Writing pairs from a background thread, in batches.

One transaction per pair costs more in SQLAlchemy and the database than the pair
itself costs to produce, and a writer thread that holds the GIL that often slows the
event loop beside it. The writer batches what has arrived (up to ``max_batch`` pairs,
waiting at most ``max_delay`` seconds for more), so a busy run writes a few
transactions a second and an idle one writes each pair within ``max_delay``.
A process killed mid-batch loses only the pairs of that batch; a resumed replay
redoes them, since they are not in the store. The proxy also sends the outcomes
it counted through here (``add_counts``, about once a second), stored or not, so that
a report on a serve run knows the true mix even though only changed pairs are all kept.
Nothing lands in a finished run (the store raises ``RunFinished``): given ``on_finished``
(the proxy's, which joins a new run when ``shadowdiff close --force`` closed its own),
the writer asks it for the run to write to instead and writes there; without it, the
error stops the writer like any other.

The store may fail the way production stores fail - a connection terminated, a lock
held past its timeout, the server restarting. A failed write is retried with backoff
(``RETRY_FIRST`` doubling to ``RETRY_MAX`` seconds) until it succeeds: the batch is
kept, what arrives meanwhile waits in a queue of at most ``max_queue`` pairs, and a
pair that finds it full is dropped and counted (``on_dropped``) - the proxy's requests
never wait for the store - or, with ``block_when_full`` (replay, which has no client to
protect), waits for room. One log line when the store goes down and one when it is
back, never one per failure. Outcome counts are merged as they come, not queued, so
that none is ever dropped. ``close(timeout)`` bounds shutdown: pairs not written by
then are dropped and counted (``shutdown``). ``give_up_after`` (replay's) turns an
outage that long into the error that stops the writer.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TypeVar

from shadowdiff.errors import RunFinished
from shadowdiff.records import Pair
from shadowdiff.store import Store

_MOVES = 5   # runs closed under the writer one after the other, five times over: give up
RETRY_FIRST = 0.5     # seconds before the first retry of a failed write
RETRY_MAX = 10.0      # ...doubling up to this
MAX_QUEUE = 10_000    # pairs waiting for the store, at most (about 4.4 KB each: ~44 MB)
A = TypeVar("A")
T = TypeVar("T")
log = logging.getLogger("shadowdiff.store")
CountKey = tuple[str, str, bool]


class PairWriter:
    """Queue pairs for ``store`` under ``run_id``; ``close()`` writes what is left."""

    def __init__(self, store: Store, run_id: str, *, on_duplicate: Callable[[Pair], None] | None = None,
                 on_written: Callable[[int], None] | None = None,
                 on_finished: Callable[[str], str] | None = None,
                 on_dropped: Callable[[str, int], None] | None = None,
                 on_state: Callable[[bool], None] | None = None,
                 max_batch: int = 200, max_delay: float = 0.05, max_queue: int = MAX_QUEUE,
                 block_when_full: bool = False, give_up_after: float | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.written = 0
        self.dropped: Counter[str] = Counter()
        self.failed: BaseException | None = None
        self._on_duplicate = on_duplicate or (lambda _: None)
        self._on_written = on_written or (lambda _: None)
        self._on_finished = on_finished
        self._on_dropped = on_dropped or (lambda _reason, _n: None)
        self._on_state = on_state or (lambda _up: None)
        self._queue: queue.Queue[Pair] = queue.Queue(maxsize=max_queue)
        self._block = block_when_full
        self._give_up_after = give_up_after
        self._counts: Counter[CountKey] = Counter()
        self._counts_lock = threading.Lock()
        self._max_batch = max_batch
        self._max_delay = max_delay
        self._stop = threading.Event()
        self._deadline: float | None = None
        self._thread = threading.Thread(target=self._run, name="shadowdiff-writer", daemon=True)
        self._thread.start()

    @property
    def queued(self) -> int:
        """Pairs waiting for the store."""
        return self._queue.qsize()

    def submit(self, pair: Pair) -> None:
        if self.failed is not None:
            raise self.failed
        if self._block:
            self._queue.put(pair)
            return
        try:
            self._queue.put_nowait(pair)
        except queue.Full:
            self._drop("queue_full", 1)

    def add_counts(self, counts: Mapping[CountKey, int]) -> None:
        """Add outcome counts to the run (pairs seen, stored or not), keyed by (``pairs``
        or ``noise``, outcome, comparable); written with the next batch."""
        if self.failed is None and counts:
            with self._counts_lock:
                self._counts.update(counts)

    def close(self, timeout: float | None = None) -> None:
        """Write everything submitted so far and stop the thread; with ``timeout``, what
        is not written within it is dropped and counted."""
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._stop.set()
        self._thread.join()
        if self.failed is not None:
            raise self.failed

    def _drop(self, reason: str, n: int) -> None:
        if n:
            self.dropped[reason] += n
            self._on_dropped(reason, n)

    def _run(self) -> None:
        while True:
            pairs = self._take()
            with self._counts_lock:
                counts, self._counts = self._counts, Counter()
            if (pairs or counts) and not self._write(pairs, counts):
                return
            if self._stop.is_set() and self._queue.empty() and not self._counts:
                return

    def _take(self) -> list[Pair]:
        """The next batch: what is queued, up to ``max_batch``, waiting ``max_delay`` for more."""
        try:
            batch = [self._queue.get(timeout=self._max_delay if self._stop.is_set() else 0.1)]
        except queue.Empty:
            return []
        while len(batch) < self._max_batch:
            try:
                batch.append(self._queue.get(timeout=self._max_delay))
            except queue.Empty:
                break
        return batch

    def _write(self, pairs: list[Pair], counts: Counter[CountKey]) -> bool:
        """Write the batch, retrying while the store fails; False when the writer must stop."""
        down_since: float | None = None
        wait = RETRY_FIRST
        while True:
            try:
                if pairs:
                    # each in its own transaction: a run closed between the two keeps the pairs it got
                    duplicates = self._to_open_run(self.store.add_pairs, pairs)
                    self.written += len(pairs) - len(duplicates)
                    self._on_written(len(pairs) - len(duplicates))
                    for pair in duplicates:
                        self._on_duplicate(pair)
                    pairs = []      # written: a retry of the counts must not write them again
                if counts:
                    self._to_open_run(self.store.add_counts, counts)
                if down_since is not None:
                    log.warning("the store is back after %.0f s; the pairs held meanwhile are being written "
                                "(%d dropped so far)", time.monotonic() - down_since, sum(self.dropped.values()))
                    self._on_state(True)
                return True
            except RunFinished as exc:      # finished under a writer with nowhere to move: a replay's error
                self.failed = exc
                return False
            except Exception as exc:   # the database went away, or refused: keep the batch, retry
                now = time.monotonic()
                if down_since is None:
                    down_since = now
                    log.warning("the store failed (%s: %s); holding pairs (at most %d queued) and retrying",
                                type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "",
                                self._queue.maxsize)
                    self._on_state(False)
                if self._give_up_after is not None and now - down_since >= self._give_up_after:
                    self.failed = exc
                    return False
                if self._deadline is not None and now >= self._deadline:
                    self._drop("shutdown", len(pairs) + self._drain_queue())
                    return False
                pause = wait if self._deadline is None else min(wait, self._deadline - now)
                if self._stop.is_set():
                    time.sleep(pause)
                else:
                    self._stop.wait(pause)   # (woken by close(), to retry once more and honour its deadline)
                wait = min(wait * 2, RETRY_MAX)

    def _drain_queue(self) -> int:
        n = 0
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return n
            n += 1

    def _to_open_run(self, write: Callable[[str, A], T], what: A) -> T:
        """``write(run_id, what)``; if the run is finished, again in the run ``on_finished`` names."""
        for _ in range(_MOVES):
            try:
                return write(self.run_id, what)
            except RunFinished as exc:
                if self._on_finished is None:
                    raise
                self.run_id = self._on_finished(exc.run_id)
        return write(self.run_id, what)

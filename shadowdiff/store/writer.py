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
kept, what arrives meanwhile waits in a queue of at most ``max_queue`` pairs and
``max_bytes`` bytes (the sizes ``submit`` is given), and a pair that finds it full is
dropped and counted (``on_dropped``) - the proxy's requests
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

from sqlalchemy.exc import DataError, IntegrityError

from shadowdiff.answers.records import Pair
from shadowdiff.errors import RunFinished
from shadowdiff.store.store import Store
from shadowdiff.vocabulary import Tally

_MOVES = 5   # runs closed under the writer one after the other, five times over: give up
RETRY_FIRST = 0.5     # seconds before the first retry of a failed write
RETRY_MAX = 10.0      # ...doubling up to this
CAUSE_EVERY = 60.0    # seconds between two lines saying an outage goes on for another reason, at least
MAX_QUEUE = 10_000    # pairs waiting for the store, at most
MAX_QUEUE_BYTES = 64 * 1024 * 1024   # ...and their sizes, as submit() is told them, at most
A = TypeVar("A")
T = TypeVar("T")
log = logging.getLogger("shadowdiff.store")
CountKey = tuple[str, str, bool]


def held_size(pair: Pair, request_bytes: int) -> int:
    """About the memory a queued pair holds, in bytes: its request (``request_bytes``, the
    body as it came: parsed, it takes about as much), its answers' texts and tokens, and a
    fixed part for the objects around them. Measured against RSS (bench/held_memory.py,
    200-token answers): 5.5 KB held per pair, plain or streamed, estimated 5.3 KB. The
    answers' wire bytes are no measure: a streamed answer's are ten times its text."""
    size = 4096 + request_bytes + len(pair.prompt)
    for answer in pair.answers.values():
        size += len(answer.text) + len(answer.reasoning or "") + len(answer.refusal or "")
        size += 80 * len(answer.tokens or ()) + 32 * len(answer.margins or ())
        size += sum(len(choice.text) for choice in answer.others) + 512 * len(answer.tool_calls or ())
    return size


class PairWriter:
    """Queue pairs for ``store`` under ``run_id``; ``close()`` writes what is left."""

    def __init__(self, store: Store, run_id: str, *, on_duplicate: Callable[[Pair], None] | None = None,
                 on_written: Callable[[int], None] | None = None,
                 on_finished: Callable[[str], str] | None = None,
                 on_dropped: Callable[[str, int], None] | None = None,
                 on_state: Callable[[bool], None] | None = None,
                 on_queue: Callable[[int, int], None] | None = None,
                 max_batch: int = 200, max_delay: float = 0.05, max_queue: int = MAX_QUEUE,
                 max_bytes: int = MAX_QUEUE_BYTES,
                 block_when_full: bool = False, give_up_after: float | None = None,
                 member: str | None = None) -> None:
        self.store = store
        self.run_id = run_id
        # (serve) the member of the run this process is: each write of counts takes the requests
        # they finish off its heartbeat's in-flight count, under ``writing_counts``, which the
        # heartbeat holds too, so that neither overwrites the other with a number already stale
        self.member = member
        self.writing_counts = threading.Lock()
        self.written = 0
        self.dropped: Counter[str] = Counter()
        self.failed: BaseException | None = None
        self._on_duplicate = on_duplicate or (lambda _: None)
        self._on_written = on_written or (lambda _: None)
        self._on_finished = on_finished
        self._on_dropped = on_dropped or (lambda _reason, _n: None)
        self._on_state = on_state or (lambda _up: None)
        self._on_queue = on_queue or (lambda _pairs, _bytes: None)
        self._queue: queue.Queue[tuple[Pair, int]] = queue.Queue(maxsize=max_queue)
        self._max_bytes = max_bytes
        self._bytes = 0                  # of the pairs queued (submit's sizes)
        self._bytes_lock = threading.Lock()
        self._block = block_when_full
        self._give_up_after = give_up_after
        self._counts: Counter[CountKey] = Counter()
        self._released = 0               # requests the counts held are the last of (``add_counts``)
        self._released_in_hand = 0       # ... and those of the counts being written
        self._counts_lock = threading.Lock()
        self._max_batch = max_batch
        self._max_delay = max_delay
        self._stop = threading.Event()
        self._deadline: float | None = None
        self._in_hand: list[Pair] = []    # the batch being written
        self._abandoned = False    # close() gave up waiting for the thread
        self._counts_lost = False  # outcome counts the store never took (the deadline came first)
        self._thread = threading.Thread(target=self._run, name="shadowdiff-writer", daemon=True)
        self._thread.start()

    @property
    def queued(self) -> int:
        """Pairs waiting for the store."""
        return self._queue.qsize()

    def has_room(self, pairs: int) -> bool:
        """Whether ``pairs`` more (submitted without sizes, as replay does) would be queued at
        once: neither waiting for room nor dropped."""
        return self._queue.qsize() + pairs <= self._queue.maxsize

    @property
    def unwritten(self) -> bool:
        """Whether outcome counts were left unwritten at ``close`` (pairs dropped are in ``dropped``)."""
        return self._counts_lost or bool(self._counts)

    @property
    def queued_bytes(self) -> int:
        """The sizes of the pairs waiting for the store, as ``submit`` was told them."""
        return self._bytes

    def submit(self, pair: Pair, size: int = 0) -> None:
        """Queue ``pair`` (of about ``size`` bytes) for the store; dropped and counted if
        the queue is full (with ``block_when_full``, wait for room instead)."""
        if self.failed is not None:
            raise self.failed
        with self._bytes_lock:
            # (one pair is always taken, however large: a bound below it would drop them all)
            over = self._bytes > 0 and self._bytes + size > self._max_bytes
            if not over:
                self._bytes += size
        if over and not self._block:
            self._drop("queue_full", [pair])
            return
        try:
            if self._block:
                self._put_waiting(pair, size, over)
            else:
                self._queue.put_nowait((pair, size))
        except queue.Full:
            self._taken(size)
            self._drop("queue_full", [pair])
            return
        self._on_queue(self._queue.qsize(), self._bytes)

    def add_counts(self, counts: Mapping[CountKey, int], released: int = 0) -> None:
        """Add outcome counts to the run (pairs seen, stored or not), keyed by (``pairs``
        or ``noise``, outcome, comparable); written with the next batch. ``released``: how
        many requests they are the last counts of (``Store.add_counts``)."""
        if self.failed is None and (counts or released):
            with self._counts_lock:
                self._counts.update(counts)
                self._released += released

    @property
    def requests_unwritten(self) -> int:
        """Requests whose last counts this writer holds, not yet in the store."""
        return self._released + self._released_in_hand

    def close(self, timeout: float | None = None) -> None:
        """Write everything submitted so far and stop the thread; with ``timeout``, what
        is not written within it is dropped and counted."""
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._stop.set()
        # A write in progress may outlast the deadline (a database call is bounded by the
        # store's own timeout, not by ours): wait a little for it, then count what is
        # still held as dropped, and leave the thread (a daemon) behind.
        self._thread.join(None if timeout is None else timeout + 1.0)
        if self._thread.is_alive():
            self._drop("shutdown", self._in_hand + self._drain_queue())
            self._abandoned = self._counts_lost = True       # (what the thread does from now on is not counted again)
        if self.failed is not None:
            raise self.failed

    def _drop(self, reason: str, pairs: list[Pair]) -> None:
        """Count ``pairs`` as dropped: in the metrics, and in the run (by outcome, written
        with the next batch if the store takes one), so that a verdict knows what it misses."""
        if pairs and not self._abandoned:
            self.dropped[reason] += len(pairs)
            self._on_dropped(reason, len(pairs))
            with self._counts_lock:
                self._counts.update((Tally.DROPPED, p.comparison.outcome.value, p.comparable) for p in pairs)

    def _run(self) -> None:
        while True:
            batch = self._take()
            with self._counts_lock:
                counts, self._counts = self._counts, Counter()
                self._released_in_hand, self._released = self._released_in_hand + self._released, 0
            # the batch's bytes stay held (and bounded) until it is written or dropped
            self._in_hand = [pair for pair, _ in batch]
            written = not (batch or counts or self._released_in_hand) or self._write(self._in_hand, counts)
            self._in_hand = []
            if batch:
                self._taken(sum(size for _, size in batch))
                self._on_queue(self._queue.qsize(), self._bytes)
            if not written:
                return
            if self._stop.is_set() and self._queue.empty() and not self._counts and not self._released:
                return

    def _put_waiting(self, pair: Pair, size: int, over: bool) -> None:
        """Replay's submit: wait for room, unless the writer stopped (its error is raised)."""
        while True:
            if self.failed is not None:
                if not over:
                    self._taken(size)
                raise self.failed
            if over:
                time.sleep(0.05)
                with self._bytes_lock:
                    over = self._bytes > 0 and self._bytes + size > self._max_bytes
                    if not over:
                        self._bytes += size
                continue
            try:
                self._queue.put((pair, size), timeout=0.1)
                return
            except queue.Full:
                pass

    def _taken(self, size: int) -> None:
        with self._bytes_lock:
            self._bytes -= size

    def _take(self) -> list[tuple[Pair, int]]:
        """The next batch: what is queued, up to ``max_batch``, waiting ``max_delay`` for more
        (with each pair's size)."""
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
        said: tuple[str, float] = ("", 0.0)   # the failure last logged, and when
        wait = RETRY_FIRST
        while True:
            attempt = time.monotonic()   # (a write that waits on a lock fails only after the busy timeout)
            try:
                if pairs:
                    # each in its own transaction: a run closed between the two keeps the pairs it got
                    duplicates = self._to_open_run(self.store.add_pairs, pairs)
                    self.written += len(pairs) - len(duplicates)
                    self._on_written(len(pairs) - len(duplicates))
                    for pair in duplicates:
                        self._on_duplicate(pair)
                    pairs = self._in_hand = []   # written: a retry of the counts must not write them again
                if counts or self._released_in_hand:
                    self._to_open_run(self._write_counts, counts)
                if down_since is not None:
                    log.warning("the store is back after %.0f s; the pairs held meanwhile are being written "
                                "(%d dropped so far)", time.monotonic() - down_since, sum(self.dropped.values()))
                    self._on_state(True)
                return True
            except RunFinished as exc:      # finished under a writer with nowhere to move: a replay's error
                self.failed = exc
                return False
            except Exception as exc:   # the database went away, or refused: keep the batch, retry
                if isinstance(exc, (DataError, IntegrityError)) and pairs:
                    # Not the store failing: a pair it refuses. Retried, it would be refused for
                    # ever and hold up every pair after it; written one by one, only it is lost.
                    # (Refused counts are a failing store like any other: retried, never a dead writer.)
                    pairs = self._in_hand = self._write_singly(pairs)
                    continue
                now = time.monotonic()
                cause = _cause(exc)
                if down_since is None:
                    down_since = attempt
                    log.warning("the store failed (%s: %s); holding pairs (at most %d, %d MB) and retrying",
                                type(exc).__name__, _first_line(exc), self._queue.maxsize, self._max_bytes // 2**20)
                    self._on_state(False)
                    said = (cause, now)
                elif cause != said[0] and now - said[1] >= CAUSE_EVERY:
                    # the outage goes on for another reason (a database recreated empty: no table
                    # now, where the server was down): the first line no longer says why
                    log.warning("the store still fails, now for another reason (%s: %s); retrying",
                                type(exc).__name__, _first_line(exc))
                    said = (cause, now)
                if self._give_up_after is not None and now - down_since >= self._give_up_after:
                    self.failed = exc
                    return False
                if self._deadline is not None and now >= self._deadline:
                    self._drop("shutdown", pairs + self._drain_queue())
                    self._counts_lost = bool(counts)
                    return False
                pause = wait if self._deadline is None else min(wait, self._deadline - now)
                if self._stop.is_set():
                    time.sleep(pause)
                else:
                    self._stop.wait(pause)   # (woken by close(), to retry once more and honour its deadline)
                wait = min(wait * 2, RETRY_MAX)

    def _write_counts(self, run_id: str, counts: Counter[CountKey]) -> None:
        with self.writing_counts:   # (and none of it read by a heartbeat once in the store)
            self.store.add_counts(run_id, counts, member=self.member, released=self._released_in_hand)
            self._released_in_hand = 0

    def _write_singly(self, pairs: list[Pair]) -> list[Pair]:
        """Write ``pairs`` one at a time, dropping (``rejected``, one log line each) those the
        store refuses; the empty list, or the pairs left when the store fails meanwhile."""
        for i, pair in enumerate(pairs):
            try:
                duplicates = self._to_open_run(self.store.add_pairs, [pair])
            except (DataError, IntegrityError) as exc:
                log.error("the store refused a pair (%s: %s); it is dropped and counted (rejected)",
                          type(exc).__name__, str(exc.orig).splitlines()[0][:200] if exc.orig else "")
                self._drop("rejected", [pair])
                continue
            except Exception:
                return pairs[i:]      # the store itself failed: the rest wait for the retry
            self.written += 1 - len(duplicates)
            self._on_written(1 - len(duplicates))
            for duplicate in duplicates:
                self._on_duplicate(duplicate)
        return []

    def _drain_queue(self) -> list[Pair]:
        drained: list[Pair] = []
        while True:
            try:
                pair, size = self._queue.get_nowait()
            except queue.Empty:
                self._on_queue(0, self._bytes)
                return drained
            self._taken(size)
            drained.append(pair)

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


def _cause(exc: BaseException) -> str:
    """What kind of failure: the database driver's error class under SQLAlchemy's wrapper."""
    return type(getattr(exc, "orig", None) or exc).__name__


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else ""

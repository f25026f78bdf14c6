"""(in the pair process) Pairs made and stored where the shadow's answer already is.

When the pair process calls the shadow (``shadowdiff.proxy.shadowcalls``), the shadow's
answer is in the child, and the pair is made there too: the proxy sends the primary's
answer as it passed, once it passed whole, and gets back only what its metrics and its
run's counts need (``Measured``). The pair, redacted, goes to a ``PairWriter`` of the
child's own on the same store and run: the answers cross no socket a second time, and the
proxy's process neither unpickles pairs nor writes them. (Before, the shadow's answer
went to the proxy, back to the child with the primary's, and the made pair to the proxy
again for its writer: 0.3-0.4 ms of the proxy's CPU a changed pair, bench/mirror_cpu.py.)

The pairs are made in one thread here (``make``), not on the event loop that calls the
shadow and stamps its answers' arrivals. What the child's writer does is told to the
proxy (``Stats``: pairs written and dropped, whether the store takes them, the queue), which
counts it in its own metrics. A pair the child cannot store (its store could not be
opened, or its writer stopped) goes back to the proxy whole, for the proxy's writer, as
a pair made in the proxy's thread would.

The run: the proxy names it when the child connects and again whenever the run was
closed under it and it joined another (``shadowdiff close --force``); a write the store
refuses as finished waits for that (``MOVE_WAIT``), as the proxy's own writer waits for
the proxy to join the next run.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shadowdiff.answers.redact import failure_text
from shadowdiff.proxy.pairmaking import Made, Maker, PairInputs, plain
from shadowdiff.proxy.pairprocess import yield_to_the_proxy
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.store.store import Store
from shadowdiff.store.writer import PairWriter

log = logging.getLogger("shadowdiff.proxy")

MAX_BATCH = 64         # pairs made before their replies are handed to the event loop, at most
# seconds the thread lets pairs gather after it wakes: their replies then reach the proxy in
# one message, and each message costs the proxy's event loop a read and a wake-up (at 400
# pairs a second, one reply a message cost it ~0.1 ms a pair more than a few did)
GATHER = 0.02
MOVE_WAIT = 30.0       # seconds a write refused as finished waits for the proxy to name the next run
OPEN_EVERY = 10.0      # seconds between two attempts to open the store, after one failed


@dataclass
class Stats:
    """What the child's writer did since it last said (counts) and its state now."""

    written: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    up: bool = True
    queued: int = 0
    queued_bytes: int = 0
    # pairs the writer took and has not yet written, dropped nor found stored already (its
    # queue and the batch in hand): lost if the child ends before they are
    held: int = 0

    def parts(self) -> tuple[Any, ...]:
        return (self.written, dict(self.dropped), self.up, self.queued, self.queued_bytes, self.held)

    @classmethod
    def from_parts(cls, parts: tuple[Any, ...]) -> Stats:
        written, dropped, up, queued, queued_bytes, held = parts
        return cls(written, Counter(dropped), up, queued, queued_bytes, held)

    def state(self) -> tuple[Any, ...]:
        """What is told again whenever it changes (the counts are told when there are new ones)."""
        return self.up, self.queued, self.queued_bytes, self.held


class ChildPairs:
    """Make pairs in a thread, store them, and hand each reply to ``send`` (from that thread)."""

    def __init__(self, maker: Maker, settings: ProxySettings, send: Callable[[list[tuple[Any, ...]]], None]) -> None:
        self.maker = maker
        self.settings = settings
        self.send = send
        self.writer: PairWriter | None = None
        self.store: Store | None = None
        self._run_id: str | None = None
        self._run_changed = threading.Condition()
        self._next_open = 0.0
        self._stats = Stats()
        self._stats_lock = threading.Lock()
        self._said = Stats()         # the state last told (``up``, the queue): told again when it changes
        self._queue: queue.SimpleQueue[tuple[int, Callable[[], PairInputs], int] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="shadowdiff-child-pairs", daemon=True)
        self._thread.start()

    def run(self, run_id: str | None) -> None:
        """The run to store pairs in (None: the proxy has no store), from the proxy."""
        with self._run_changed:
            self._run_id = run_id
            if self.writer is not None and run_id is not None:
                self.writer.run_id = run_id    # (read once per batch by the writer's thread)
            self._run_changed.notify_all()

    def make(self, call: int, inputs: Callable[[], PairInputs], retries: int) -> None:
        """Make (and store) the pair ``inputs()`` gives (in the thread); its reply,
        ``("made", call, ((measured, stored, size), retries))``, is sent when done: ``measured``
        as plain values (``pairmaking.plain``), ``stored`` the pair for the proxy's writer
        when the child's could not take it (else None)."""
        self._queue.put((call, inputs, retries))

    def close(self, timeout: float) -> bool:
        """Stop making pairs and write what is held within ``timeout`` seconds; whether
        everything was (no pair nor count dropped at the end)."""
        self._queue.put(None)
        self._thread.join(timeout)
        writer = self.writer
        if writer is None:
            return True
        try:
            writer.close(max(0.0, timeout))
        except Exception as exc:    # (its error was said when it stopped)
            log.debug("its writer had stopped: %s", failure_text(exc))
        if self.store is not None:
            self.store.close()
        if writer.dropped["shutdown"]:     # (its lines are prefixed "the pair process:"; the proxy's own says its)
            log.warning("shutdown: %d pairs the store had not taken by the deadline were dropped; the proxy leaves "
                        "its run incomplete", writer.dropped["shutdown"])
        return not (writer.dropped["shutdown"] or writer.unwritten)

    def _run(self) -> None:
        yield_to_the_proxy()    # (the writer's thread, started from this one, too)
        while True:
            first = self._queue.get()
            if first is None:
                return
            time.sleep(GATHER)
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)      # (after this batch)
                    break
                batch.append(more)
            replies = [self._made(call, inputs, retries) for call, inputs, retries in batch]
            stats = self._stats_to_tell()
            if stats is not None:
                replies.append(stats)
            self.send(replies)

    def _made(self, call: int, inputs: Callable[[], PairInputs], retries: int) -> tuple[Any, ...]:
        try:
            made = self.maker.make(inputs())
            stored = made.stored
            if stored is not None and self._stored(made):
                stored = None
            return ("made", call, ((plain(made.measured), stored, made.size if stored is not None else 0), retries))
        except Exception as exc:   # one pair's failure is that pair's: the proxy counts and logs it
            return ("failed", call, failure_text(exc))

    def _stored(self, made: Made) -> bool:
        """Whether the child's writer took the pair (else it goes back to the proxy's)."""
        writer = self._writer()
        if writer is None or writer.failed is not None:
            return False
        assert made.stored is not None
        with self._stats_lock:    # (before it is submitted: its write may be told first)
            self._stats.held += 1
        try:
            writer.submit(made.stored, made.size)
        except Exception:     # (it stopped meanwhile: the proxy's writer takes it)
            with self._stats_lock:
                self._stats.held -= 1
            return False
        return True

    def _writer(self) -> PairWriter | None:
        """The child's writer, opened on first use (and again, at most every ``OPEN_EVERY``
        seconds, after its store could not be opened)."""
        if self.writer is not None or self._run_id is None or time.monotonic() < self._next_open:
            return self.writer
        s = self.settings
        try:
            self.store = Store.open(s.store, create=False, timeout=s.store_timeout)
        except Exception as exc:
            self._next_open = time.monotonic() + OPEN_EVERY
            # (its lines are prefixed "the pair process:")
            log.warning("cannot open the store (%s); the proxy's writer stores its pairs meanwhile",
                        failure_text(exc))
            return None
        self.writer = PairWriter(self.store, self._run_id, on_written=self._written, on_finished=self._moved,
                                 on_dropped=self._dropped, on_state=self._state, on_queue=self._queued,
                                 on_duplicate=self._duplicate, max_queue=s.store_queue, max_bytes=s.store_queue_bytes)
        return self.writer

    def _moved(self, finished: str) -> str:
        """(the writer's thread) The run was finished under the writer: the one the proxy
        joins instead, once it has said (``run``)."""
        with self._run_changed:
            self._run_changed.wait_for(lambda: self._run_id != finished, MOVE_WAIT)
            return self._run_id or finished

    # -- what the writer did, for the proxy's metrics -----------------------------------

    def _written(self, n: int) -> None:
        with self._stats_lock:
            self._stats.written += n
            self._stats.held -= n
        self._tell()

    def _duplicate(self, _: Any) -> None:
        with self._stats_lock:     # (the store had it already: not written again, not held either)
            self._stats.held -= 1

    def _dropped(self, reason: str, n: int) -> None:
        with self._stats_lock:
            self._stats.dropped[reason] += n
            self._stats.held -= n
        self._tell()

    def _state(self, up: bool) -> None:
        with self._stats_lock:
            self._stats.up = up
        self._tell()

    def _queued(self, pairs: int, size: int) -> None:
        with self._stats_lock:
            self._stats.queued, self._stats.queued_bytes = pairs, size
        # as it submits a pair, this process's thread tells it with that pair's reply; after a
        # write, the writer's thread tells it now: nothing else may come to carry it (the queue
        # emptied as the pairs stopped coming would otherwise stay shown as full)
        if threading.current_thread() is not self._thread:
            self._tell()

    def _tell(self) -> None:
        stats = self._stats_to_tell()
        if stats is not None:
            self.send([stats])

    def _stats_to_tell(self) -> tuple[Any, ...] | None:
        """The stats message, if there is news since the last one."""
        with self._stats_lock:
            s, said = self._stats, self._said
            if not (s.written or s.dropped or s.state() != said.state()):
                return None
            self._said = Stats(0, Counter(), s.up, s.queued, s.queued_bytes, s.held)
            self._stats = Stats(0, Counter(), s.up, s.queued, s.queued_bytes, s.held)
        return ("stats", -1, s.parts())

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
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import NamedTuple, TypeVar

from shadowdiff.errors import RunFinished
from shadowdiff.records import Pair
from shadowdiff.store import Store

_STOP = object()
_MOVES = 5   # runs closed under the writer one after the other, five times over: give up
A = TypeVar("A")
T = TypeVar("T")


class _Counts(NamedTuple):
    counts: dict[tuple[str, str, bool], int]   # (pairs or noise, outcome, comparable) -> pairs


class PairWriter:
    """Queue pairs for ``store`` under ``run_id``; ``close()`` writes what is left."""

    def __init__(self, store: Store, run_id: str, *, on_duplicate: Callable[[Pair], None] | None = None,
                 on_written: Callable[[int], None] | None = None,
                 on_finished: Callable[[str], str] | None = None, max_batch: int = 200,
                 max_delay: float = 0.05) -> None:
        self.store = store
        self.run_id = run_id
        self.written = 0
        self.failed: BaseException | None = None
        self._on_duplicate = on_duplicate or (lambda _: None)
        self._on_written = on_written or (lambda _: None)
        self._on_finished = on_finished
        self._queue: queue.Queue[object] = queue.Queue()
        self._max_batch = max_batch
        self._max_delay = max_delay
        self._thread = threading.Thread(target=self._run, name="shadowdiff-writer", daemon=True)
        self._thread.start()

    def submit(self, pair: Pair) -> None:
        if self.failed is not None:
            raise self.failed
        self._queue.put(pair)

    def add_counts(self, counts: Mapping[tuple[str, str, bool], int]) -> None:
        """Add outcome counts to the run (pairs seen, stored or not), keyed by (``pairs``
        or ``noise``, outcome, comparable); written with the batch they arrive in."""
        if self.failed is None and counts:
            self._queue.put(_Counts(dict(counts)))

    def close(self) -> None:
        """Write everything submitted so far and stop the thread."""
        self._queue.put(_STOP)
        self._thread.join()
        if self.failed is not None:
            raise self.failed

    def _run(self) -> None:
        stopping = False
        while not stopping:
            item = self._queue.get()
            if item is _STOP:
                return
            batch = [item]
            while len(batch) < self._max_batch:
                try:
                    item = self._queue.get(timeout=self._max_delay)
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)
            pairs = [item for item in batch if isinstance(item, Pair)]
            counts: Counter[tuple[str, str, bool]] = Counter()
            for item in batch:
                if isinstance(item, _Counts):
                    counts.update(item.counts)
            try:
                # each in its own transaction: a run closed between the two keeps the pairs it got
                duplicates = self._to_open_run(self.store.add_pairs, pairs)
                self._to_open_run(self.store.add_counts, counts)
            except BaseException as exc:  # the database went away: surface it to the producer
                self.failed = exc
                return
            self.written += len(pairs) - len(duplicates)
            if pairs:
                self._on_written(len(pairs) - len(duplicates))
            for pair in duplicates:
                self._on_duplicate(pair)

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

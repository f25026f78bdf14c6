"""``serve --retain``: the proxy deletes its deployment's old pairs itself.

Once at start-up and every ``every`` seconds (10 minutes) after, a prune
(``shadowdiff.store.prune``) of the serve runs of this proxy's ``--deployment`` name -
without one, of the runs without a name - never of another deployment's runs, nor of
replay and compare runs; reviewed and claimed pairs, runs and their outcome counts are
kept. In a thread of its own: a first prune over a large backlog takes minutes, and
neither the event loop nor its default executor (which name resolution needs) may
wait for it. A failing store is logged once when the prunes start failing and once
when they work again, never raised into the proxy; the next period tries again.
Several processes pruning one store at once (workers, replicas) is harmless: a pair is
deleted and counted once. ``stop`` is checked between batches, so shutdown waits at
most for the batch in progress (a daemon thread: a batch cut by the exit is rolled
back whole).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from shadowdiff.store import Store
from shadowdiff.store.prune import Scope, prune

log = logging.getLogger("shadowdiff.proxy")
EVERY = 600.0   # seconds between prunes


class Retention:
    def __init__(self, store: Store, older_than: float, deployment: str | None, *, every: float = EVERY,
                 on_pruned: Callable[[int], None] | None = None) -> None:
        self.store = store
        self.older_than = older_than
        self.scope = Scope(deployment=deployment, unnamed=deployment is None)
        self.every = every
        self.passes = 0                # prunes done (for tests)
        self._on_pruned = on_pruned or (lambda _n: None)
        self._failing = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="shadowdiff-retention", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop after the batch in progress, waiting for it at most ``timeout`` seconds."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._prune()
            self._stop.wait(self.every)

    def _prune(self) -> None:
        try:
            result = prune(self.store, self.older_than, self.scope, stop=self._stop, count_kept=False)
        except Exception as exc:   # the store away or refusing: never the proxy's problem; try next period
            if not self._failing:
                self._failing = True
                log.warning("retention: pruning the store failed (%s: %s); trying again every %.0f s",
                            type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "", self.every)
            return
        if self._failing:
            self._failing = False
            log.warning("retention: pruning the store works again")
        if result.total:
            self._on_pruned(result.total)
            log.info("retention: deleted %d pairs stored before %s", result.total,
                     result.cutoff.isoformat(timespec="seconds"))
        self.passes += 1             # (last: a pass counted is a pass whose deletions are counted)

"""The supervisor of ``serve --workers N``: uvicorn's, which also marks a dead worker lost.

uvicorn's ``Multiprocess`` looks at its workers every half second
(``keep_subprocess_alive``): a worker whose process has ended, or that does not answer
its ping within ``timeout_worker_healthcheck``, is killed, joined and replaced. Each
worker it found dead is also marked lost in its serve run here (``RunMembers.mark_lost``,
by this host and the worker's pid), so that the requests the worker held are counted
in the run as lost within a second of its death, not once its silence has lasted
``STALE_AFTER`` (the other members' heartbeats) or when the run ends. A worker that
stopped by itself (SIGTERM to it alone) has left its run already: nothing to mark.

The marking runs in a thread of its own: a store slow to answer never holds up the loop
that restarts workers. The store is opened on the first death (the workers made it).
"""

from __future__ import annotations

import logging
import socket
import threading
from socket import socket as Socket

from sqlalchemy.exc import SQLAlchemyError
from uvicorn.config import Config
from uvicorn.supervisors import Multiprocess

from shadowdiff.errors import ShadowdiffError
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.store import Store
from shadowdiff.store.members import STALE_AFTER, RunMembers

log = logging.getLogger("shadowdiff.proxy")
_JOIN = 5.0     # seconds, at most, the supervisor waits at exit for a marking under way


class Supervisor(Multiprocess):
    """uvicorn's workers' supervisor, marking each worker it finds dead lost in its run."""

    def __init__(self, config: Config, sockets: list[Socket], settings: ProxySettings) -> None:
        super().__init__(config, sockets)
        self.settings = settings
        self.host = socket.gethostname()       # what each worker joined its run with (shadowdiff.proxy.membership)
        self._store: Store | None = None
        self._opening = threading.Lock()
        self._seen: set[int] = set()           # pids found dead (each marked once)
        self._marking: list[threading.Thread] = []

    def keep_subprocess_alive(self) -> None:
        watched = list(self.processes)
        super().keep_subprocess_alive()
        for process in watched:
            pid = process.pid
            # (exitcode polls: a worker that died after uvicorn looked is marked now, replaced next time)
            if pid is not None and pid not in self._seen and process.exitcode is not None:
                self._seen.add(pid)
                self.worker_died(pid)

    def worker_died(self, pid: int) -> None:
        """Mark worker ``pid``'s member of its run lost, in a thread."""
        if self.settings.shadow is None:     # no shadow, no store: no run
            return
        thread = threading.Thread(target=self._mark, args=(pid,), name="shadowdiff-lost-worker", daemon=True)
        self._marking = [t for t in self._marking if t.is_alive()] + [thread]
        thread.start()

    def run(self) -> None:
        try:
            super().run()
        finally:
            for thread in self._marking:
                thread.join(_JOIN)
            if self._store is not None:
                self._store.close()

    def _mark(self, pid: int) -> None:
        try:
            with self._opening:
                if self._store is None:
                    self._store = Store.open(self.settings.store, timeout=self.settings.store_timeout)
                store = self._store
            RunMembers(store).mark_lost(self.host, pid, self.settings.deployment)
        except (SQLAlchemyError, ShadowdiffError) as exc:
            log.warning("worker %d died, and could not be marked lost in its run (%s): the other members will "
                        "once it has been silent for %.0f s", pid, exc.__class__.__name__, STALE_AFTER)

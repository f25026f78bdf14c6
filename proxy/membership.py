"""This process's part in its serve run: joined at start-up, a heartbeat while it
serves, left at shutdown (see ``shadowdiff.store.members`` for the run's side).

Each beat reports how many requests this process holds whose counts are not in the
store yet (``in_flight``, ``shadowdiff.proxy.pairs.PairRecorder.unwritten``), and each write of
counts takes those it finishes off that number: if the process is killed, what is left
is counted in its run as lost with it. Each beat also marks the run's
members silent for ``STALE_AFTER`` lost: a replica on another host, which no
supervisor watches, is found lost within ``STALE_AFTER + HEARTBEAT`` seconds.

The heartbeat runs in a thread of its own, off the event loop and independent of the
pair writer (which sleeps while no pair comes). If the run was closed under this
process (``shadowdiff close --force``), this process joins a new run (``move``) as soon
as either finds out: the writer, whose next batch the store refuses (``RunFinished``),
or the next heartbeat. ``on_moved`` hands the new run's id to the writer and the app;
pairs and counts written after a run was closed never land in it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from shadowdiff.store import Store
from shadowdiff.store.members import HEARTBEAT, RunMembers

log = logging.getLogger("shadowdiff.proxy")
RETRY = 2.0     # seconds between heartbeats while the store fails


class Membership:
    def __init__(self, store: Store, name: str | None, settings: Mapping[str, Any], member: str,
                 heartbeat: float = HEARTBEAT, on_result: Callable[[bool], None] = lambda _ok: None,
                 in_flight: Callable[[], int] = lambda: 0) -> None:
        self.members = RunMembers(store)
        self.name = name
        self.settings = settings
        self.member = member
        self.run_id: str | None = None
        self.on_moved: Callable[[str], None] = lambda _: None
        self._heartbeat = heartbeat
        self._on_result = on_result      # each beat: whether the store took it
        self._in_flight = in_flight      # read by the heartbeat's thread (ints: no lock needed to read)
        # held while a beat reads and records ``in_flight``: the writer's lock, which it holds while it
        # takes the requests its counts finish off the same row (``PairWriter.writing_counts``)
        self.in_flight_lock: AbstractContextManager[Any] = contextlib.nullcontext()
        self._failing = False
        self._stop = threading.Event()
        self._moving = threading.Lock()     # the writer and the heartbeat may find the run closed at once
        self._thread: threading.Thread | None = None

    def join(self) -> str:
        """Join (or start) the run and start the heartbeat; the run's id. Blocking."""
        self.run_id = self._join()
        self._thread = threading.Thread(target=self._beat, name="shadowdiff-heartbeat", daemon=True)
        self._thread.start()
        return self.run_id

    def leave(self, incomplete: bool = False) -> None:
        """Stop the heartbeat and leave the run (the last member to leave finishes it).
        Blocking, up to the store's timeout (a beat under way is not waited for long)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        ended = "incomplete" if incomplete else "stopped"
        if self.run_id is not None and self.members.leave(self.run_id, self.member, ended):
            log.info("run %s finished: this proxy was the last of it to stop", self.run_id)

    def move(self, closed: str) -> str:
        """Join a new run if ``closed`` (found finished) is still this process's; the run
        to write to. Blocking (the writer's or the heartbeat's thread)."""
        with self._moving:
            if self.run_id != closed:       # the other thread moved already
                assert self.run_id is not None
                return self.run_id
            self.run_id = self._join()
            log.error("run %s was closed while this proxy served (shadowdiff close --force); what it compares "
                      "from now on goes to run %s", closed, self.run_id)
            self.on_moved(self.run_id)
            return self.run_id

    def _join(self) -> str:
        joined = self.members.join(self.name, self.settings, self.member, socket.gethostname(), os.getpid())
        if joined.others:
            log.warning("deployment %s: open run(s) %s were started with other settings; this proxy writes to "
                        "run %s (pairs compared under other settings are never pooled)",
                        self.name, ", ".join(joined.others), joined.run_id)
        return joined.run_id

    def _beat(self) -> None:
        # (more often while the store fails: its recovery is seen within seconds, not a beat)
        while not self._stop.wait(min(self._heartbeat, RETRY) if self._failing else self._heartbeat):
            run_id = self.run_id
            assert run_id is not None
            try:
                with self.in_flight_lock:
                    alive = self.members.heartbeat(run_id, self.member, self._in_flight())
                if not alive:
                    self.move(run_id)
            except SQLAlchemyError as exc:   # the database is away: the next beat tries again
                if not self._failing:       # one line per outage, not one per beat
                    log.warning("heartbeat to the store failed (%s); retrying every %g s", exc.__class__.__name__,
                                min(self._heartbeat, RETRY))
                self._failing = True
                self._on_result(False)
                continue
            if self._failing:
                log.warning("heartbeat to the store works again")
            self._failing = False
            self._on_result(True)

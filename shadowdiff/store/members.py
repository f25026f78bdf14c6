"""Serve runs shared by several processes: joining, heartbeats, leaving, closing.

Every ``shadowdiff serve`` process (each uvicorn worker, each replica) is a *member*
of one run. Processes given the same deployment name and the same settings join the
one open run of that name (``--workers N`` names one for its workers), so a report
sees every pair the deployment compared. At most one run per (name, settings digest)
is open: a partial unique index on the open runs, so two processes creating it at once
end with one run (the loser of the insert selects the winner's). A deployment whose
settings change (a rolling update to another shadow model) starts a run of its own:
pairs compared under other settings are never pooled.

A member beats its heart every ``HEARTBEAT`` seconds, reporting how many requests it
holds that its run has not counted yet (``in_flight``), and marks itself finished when
it stops; the run finishes when the last live member leaves. Join, leave and close
lock the run's row (``FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE``
serialises every writer), so a member joining as the last one leaves either joins a
run that stays open or, if the run finished first, starts a new one — it is never
added to a finished run. A member not heard from for ``STALE_AFTER`` seconds is taken
for dead (``kill -9``, out of memory, a node gone): it no longer keeps the run open
when the others stop, and ``shadowdiff close`` closes the run only when every member
is finished or silent.

A member that dies is marked ``lost`` as soon as someone notices: the supervisor of
``serve --workers N`` when its worker process dies (``mark_lost``, by host and pid,
within a second: ``shadowdiff.proxy.supervisor``), or else the heartbeat of any live member of
its run once it has been silent for ``STALE_AFTER`` (another host's replica: within
``STALE_AFTER + HEARTBEAT``), or at the latest the run's end. Marking a member lost
adds its last reported in-flight count to the run's counts as requests not compared,
``NotCompared.LOST`` (an error against the run's gate: they were never checked), and logs one
warning line. A member taken for lost that beats again (its store was out of reach for
``STALE_AFTER``, not the process) is taken back into the run, and its lost requests
out of the counts: it counts them itself.

A run closed under its members (``close --force``) takes no more pairs or counts
(the store refuses them: ``RunFinished``), so its report never changes afterwards; a
member joins a new run as soon as its writer or its heartbeat finds out
(``shadowdiff.proxy.membership``).

Times are the database's clock on PostgreSQL (replicas on several hosts compare
heartbeats against one clock), the local clock on SQLite (one host).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from shadowdiff.errors import ShadowdiffError
from shadowdiff.store import schema
from shadowdiff.store.store import Store, add_to_counts
from shadowdiff.vocabulary import NotCompared, Tally

# Seconds between a member's heartbeats: the in-flight count a lost member leaves is this
# old at most. Cheap: one UPDATE of one row and one read of the run's few member rows per
# process per beat (dozens of processes make tens of small statements a second).
HEARTBEAT = 2.0
# A member silent this long is taken for dead. Not tied to HEARTBEAT: a live member whose
# store is briefly out of reach (a PostgreSQL failover, a stalled disk) must not be taken
# for lost by its peers, who now mark it at once.
STALE_AFTER = 30.0
log = logging.getLogger("shadowdiff.store")
_JOIN_ATTEMPTS = 5                  # a run created and finished between two of ours, five times over: give up


class StillRunning(ShadowdiffError):
    """``close`` was asked to close a run some of whose proxies still beat their hearts."""

    def __init__(self, run_id: str, running: list[Member]) -> None:
        self.running = running
        who = "; ".join(f"{m.host} pid {m.pid}, heard from {m.silent:.0f} s ago" for m in running)
        super().__init__(
            f"run {run_id} has {_proxies(len(running))} still running ({who}): each closes its part when it "
            "stops, and the last one closes the run. Stop them; if they were killed, wait: a proxy not heard "
            f"from for {STALE_AFTER:.0f} s is taken for gone. --force closes the run anyway (what they compare "
            "from then on goes to a new run)")


@dataclass(frozen=True)
class Member:
    id: str                         # the prefix of the pair keys it writes
    host: str
    pid: int
    started_at: datetime
    finished_at: datetime | None
    ended: str | None               # stopped, lost (found dead or silent) or forced (close --force)
    silent: float                   # seconds since its last heartbeat, when read
    in_flight: int = 0              # requests held that its run had not counted, at its last heartbeat

    @property
    def running(self) -> bool:
        """Open and heard from lately."""
        return self.finished_at is None and self.silent < STALE_AFTER


@dataclass(frozen=True)
class Joined:
    run_id: str
    created: bool                   # this process started the run
    others: list[str]               # open runs of the same name with other settings


def settings_digest(settings: Mapping[str, Any]) -> str:
    """What tells two processes' settings apart (runs pool pairs only under the same)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:32]


def describe(members: list[Member]) -> str:
    """``2 proxies, 1 still running``: for the first line of a report ("" for a run without members)."""
    if not members:
        return ""
    running = sum(m.running for m in members)
    silent = sum(m.finished_at is None and not m.running for m in members)
    lost = sum(m.ended == "lost" for m in members)
    forced = sum(m.ended == "forced" for m in members)
    parts = [_proxies(len(members))]
    parts += [f"{running} still running"] if running else []
    parts += [f"closed by --force, {_proxies(forced)} {'was' if forced == 1 else 'were'} still running "
              "(they went on in a new run)"] if forced else []
    parts += [f"{silent} not heard from for {STALE_AFTER:.0f} s (killed?)"] if silent else []
    held = sum(m.in_flight for m in members if m.ended == "lost")
    counted = f"{held} requests they held then are counted as lost, " if held else "their "
    parts += [f"{lost} lost (killed: {counted}pairs in flight then are missing)"] if lost else []
    incomplete = sum(m.ended == "incomplete" for m in members)
    parts += [f"{incomplete} stopped with pairs the store had not taken (dropped)"] if incomplete else []
    return ", ".join(parts)


def _proxies(n: int) -> str:
    return f"{n} prox{'y' if n == 1 else 'ies'}"


def _aware(value: datetime) -> datetime:
    # SQLite hands back naive datetimes; every time stored is UTC
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _member(row: Any, now: datetime) -> Member:
    return Member(row.member, row.host, row.pid, _aware(row.started_at),
                  None if row.finished_at is None else _aware(row.finished_at), row.ended,
                  (now - _aware(row.heartbeat_at)).total_seconds(), row.in_flight)


def _silent(now: datetime) -> sa.ColumnElement[bool]:
    """A member not heard from for ``STALE_AFTER`` seconds (taken for dead)."""
    return schema.run_members.c.heartbeat_at < now - timedelta(seconds=STALE_AFTER)


def _said(run_id: str, lost: list[Member], why: str | None) -> None:
    """One warning line per member marked lost (once its transaction is committed)."""
    for x in lost:
        log.warning("proxy %s (%s pid %d) of run %s is lost (%s): %s", x.id, x.host, x.pid, run_id,
                    why or f"not heard from for {x.silent:.0f} s",
                    f"the {x.in_flight} requests it held are counted as lost" if x.in_flight else
                    "it held no request its run had not counted")


class RunMembers:
    """The members of the store's serve runs."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.engine = store.engine
        self._postgresql = store.dialect == "postgresql"

    def join(self, name: str | None, settings: Mapping[str, Any], member: str, host: str, pid: int,
             kind: str = "serve") -> Joined:
        """Join the open run of ``name`` with these settings, or start it; a run of its
        own without a name."""
        digest = settings_digest(settings)
        r = schema.runs.c
        for _ in range(_JOIN_ATTEMPTS):
            with self.engine.begin() as c:
                now = self._now(c)
                run_id: str | None = None
                if name is not None:
                    query = sa.select(r.id).where(r.name == name, r.digest == digest, r.finished_at.is_(None))
                    run_id = c.execute(query.with_for_update() if self._postgresql else query).scalar_one_or_none()
                created = run_id is None
                if run_id is None:
                    run_id = uuid.uuid4().hex
                    try:
                        with c.begin_nested():
                            c.execute(schema.runs.insert().values(id=run_id, kind=kind, created_at=now,
                                                                  settings=dict(settings), name=name, digest=digest))
                    except IntegrityError:
                        continue        # another process created it first: select theirs
                c.execute(schema.run_members.insert().values(run_id=run_id, member=member, host=host, pid=pid,
                                                             started_at=now, heartbeat_at=now))
                others = [] if name is None else list(c.execute(
                    sa.select(r.id).where(r.name == name, r.digest != digest, r.finished_at.is_(None))).scalars())
                return Joined(run_id, created, others)
        raise ShadowdiffError(f"could not join the open run of deployment {name!r}: it kept finishing as we joined")

    def heartbeat(self, run_id: str, member: str, in_flight: int = 0) -> bool:
        """Note that ``member`` is alive and holds ``in_flight`` requests its run has not
        counted yet; then mark the run's members silent for ``STALE_AFTER`` lost. False if
        the run was closed meanwhile (``close``). A member marked lost meanwhile is taken
        back if its run is open: it was alive all along."""
        m = schema.run_members.c
        with self.engine.begin() as c:
            now = self._now(c)
            updated = c.execute(schema.run_members.update()
                                .where(m.run_id == run_id, m.member == member, m.finished_at.is_(None))
                                .values(heartbeat_at=now, in_flight=in_flight))
            back = None if updated.rowcount == 1 else self._take_back(c, run_id, member, now, in_flight)
            alive = updated.rowcount == 1 or back is not None
            silent = alive and c.execute(sa.select(m.member).where(
                m.run_id == run_id, m.finished_at.is_(None), _silent(now)).limit(1)).first() is not None
        if back is not None:
            log.warning("proxy %s (%s pid %d) of run %s, taken for lost, beats again (its store was out of reach): "
                        "it is back in the run, and the %d requests it held then are no longer counted as lost",
                        member, back.host, back.pid, run_id, back.in_flight)
        if silent:   # (rare: in a transaction of its own, under the run's lock, as leave and close are)
            self._lost_in(run_id, None)
        return alive

    def mark_lost(self, host: str, pid: int, name: str | None = None) -> list[Member]:
        """Mark the open member of process ``pid`` on ``host`` lost (its supervisor saw it
        die), in its open run (of deployment ``name``, when given): its in-flight count
        goes to the run's counts. The members marked ([] if it had left or never joined)."""
        m, r = schema.run_members.c, schema.runs.c
        query = (sa.select(m.run_id).join_from(schema.run_members, schema.runs, r.id == m.run_id)
                 .where(m.host == host, m.pid == pid, m.finished_at.is_(None), r.finished_at.is_(None)))
        if name is not None:
            query = query.where(r.name == name)
        with self.engine.connect() as c:
            run_ids = list(c.execute(query).scalars())
        return [x for run_id in run_ids for x in self._lost_in(run_id, (host, pid))]

    def leave(self, run_id: str, member: str, ended: str = "stopped") -> bool:
        """Mark ``member`` finished (``stopped``; ``incomplete`` when it stopped with pairs or
        counts the store never took); finish the run if no live member is left. True if it did."""
        m = schema.run_members.c
        with self.engine.begin() as c:
            self._lock(c, run_id)
            now = self._now(c)
            c.execute(schema.run_members.update()
                      .where(m.run_id == run_id, m.member == member, m.finished_at.is_(None))
                      .values(finished_at=now, ended=ended))
            if any(x.running for x in self._members(c, run_id, now)):
                return False
            lost = self._finish(c, run_id, now, forced=False)
        _said(run_id, lost, None)
        return True

    def close(self, run_id: str, *, force: bool = False) -> list[Member]:
        """Close a run by hand (``shadowdiff close``): refused (``StillRunning``) while a
        member beats its heart, unless ``force``. Returns the members it closed."""
        with self.engine.begin() as c:
            self._lock(c, run_id)
            now = self._now(c)
            members = self._members(c, run_id, now)
            running = [x for x in members if x.running]
            if running and not force:
                raise StillRunning(run_id, running)
            lost = self._finish(c, run_id, now, forced=force)
            closed = {x.id for x in members if x.finished_at is None}
            finished = [x for x in self._members(c, run_id, now) if x.id in closed]
        _said(run_id, lost, None)
        return finished

    def members(self, run_id: str) -> list[Member]:
        with self.engine.connect() as c:
            return self._members(c, run_id, self._now(c))

    def _finish(self, c: Connection, run_id: str, now: datetime, *, forced: bool) -> list[Member]:
        """Finish the run and its open members: silent ones as lost (returned), live ones
        (``forced`` only) as forced."""
        m = schema.run_members.c
        lost = self._mark_lost(c, run_id, now, _silent(now))
        if forced:
            c.execute(schema.run_members.update().where(m.run_id == run_id, m.finished_at.is_(None))
                      .values(finished_at=now, ended="forced"))
        c.execute(schema.runs.update().where(schema.runs.c.id == run_id, schema.runs.c.finished_at.is_(None))
                  .values(finished_at=now))
        return lost

    def _lost_in(self, run_id: str, process: tuple[str, int] | None) -> list[Member]:
        """Mark lost, if the run is open, its open members that are the process ``(host,
        pid)``, or else the silent ones; log and return them."""
        m = schema.run_members.c
        with self.engine.begin() as c:
            self._lock(c, run_id)
            now = self._now(c)
            if not self._is_open(c, run_id):
                return []
            which = _silent(now) if process is None else sa.and_(m.host == process[0], m.pid == process[1])
            lost = self._mark_lost(c, run_id, now, which)
        _said(run_id, lost, None if process is None else f"its process {process[1]} died")
        return lost

    def _mark_lost(self, c: Connection, run_id: str, now: datetime, which: sa.ColumnElement[bool]) -> list[Member]:
        """Mark the run's open members that match ``which`` lost, and add the requests they
        held (their last heartbeat's in-flight count) to the run's counts. The run's row is
        locked (or, on SQLite, the store): a member is marked, and counted, once."""
        m = schema.run_members.c
        rows = c.execute(schema.run_members.update().where(m.run_id == run_id, m.finished_at.is_(None), which)
                         .values(finished_at=now, ended="lost").returning(*schema.run_members.c)).all()
        if held := sum(r.in_flight for r in rows):
            add_to_counts(c, schema.run_counts, [{"run_id": run_id, "of": Tally.NOT_COMPARED,
                                                  "outcome": NotCompared.LOST, "comparable": False, "pairs": held}])
        return sorted((_member(r, now) for r in rows), key=lambda x: (x.started_at, x.id))

    def _take_back(self, c: Connection, run_id: str, member: str, now: datetime, in_flight: int) -> Any:
        """Open ``member`` again if it was marked lost in a run that is still open: it beats,
        so it was alive (silent while its store was out of reach), and counts the requests
        it held itself - they leave the run's lost ones. Its row as it was, if it did; None."""
        m = schema.run_members.c
        self._lock(c, run_id)
        where = (m.run_id == run_id, m.member == member, m.ended == "lost")
        row = c.execute(schema.run_members.select().where(*where)).one_or_none()
        if row is None or not self._is_open(c, run_id):
            return None
        c.execute(schema.run_members.update().where(*where)
                  .values(finished_at=None, ended=None, heartbeat_at=now, in_flight=in_flight))
        if row.in_flight:
            add_to_counts(c, schema.run_counts, [{"run_id": run_id, "of": Tally.NOT_COMPARED,
                                                  "outcome": NotCompared.LOST, "comparable": False,
                                                  "pairs": -row.in_flight}])
            t = schema.run_counts.c    # (none lost after all: no row, rather than a row of 0)
            c.execute(schema.run_counts.delete().where(t.run_id == run_id, t.of == Tally.NOT_COMPARED,
                                                       t.outcome == NotCompared.LOST, t.pairs == 0))
        return row

    def _is_open(self, c: Connection, run_id: str) -> bool:
        row = c.execute(sa.select(schema.runs.c.finished_at).where(schema.runs.c.id == run_id)).one_or_none()
        return row is not None and row.finished_at is None

    def _members(self, c: Connection, run_id: str, now: datetime) -> list[Member]:
        m = schema.run_members.c
        rows = c.execute(schema.run_members.select().where(m.run_id == run_id).order_by(m.started_at, m.member))
        return [_member(r, now) for r in rows]

    def _lock(self, c: Connection, run_id: str) -> None:
        # SQLite: the transaction's BEGIN IMMEDIATE already holds the only write lock
        if self._postgresql:
            c.execute(sa.select(schema.runs.c.id).where(schema.runs.c.id == run_id).with_for_update())

    def _now(self, c: Connection) -> datetime:
        if self._postgresql:   # the clock now, not at the transaction's start (now()): it may have waited on a lock
            return _aware(c.execute(sa.select(sa.func.clock_timestamp())).scalar_one())
        return datetime.now(UTC)

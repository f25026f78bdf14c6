"""Serve runs shared by several processes: joining, heartbeats, leaving, closing.

Every ``shadowdiff serve`` process (each uvicorn worker, each replica) is a *member*
of one run. Processes given the same deployment name and the same settings join the
one open run of that name (``--workers N`` names one for its workers), so a report
sees every pair the deployment compared. At most one run per (name, settings digest)
is open: a partial unique index on the open runs, so two processes creating it at once
end with one run (the loser of the insert selects the winner's). A deployment whose
settings change (a rolling update to another shadow model) starts a run of its own:
pairs compared under other settings are never pooled.

A member beats its heart every ``HEARTBEAT`` seconds and marks itself finished when
it stops; the run finishes when the last live member leaves. Join, leave and close
lock the run's row (``FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE``
serialises every writer), so a member joining as the last one leaves either joins a
run that stays open or, if the run finished first, starts a new one — it is never
added to a finished run. A member not heard from for ``STALE_AFTER`` seconds is taken
for dead (``kill -9``, out of memory, a node gone): it no longer keeps the run open
when the others stop, and ``shadowdiff close`` closes the run only when every member
is finished or silent. A run closed under its members (``close --force``) takes no
more pairs or counts (the store refuses them: ``RunFinished``), so its report never
changes afterwards; a member joins a new run as soon as its writer or its heartbeat
finds out (``proxy.membership``).

Times are the database's clock on PostgreSQL (replicas on several hosts compare
heartbeats against one clock), the local clock on SQLite (one host).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from shadowdiff.errors import ShadowdiffError
from shadowdiff.store import Store, schema

HEARTBEAT = 10.0                    # seconds between a member's heartbeats
STALE_AFTER = 3 * HEARTBEAT         # a member silent this long is taken for dead
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
    ended: str | None               # stopped, lost (found silent) or forced (close --force)
    silent: float                   # seconds since its last heartbeat, when read

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
    parts += [f"{lost} lost (killed: their pairs in flight then are missing)"] if lost else []
    incomplete = sum(m.ended == "incomplete" for m in members)
    parts += [f"{incomplete} stopped with pairs the store had not taken (dropped)"] if incomplete else []
    return ", ".join(parts)


def _proxies(n: int) -> str:
    return f"{n} prox{'y' if n == 1 else 'ies'}"


def _aware(value: datetime) -> datetime:
    # SQLite hands back naive datetimes; every time stored is UTC
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


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

    def heartbeat(self, run_id: str, member: str) -> bool:
        """Note that ``member`` is alive; False if it was closed meanwhile (``close``)."""
        m = schema.run_members.c
        with self.engine.begin() as c:
            now = self._now(c)
            updated = c.execute(schema.run_members.update()
                                .where(m.run_id == run_id, m.member == member, m.finished_at.is_(None))
                                .values(heartbeat_at=now))
        return updated.rowcount == 1

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
            self._finish(c, run_id, now, forced=False)
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
            self._finish(c, run_id, now, forced=force)
            closed = {x.id for x in members if x.finished_at is None}
            return [x for x in self._members(c, run_id, now) if x.id in closed]

    def members(self, run_id: str) -> list[Member]:
        with self.engine.connect() as c:
            return self._members(c, run_id, self._now(c))

    def _finish(self, c: Connection, run_id: str, now: datetime, *, forced: bool) -> None:
        """Finish the run and its open members: silent ones as lost, live ones (``forced`` only) as forced."""
        m = schema.run_members.c
        is_open = (m.run_id == run_id, m.finished_at.is_(None))
        silent = m.heartbeat_at < now - timedelta(seconds=STALE_AFTER)
        c.execute(schema.run_members.update().where(*is_open, silent).values(finished_at=now, ended="lost"))
        if forced:
            c.execute(schema.run_members.update().where(*is_open).values(finished_at=now, ended="forced"))
        c.execute(schema.runs.update().where(schema.runs.c.id == run_id, schema.runs.c.finished_at.is_(None))
                  .values(finished_at=now))

    def _members(self, c: Connection, run_id: str, now: datetime) -> list[Member]:
        m = schema.run_members.c
        rows = c.execute(schema.run_members.select().where(m.run_id == run_id).order_by(m.started_at, m.member))
        return [Member(r.member, r.host, r.pid, _aware(r.started_at),
                       None if r.finished_at is None else _aware(r.finished_at), r.ended,
                       (now - _aware(r.heartbeat_at)).total_seconds()) for r in rows]

    def _lock(self, c: Connection, run_id: str) -> None:
        # SQLite: the transaction's BEGIN IMMEDIATE already holds the only write lock
        if self._postgresql:
            c.execute(sa.select(schema.runs.c.id).where(schema.runs.c.id == run_id).with_for_update())

    def _now(self, c: Connection) -> datetime:
        if self._postgresql:   # the clock now, not at the transaction's start (now()): it may have waited on a lock
            return _aware(c.execute(sa.select(sa.func.clock_timestamp())).scalar_one())
        return datetime.now(UTC)

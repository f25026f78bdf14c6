"""Retention: deleting the old pairs of serve runs (``shadowdiff prune``, ``serve --retain``).

A proxy stores ~1.5-2 KB per pair and nothing else ever deletes one. What
a prune deletes: the pairs of *serve* runs created before the cutoff, with their
answers (``ON DELETE CASCADE``). What it never deletes:

- a pair with a review (a person's verdict is the evidence a report decides on), or
  one a reviewer holds (claimed in the review queue, the claim not expired);
- runs, and their outcome counts (``run_counts``): a serve run's report takes its
  outcome mix, its rates and the evidence a PASS needs from those, not from its pairs;
- the pairs of replay and compare runs: their verdict is computed from their pairs,
  and an open replay's ``--resume`` relies on them (nor serve runs written before
  runs had counts, whose report is all in their pairs).

Each pair deleted is counted in ``pruned`` (run, outcome, comparable), in the same
transaction: the acceptance verdict counts a pair that needed a verdict and was
deleted without one as unreviewed, so a prune never changes a run's decision.

Deleting ``BATCH`` pairs per transaction keeps a prune from holding the store for
long: on SQLite every writer waits for the batch in progress (``BEGIN IMMEDIATE``), and
gets its turn in a pause between two batches; on PostgreSQL nobody waits: the
pairs are locked as they are chosen, and those someone else holds (a reviewer's
verdict being written, another process pruning) are skipped (``FOR UPDATE SKIP
LOCKED``). Several prunes at once are harmless: a pair is deleted and counted once.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from shadowdiff.errors import ConfigError, ShadowdiffError
from shadowdiff.store import schema
from shadowdiff.store.store import Store, add_to_counts

BATCH = 5_000            # pairs per transaction: the longest a concurrent writer waits (bench/prune_cost.py)
# Between two batches on SQLite: longer than the longest sleep of SQLite's busy handler
# (100 ms), so that a writer waiting for the lock gets it rather than the next batch.
SQLITE_PAUSE = 0.15
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}
_LONGEST = 100 * 365 * 86_400     # past a century, a datetime overflows soon after: refused


def parse_duration(text: str, flag: str = "--older-than") -> float:
    """Seconds in a duration such as ``7d``, ``36h``, ``90m``, ``1d12h`` (units s, m, h,
    d, w); ``ConfigError`` for anything else, zero or negative."""
    spec = text.strip().lower()
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhdw])", spec)
    if not parts or "".join(n + u for n, u in parts) != spec:
        sign = " (a negative age selects nothing)" if spec.startswith("-") else ""
        raise ConfigError(f"{flag} takes a duration such as 7d, 36h, 90m or 1d12h (units s, m, h, d, w), "
                          f"got {text!r}{sign}")
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ConfigError(f"{flag} must be longer than zero, got {text!r}: that would delete every pair")
    if seconds > _LONGEST:
        raise ConfigError(f"{flag} {text!r} is longer than a century")
    return seconds


@dataclass(frozen=True)
class Scope:
    """Which serve runs a prune touches (by default every one in the store)."""

    run_id: str | None = None         # only this run
    deployment: str | None = None     # only the runs of this deployment name
    unnamed: bool = False             # only runs without a name (proxies started without --deployment)


@dataclass
class Pruned:
    """What a prune deleted (or, dry, would delete) and kept, per run id."""

    cutoff: datetime
    dry_run: bool
    deleted: Counter[str] = field(default_factory=Counter)
    kept_reviewed: Counter[str] = field(default_factory=Counter)
    kept_claimed: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    longest_batch: float = 0.0        # seconds: the longest a concurrent SQLite writer waited
    stopped: bool = False             # asked to stop before it was done

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


def _serve_runs(scope: Scope) -> sa.Select[Any]:
    r = schema.runs.c
    query = sa.select(r.id).where(r.kind == "serve",
                                  sa.exists().where(schema.run_counts.c.run_id == r.id))
    if scope.run_id is not None:
        query = query.where(r.id == scope.run_id)
    if scope.deployment is not None:
        query = query.where(r.name == scope.deployment)
    elif scope.unnamed:
        query = query.where(r.name.is_(None))
    return query


def _check_run(store: Store, run_id: str) -> None:
    run = store.run(run_id)   # ConfigError when there is none
    if run.kind != "serve":
        raise ConfigError(f"run {run_id} is a {run.kind} run: only serve runs are pruned (a {run.kind}'s verdict "
                          "is computed from its pairs); delete its store (its --out directory) when done with it")
    with store.engine.connect() as c:
        if c.execute(sa.select(schema.run_counts.c.run_id).where(schema.run_counts.c.run_id == run_id)
                     .limit(1)).first() is None:
            raise ConfigError(f"run {run_id} has no outcome counts (written before shadowdiff counted them, or "
                              "it compared nothing): its report is all in its pairs, so it is not pruned")


def prune(store: Store, older_than: float, scope: Scope = Scope(), *, dry_run: bool = False,
          batch: int = BATCH, stop: threading.Event | None = None, count_kept: bool = True) -> Pruned:
    """Delete the pairs of ``scope``'s serve runs created more than ``older_than``
    seconds ago, but for reviewed and claimed ones (see the module docstring).
    ``stop`` is checked between batches. Blocking."""
    if scope.run_id is not None:
        _check_run(store, scope.run_id)
    now = datetime.now(UTC)
    result = Pruned(cutoff=now - timedelta(seconds=older_than), dry_run=dry_run)
    p, r = schema.pairs.c, schema.reviews.c
    old = (p.created_at < result.cutoff, p.run_id.in_(_serve_runs(scope).scalar_subquery()))
    reviewed = sa.exists().where(r.pair_id == p.id)
    claimed = p.claimed_until >= now
    free = (~reviewed, sa.or_(p.claimed_until.is_(None), ~claimed))
    if dry_run:
        with store.engine.connect() as c:
            result.deleted.update(_per_run(c, *old, *free))
    else:
        with store.engine.connect() as c:
            run_ids = c.execute(_serve_runs(scope)).scalars().all()
        for run_id in run_ids:   # a run at a time: its pairs by age are one index's range
            if not _delete(store, result, (p.run_id == run_id, p.created_at < result.cutoff), free, batch, stop):
                break
    if count_kept:
        with store.engine.connect() as c:
            result.kept_reviewed.update(_per_run(c, *old, reviewed))
            result.kept_claimed.update(_per_run(c, *old, ~reviewed, claimed))
    return result


def _per_run(c: Connection, *where: Any) -> dict[str, int]:
    p = schema.pairs.c
    return {row.run_id: int(row.n) for row in
            c.execute(sa.select(p.run_id, sa.func.count().label("n")).where(*where).group_by(p.run_id))}


def _delete(store: Store, result: Pruned, old: tuple[Any, ...], free: tuple[Any, ...], batch: int,
            stop: threading.Event | None) -> bool:
    """Delete one run's old pairs, a batch per transaction; False when ``stop`` came first."""
    p = schema.pairs.c
    # oldest first, by (created_at, id): the range of the index (run_id, created_at, id),
    # each batch after the last
    choose = sa.select(p.id, p.created_at).where(*old, *free).order_by(p.created_at, p.id).limit(batch)
    if store.dialect == "postgresql":
        choose = choose.with_for_update(of=schema.pairs, skip_locked=True)
    after: tuple[datetime, int] | None = None
    while True:
        if stop is not None and stop.is_set():
            result.stopped = True
            return False
        started = time.monotonic()
        with store.engine.begin() as c:
            query = choose if after is None else choose.where(sa.tuple_(p.created_at, p.id) > sa.tuple_(
                sa.literal(after[0], p.created_at.type), sa.literal(after[1])))
            rows = c.execute(query).all()
            if not rows:
                return True
            after = (rows[-1].created_at, rows[-1].id)
            # checked again (on PostgreSQL in a later snapshot, now that the rows are
            # locked): a verdict written since the choice keeps its pair
            gone = c.execute(schema.pairs.delete().where(p.id.in_([row.id for row in rows]), *free)
                             .returning(p.run_id, p.outcome, p.comparable)).all()
            tally = Counter((g.run_id, g.outcome, bool(g.comparable)) for g in gone)
            if tally:
                add_to_counts(c, schema.pruned, [
                    {"run_id": run_id, "outcome": outcome, "comparable": comparable, "pairs": n}
                    for (run_id, outcome, comparable), n in sorted(tally.items())])
        result.batches += 1
        result.longest_batch = max(result.longest_batch, time.monotonic() - started)
        result.deleted.update(g.run_id for g in gone)
        if len(rows) < batch:
            return True
        if store.dialect == "sqlite":
            (stop or threading.Event()).wait(SQLITE_PAUSE)


def pruned_counts(store: Store, run_id: str) -> dict[tuple[str, bool], int]:
    """The run's pairs deleted by retention, by (outcome, comparable); none were reviewed."""
    t = schema.pruned.c
    with store.engine.connect() as c:
        rows = c.execute(sa.select(t.outcome, t.comparable, t.pairs).where(t.run_id == run_id)).all()
    return {(row.outcome, bool(row.comparable)): int(row.pairs) for row in rows}


def vacuum(store: Store) -> None:
    """Give the space freed back: SQLite's ``VACUUM`` (the file shrinks; it rewrites the
    whole database, holding its write lock meanwhile), PostgreSQL's plain ``VACUUM`` of
    the tables a prune touches (the space becomes reusable at once rather than after
    autovacuum; the files shrink only where their end is free)."""
    try:
        if store.dialect == "sqlite":
            raw = store.engine.raw_connection()
            try:
                cursor = raw.cursor()
                cursor.execute("VACUUM")   # (autocommit: the connection begins no transaction by itself)
                # VACUUM writes the new database through the write-ahead log: empty it into the file
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                cursor.close()
            finally:
                raw.close()
            return
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.exec_driver_sql("VACUUM (ANALYZE) pairs, answers, reviews")
    except OperationalError as exc:
        raise ShadowdiffError(f"the pairs were deleted, but VACUUM failed ({str(exc.orig).strip()}): the store is "
                              "busy; run `shadowdiff prune` with --vacuum again when it is quieter") from exc

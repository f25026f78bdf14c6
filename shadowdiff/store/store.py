"""The ``Store``: runs, pairs and answers, behind a small synchronous API.

Writes are synchronous, and a pair's row and answers are committed together (a batch
of pairs shares a transaction), so a pair is in the store whole or not at all: a
process killed at any moment loses at most the pairs still in flight, and
``(run_id, key)`` is unique, so nothing is stored twice. Nothing is added to a
finished run (``RunFinished``): its verdict, once reported, stays. Async callers run these
methods in a thread (``asyncio.to_thread``) or through ``writer.PairWriter``. Reads
that cover a whole run page by key or let the database aggregate, so their memory
does not grow with the run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DatabaseError, IntegrityError

from shadowdiff.answers.records import Answer, Pair
from shadowdiff.errors import ConfigError, RunFinished
from shadowdiff.store import planning, schema, speed
from shadowdiff.store.engine import STORE_FILE, limit_statements, migrate, schema_revision, store_engine
from shadowdiff.store.order import in_log_order, queue_order, queue_place
from shadowdiff.store.rows import Run, StoredPair, answer_from_row, answer_row, pair_row, run_from_row
from shadowdiff.vocabulary import Outcome, Side


class Store:
    """Runs, pairs and answers, behind a small synchronous API."""

    def __init__(self, engine: Engine, location: str | Path | None = None, *, create: bool = True) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        # where it is, as a command line would name it again (a database URL without its password)
        # (a store's file as its directory, which is what replay's --out and report take)
        self.shown = (engine.url.render_as_string(hide_password=True) if location is None or "://" in str(location)
                      else str(Path(location).parent) if Path(location).name == STORE_FILE else str(location))
        migrate(engine, location or str(engine.url), create)

    @classmethod
    def open(cls, location: str | Path, *, create: bool = True, timeout: float | None = None) -> Store:
        """Open (migrating it) or, with ``create``, make the store at ``location``: a
        directory, a file or a database URL (``shadowdiff.store.engine``).

        With ``timeout`` (the proxy's ``--store-timeout``), no database call waits longer
        than about that many seconds: connecting, waiting for a pooled connection, a
        statement or a lock (PostgreSQL), a locked file (SQLite's busy timeout). The
        migration on open is not bounded (a large store's may take longer)."""
        engine = store_engine(location, create=create, timeout=timeout)
        try:
            store = cls(engine, location, create=create)
            if timeout is not None:
                limit_statements(engine, timeout)   # after the migration
            return store
        except ConfigError:
            engine.dispose()
            raise
        except DatabaseError as exc:   # unreachable, refused, or a file that is not a database
            engine.dispose()
            if "not a database" in str(exc.orig):
                raise ConfigError(f"{location} is not a shadowdiff store: it is not a SQLite database") from exc
            raise ConfigError(f"cannot open store {location}: {exc.orig}") from exc

    @classmethod
    def open_existing(cls, location: str | Path) -> Store:
        """Open a store that must already exist (reports, review): a typo or an empty
        directory is an error, never a new store."""
        return cls.open(location, create=False)

    def secret(self, name: str) -> str:
        """A secret the migrations made for this store (``blind_key``)."""
        with self.engine.connect() as c:
            value = c.execute(sa.select(schema.secrets.c.value).where(schema.secrets.c.name == name)).scalar_one()
        return str(value)

    def revision(self) -> str | None:
        return schema_revision(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    # -- runs ----------------------------------------------------------------------

    def create_run(self, kind: str, settings: Mapping[str, Any]) -> str:
        run_id = uuid.uuid4().hex
        with self.engine.begin() as c:
            c.execute(schema.runs.insert().values(
                id=run_id, kind=kind, created_at=datetime.now(UTC), settings=dict(settings)))
        return run_id

    def set_run_setting(self, run_id: str, key: str, value: Any) -> None:
        """Record one more setting with a run (replay's gates, given again on --resume),
        the others left as they are; read and written in one transaction."""
        with self.engine.begin() as c:
            current = c.execute(sa.select(schema.runs.c.settings).where(schema.runs.c.id == run_id)).scalar_one()
            c.execute(schema.runs.update().where(schema.runs.c.id == run_id)
                      .values(settings={**dict(current), key: value}))

    def finish_run(self, run_id: str, finished: bool = True) -> None:
        """Mark a run finished (its verdict can then PASS), or open again (a --resume)."""
        with self.engine.begin() as c:
            c.execute(schema.runs.update().where(schema.runs.c.id == run_id)
                      .values(finished_at=datetime.now(UTC) if finished else None))
        if finished:   # its bulk writes are done: its report plans from statistics that count them
            self.refresh_statistics()

    def run(self, run_id: str) -> Run:
        """The run ``run_id``, or the one run whose id begins with it (the reports show the first
        12 characters, as git shows a commit's)."""
        with self.engine.connect() as c:
            row = c.execute(schema.runs.select().where(schema.runs.c.id == run_id)).one_or_none()
            if row is None and len(run_id) >= 4 and all(ch in "0123456789abcdef" for ch in run_id):
                rows = c.execute(schema.runs.select().where(schema.runs.c.id.startswith(run_id)).limit(2)).all()
                if len(rows) > 1:
                    raise ConfigError(f"more than one run in this store begins with {run_id}: give more of its id")
                row = rows[0] if rows else None
        if row is None:
            raise ConfigError(f"no run {run_id} in this store")
        return run_from_row(row)

    def latest_run(self, kind: str | None = None) -> Run | None:
        query = schema.runs.select().order_by(schema.runs.c.created_at.desc()).limit(1)
        if kind is not None:
            query = query.where(schema.runs.c.kind == kind)
        with self.engine.connect() as c:
            row = c.execute(query).one_or_none()
        return None if row is None else run_from_row(row)

    def runs(self) -> list[Run]:
        with self.engine.connect() as c:
            rows = c.execute(schema.runs.select().order_by(schema.runs.c.created_at)).all()
        return [run_from_row(r) for r in rows]

    # -- pairs ---------------------------------------------------------------------

    def has_pair(self, run_id: str, key: str) -> bool:
        return self.pair_line(run_id, key) is not None

    def pair_line(self, run_id: str, key: str) -> int | None:
        """The log line (``seq``) of the run's pair ``key``, None if it has none."""
        query = sa.select(schema.pairs.c.seq).where(schema.pairs.c.run_id == run_id, schema.pairs.c.key == key)
        with self.engine.connect() as c:
            return c.execute(query).scalar_one_or_none()

    def add_pair(self, run_id: str, pair: Pair) -> bool:
        """Store a pair and its answers in one transaction; False if its key is taken."""
        return not self.add_pairs(run_id, [pair])

    def add_pairs(self, run_id: str, batch: list[Pair]) -> list[Pair]:
        """Store pairs with their answers, all in one transaction when the keys are free.

        Returns the pairs that were not stored because their key was taken. A batch
        with such a pair falls back to one transaction per pair, so the others land.
        ``RunFinished`` (nothing stored) if the run is finished.
        """
        if not batch:
            return []
        now = datetime.now(UTC)
        try:
            with self.engine.begin() as c:
                self._check_open(c, run_id)
                ids = c.execute(schema.pairs.insert().returning(schema.pairs.c.id, sort_by_parameter_order=True),
                                [pair_row(run_id, p, now) for p in batch]).scalars().all()
                c.execute(schema.answers.insert(),
                          [answer_row(pair_id, a) for pair_id, p in zip(ids, batch, strict=True)
                           for a in p.answers.values()])
            return []
        except IntegrityError:
            if len(batch) == 1:
                return batch
        return [p for p in batch if self.add_pairs(run_id, [p])]

    def add_counts(self, run_id: str, counts: Mapping[tuple[str, str, bool], int], *, member: str | None = None,
                   released: int = 0) -> None:
        """Add to the run's outcome counts, keyed by (``pairs`` or ``noise``, outcome,
        comparable); several processes may add to one run at once. ``RunFinished``
        (nothing added) if the run is finished.

        ``released``: how many of ``member``'s requests these counts are the last of. They
        leave its heartbeat's ``in_flight`` in the same transaction: a member killed before
        its next heartbeat is then never charged as lost with requests its run has counted."""
        counts = {key: n for key, n in counts.items() if n}
        if not counts and not (member is not None and released):
            return
        with self.engine.begin() as c:
            self._check_open(c, run_id)
            if counts:
                add_to_counts(c, schema.run_counts,
                              [{"run_id": run_id, "of": of, "outcome": outcome, "comparable": comparable, "pairs": n}
                               for (of, outcome, comparable), n in sorted(counts.items())])
            if member is not None and released:
                m = schema.run_members.c
                c.execute(schema.run_members.update().where(m.run_id == run_id, m.member == member)
                          .values(in_flight=sa.case((m.in_flight > released, m.in_flight - released), else_=0)))

    def _check_open(self, c: Connection, run_id: str) -> None:
        """``RunFinished`` unless the run is open, checked in the writing transaction.

        On PostgreSQL the run's row is locked for share until the transaction ends:
        closing it (``FOR UPDATE``) waits for the writes under way, and a write waits
        for a close under way, then sees the run finished. SQLite's ``BEGIN IMMEDIATE``
        already serialises every writer."""
        query = sa.select(schema.runs.c.finished_at).where(schema.runs.c.id == run_id)
        if self.dialect == "postgresql":
            query = query.with_for_update(read=True)
        row = c.execute(query).one_or_none()
        if row is not None and row.finished_at is not None:   # a missing run fails on the foreign key
            raise RunFinished(run_id)

    def counts(self, run_id: str) -> dict[tuple[str, str, bool], int]:
        """The run's outcome counts (empty for a run that stored every pair it saw)."""
        t = schema.run_counts.c
        with self.engine.connect() as c:
            rows = c.execute(sa.select(t.of, t.outcome, t.comparable, t.pairs).where(t.run_id == run_id)).all()
        return {(r.of, r.outcome, bool(r.comparable)): int(r.pairs) for r in rows}

    def add_skipped(self, run_id: str, line: int, reason: str, *, once: bool = True) -> None:
        """Note a log line that made no pair, once: a --resume reads the log again.
        ``once=False`` for a run of two files (``compare``), whose line numbers repeat."""
        t = schema.skipped.c
        with self.engine.begin() as c:
            if not once or c.execute(sa.select(t.id).where(t.run_id == run_id, t.line == line)).first() is None:
                c.execute(schema.skipped.insert().values(run_id=run_id, line=line,
                                                         reason=reason.replace("\x00", "\ufffd")))

    def skipped(self, run_id: str) -> list[tuple[int, str]]:
        query = (sa.select(schema.skipped.c.line, schema.skipped.c.reason)
                 .where(schema.skipped.c.run_id == run_id).order_by(schema.skipped.c.line))
        with self.engine.connect() as c:
            return [(int(r.line), str(r.reason)) for r in c.execute(query)]

    def count_pairs(self, run_id: str) -> int:
        query = sa.select(sa.func.count()).select_from(schema.pairs).where(schema.pairs.c.run_id == run_id)
        with self.engine.connect() as c:
            return int(c.execute(query).scalar_one())

    def pairs(self, run_id: str, batch: int = 500) -> Iterator[StoredPair]:
        """The run's pairs in log order, with their answers, read in batches."""
        return in_log_order(self._with_answers, lambda pair: (pair["seq"], pair["id"]), run_id, batch)

    def pairs_by_priority(self, run_id: str, batch: int = 200, *, failed: bool | None = None) -> Iterator[StoredPair]:
        """The run's non-identical pairs in the review queue's order (``queue_order``):
        highest review priority first, and within a priority the worst first: errors,
        then by similarity, lowest first, then log order. ``failed``: only the
        failed pairs (True), only the changed ones (False), or both (None).

        Paged by key (the last row's sort key), not by offset, so that a page never
        re-reads the rows before it (each page is still a scan of the run's changed
        pairs, since no index covers the computed order).
        """
        p = schema.pairs.c
        order = queue_order()
        query = schema.pairs.select().where(p.run_id == run_id, p.outcome != Outcome.IDENTICAL).order_by(*order)
        if failed is not None:
            query = query.where(p.outcome == Outcome.ERROR if failed else p.outcome != Outcome.ERROR)
        rows = self._with_answers(query.limit(batch))
        while rows:
            yield from rows
            rows = self._with_answers(query.where(sa.tuple_(*order) > queue_place(rows[-1].row)).limit(batch))

    def identical_pairs(self, run_id: str, limit: int) -> list[StoredPair]:
        """The run's first ``limit`` identical pairs in log order, with their answers (the
        report shows them on demand; they are in no review queue). Read on the log-order
        index, stopping at ``limit``: no scan of the rest of the run."""
        p = schema.pairs.c
        return self._with_answers(schema.pairs.select().where(p.run_id == run_id, p.outcome == Outcome.IDENTICAL)
                                  .order_by(p.seq, p.id).limit(limit))

    def percentiles(self, run_id: str, side: Side, measure: str, ps: Sequence[float]) -> list[float | None]:
        """Nearest-rank percentiles of one measure of a side's answers (``ttft``,
        ``ttfat``, ``duration``, ``inter_token_latency`` or ``tokens_per_second``), over the
        answers that succeeded.

        The database sorts, so that a run of any size summarizes in constant memory.
        """
        return self.speed_percentiles(run_id, {measure: ps}, side).get(side, {}).get(measure, [None for _ in ps])

    def speed_percentiles(self, run_id: str, wanted: Mapping[str, Sequence[float]],
                          side: Side | None = None) -> speed.Percentiles:
        """``percentiles`` of several measures, for every side at once (or ``side``): by
        side, then measure (``speed.percentiles``). One read of the run's answers."""
        with self.engine.connect() as c:
            return speed.percentiles(c, run_id, wanted, side)

    def refresh_statistics(self) -> bool:
        """Bring the query planner's statistics up to date if they are missing or stale
        (``planning.refresh``); whether it analyzed. Never an error."""
        return planning.refresh(self.engine)

    def _with_answers(self, query: sa.Select[Any]) -> list[StoredPair]:
        with self.engine.connect() as c:
            rows = c.execute(query).all()
            if not rows:
                return []
            answer_rows = c.execute(
                schema.answers.select().where(schema.answers.c.pair_id.in_([r.id for r in rows]))).all()
        by_pair: dict[int, dict[Side, Answer]] = {}
        for a in answer_rows:
            by_pair.setdefault(a.pair_id, {})[Side(a.side)] = answer_from_row(a)
        return [StoredPair(row._asdict(), by_pair.get(row.id, {})) for row in rows]


def add_to_counts(c: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Add each row's ``pairs`` to the row of ``table`` with its primary key, made at 0
    if it is missing: several processes may add to one row at once."""
    insert = (postgresql.insert if c.dialect.name == "postgresql" else sqlite.insert)(table)
    upsert = insert.on_conflict_do_update(index_elements=[col.name for col in table.primary_key],
                                          set_={"pairs": table.c.pairs + insert.excluded.pairs})
    c.execute(upsert, rows)

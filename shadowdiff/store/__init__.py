"""The store: runs, pairs and answers, in SQLite (a file) or PostgreSQL.

``Store.open`` takes a directory (its ``shadowdiff.sqlite`` is used), a file path,
or a database URL (``sqlite:///…``, ``postgresql://…``). A path that does not exist
yet is a directory unless it ends in a database file's suffix (``.sqlite``,
``.sqlite3``, ``.db``): ``--out results.v2`` is a directory.
``Store.open_existing``, for the commands that only read a store, never creates one.
The schema is versioned with Alembic migrations that run on open (under an advisory
lock on PostgreSQL, so that several proxy replicas starting at once migrate once).

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

import functools
import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DatabaseError, IntegrityError

from shadowdiff.answers.records import Answer, Choice, Pair
from shadowdiff.errors import ConfigError, RunFinished
from shadowdiff.statistics.percentile import nearest_rank
from shadowdiff.store import schema
from shadowdiff.vocabulary import Outcome, Side

STORE_FILE = "shadowdiff.sqlite"
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_SQLITE_HEADER = b"SQLite format 3\x00"   # the first 16 bytes of every SQLite database file
_MIGRATION_LOCK = 7_361_942  # any constant: the advisory lock id used while migrating


def _inter_token_latency() -> sa.ColumnElement[Any]:
    """``Answer.inter_token_latency`` as SQL (NULL where the property is None)."""
    a = schema.answers.c
    decode = a.ttlt - a.ttft
    # per choice: stores written before 0006 have no count, and held one choice
    tokens = sa.cast(a.completion_tokens, sa.Float) / sa.func.coalesce(a.choice_count, 1)
    return sa.case((sa.and_(a.completion_tokens > 0, tokens > 1, decode > 0), decode / (tokens - 1)),
                   else_=sa.null())


def _tokens_per_second() -> sa.ColumnElement[Any]:
    """``Answer.tokens_per_second`` as SQL: one over the inter-token latency."""
    return 1.0 / _inter_token_latency()


# Within a review priority, the worst first: errors, then the most different (queue_order).
_WORST_FIRST = {Outcome.ERROR: 0, Outcome.DIVERGENT: 1, Outcome.NEAR: 2, Outcome.EQUIVALENT: 3}


def queue_order() -> tuple[sa.ColumnElement[Any], ...]:
    """The review queue's order, as SQL sort keys, all ascending: the highest review
    priority first (shadowdiff.triage.signals), and within a priority the worst first (errors,
    then divergent, near, equivalent; then the lowest similarity, none counting as -1),
    then log order. The report's list of pairs, the queue page, "next" and a pair page's
    previous/next all sort by this one tuple, so that they cannot disagree."""
    p = schema.pairs.c
    rank = sa.case(_WORST_FIRST, value=p.outcome, else_=len(_WORST_FIRST))
    return (-p.priority, rank, sa.func.coalesce(p.similarity, -1.0), p.seq, p.id)


def queue_place(row: Mapping[str, Any]) -> sa.ColumnElement[Any]:
    """A pair's place in ``queue_order`` (from its row's priority, outcome, similarity,
    seq and id), as a tuple that ``sa.tuple_(*queue_order())`` compares with: where a
    keyset page resumes, or what a pair's neighbours come before or after."""
    key = (-row["priority"], _WORST_FIRST.get(row["outcome"], len(_WORST_FIRST)),
           -1.0 if row["similarity"] is None else row["similarity"], row["seq"], row["id"])
    return sa.tuple_(*map(sa.literal, key))


_MEASURES: dict[str, sa.ColumnElement[Any]] = {
    "ttft": schema.answers.c.ttft, "ttfat": schema.answers.c.ttfat, "duration": schema.answers.c.duration,
    "inter_token_latency": _inter_token_latency(), "tokens_per_second": _tokens_per_second(),
}


@dataclass(frozen=True)
class Run:
    id: str
    kind: str
    created_at: datetime
    finished_at: datetime | None
    settings: dict[str, Any]
    name: str | None = None      # a serve run's deployment: the processes that share it (see store.members)


def database_url(location: str | Path, *, create: bool = True) -> str:
    """A SQLAlchemy URL for a directory, a file or a URL (making the directories a new
    SQLite store needs, when ``create``)."""
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    if "://" in text:
        return text
    path = sqlite_path(Path(text))
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def sqlite_path(location: Path) -> Path:
    """The database file a path names: itself if it is a file or will be one (a database
    suffix), else the ``shadowdiff.sqlite`` in that directory."""
    if location.is_file() or (not location.is_dir() and location.suffix in SQLITE_SUFFIXES):
        return location
    return location / STORE_FILE


def _check_existing(location: str | Path) -> None:
    """A ``ConfigError`` unless a SQLite store is already at ``location`` (URLs are checked on open)."""
    if "://" in str(location):
        return
    given = Path(str(location))
    if not given.exists():
        raise ConfigError(f"no store at {location}: give a replay's --out directory, a .sqlite file or a URL")
    path = sqlite_path(given)
    if not path.exists():
        raise ConfigError(f"no shadowdiff store in {location} (run replay, serve or compare first)")
    with path.open("rb") as f:
        if f.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
            raise ConfigError(f"{location} is not a shadowdiff store: it is not a SQLite database")


def _limit_postgresql(timeout: float) -> Any:
    """A ``connect`` listener bounding every statement of a session (a write stuck behind
    a ``LOCK TABLE``, a read of a store under load) by ``timeout`` seconds."""
    ms = max(1, round(timeout * 1000))

    def limit(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"SET statement_timeout = {ms}")
        cursor.execute(f"SET lock_timeout = {ms}")
        cursor.close()
        dbapi_connection.commit()   # (psycopg opened a transaction for the SETs)
    return limit


def _postgresql_connect_args(timeout: float) -> dict[str, Any]:
    """libpq's bounds on connecting and on a peer that vanished (no RST: a host that
    went down, a partition) - without them a call waits for the kernel, many minutes."""
    return {"connect_timeout": max(2, round(timeout)), "keepalives": 1, "keepalives_idle": 5,
            "keepalives_interval": 2, "keepalives_count": 3, "tcp_user_timeout": max(1, round(timeout * 1000))}


class _RepeatedDriverWarning(logging.Filter):
    """Drops psycopg's "error ignored terminating <psycopg.Pipeline …>", logged when the
    server goes away inside a batched insert: the failure also reaches the caller as the
    exception the batch raised, and the writer says so once an outage, not once a batch."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("error ignored terminating")


_REPEATED_DRIVER_WARNING = _RepeatedDriverWarning()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, busy: int = 10_000) -> None:
    # Transactions are begun by us (below), not by the driver's implicit BEGIN.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    # WAL: readers (reports, the review UI) never block the writer; NORMAL sync is
    # durable against a killed process (not a power cut), at a fraction of the cost.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={busy}")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    # BEGIN IMMEDIATE takes the write lock up front. With a plain (deferred) BEGIN, a
    # transaction that reads and then writes - a claim, a migration - fails with
    # "database is locked" at once, whatever busy_timeout says, when another writer
    # got in between; IMMEDIATE makes it wait its turn instead.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _alembic_config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.files("shadowdiff.store") / "migrations"))
    config.attributes["connection"] = connection
    return config


class Store:
    """Runs, pairs and answers, behind a small synchronous API."""

    def __init__(self, engine: Engine, location: str | Path | None = None, *, create: bool = True) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        self._migrate(location or str(engine.url), create)

    @classmethod
    def open(cls, location: str | Path, *, create: bool = True, timeout: float | None = None) -> Store:
        """Open (migrating it) or, with ``create``, make the store at ``location``.

        With ``timeout`` (the proxy's ``--store-timeout``), no database call waits longer
        than about that many seconds: connecting, waiting for a pooled connection, a
        statement or a lock (PostgreSQL), a locked file (SQLite's busy timeout). The
        migration on open is not bounded (a large store's may take longer)."""
        try:
            if not create:
                _check_existing(location)
            url = database_url(location, create=create)
        except OSError as exc:
            raise ConfigError(f"cannot use store {location}: {exc.strerror or exc}") from exc
        options: dict[str, Any] = {}
        if timeout is not None and url.startswith("postgresql"):
            options = {"connect_args": _postgresql_connect_args(timeout), "pool_timeout": timeout}
        elif timeout is not None:
            options = {"connect_args": {"timeout": timeout}}
        try:
            engine = sa.create_engine(url, future=True, pool_pre_ping=True, **options)
        except (sa.exc.ArgumentError, ImportError) as exc:
            raise ConfigError(f"cannot use store {location}: {exc}") from exc
        if engine.dialect.name == "postgresql":
            logging.getLogger("psycopg").addFilter(_REPEATED_DRIVER_WARNING)   # (added once: filters are a set)
        if engine.dialect.name == "sqlite":
            busy = 10_000 if timeout is None else max(1, round(timeout * 1000))
            sa.event.listen(engine, "connect", functools.partial(_sqlite_pragmas, busy=busy))
            sa.event.listen(engine, "begin", _sqlite_begin)
        try:
            store = cls(engine, location, create=create)
            if timeout is not None and engine.dialect.name == "postgresql":
                # after the migration: from now on every session's statements are bounded
                engine.dispose()
                sa.event.listen(engine, "connect", _limit_postgresql(timeout))
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

    def _migrate(self, location: str | Path, create: bool) -> None:
        with self.engine.begin() as connection:
            if self.dialect == "postgresql":
                connection.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": _MIGRATION_LOCK})
            config = _alembic_config(connection)
            current = MigrationContext.configure(connection).get_current_revision()
            if current is None and sa.inspect(connection).get_table_names():
                # someone else's database: migrating would add shadowdiff's tables to it
                raise ConfigError(f"{location} is not a shadowdiff store: its database holds other tables")
            if current is None and not create:
                raise ConfigError(f"no shadowdiff store in {location} (run replay, serve or compare first)")
            known = {rev.revision for rev in ScriptDirectory.from_config(config).walk_revisions()}
            if current is not None and current not in known:
                raise ConfigError(
                    f"the store is at schema revision {current}, which this shadowdiff does not know: "
                    "it was written by a newer version")
            command.upgrade(config, "head")

    def secret(self, name: str) -> str:
        """A secret the migrations made for this store (``blind_key``)."""
        with self.engine.connect() as c:
            value = c.execute(sa.select(schema.secrets.c.value).where(schema.secrets.c.name == name)).scalar_one()
        return str(value)

    def revision(self) -> str | None:
        with self.engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

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

    def run(self, run_id: str) -> Run:
        with self.engine.connect() as c:
            row = c.execute(schema.runs.select().where(schema.runs.c.id == run_id)).one_or_none()
        if row is None:
            raise ConfigError(f"no run {run_id} in this store")
        return _run(row)

    def latest_run(self, kind: str | None = None) -> Run | None:
        query = schema.runs.select().order_by(schema.runs.c.created_at.desc()).limit(1)
        if kind is not None:
            query = query.where(schema.runs.c.kind == kind)
        with self.engine.connect() as c:
            row = c.execute(query).one_or_none()
        return None if row is None else _run(row)

    def runs(self) -> list[Run]:
        with self.engine.connect() as c:
            rows = c.execute(schema.runs.select().order_by(schema.runs.c.created_at)).all()
        return [_run(r) for r in rows]

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
                                [_pair_row(run_id, p, now) for p in batch]).scalars().all()
                c.execute(schema.answers.insert(),
                          [_answer_row(pair_id, a) for pair_id, p in zip(ids, batch, strict=True)
                           for a in p.answers.values()])
            return []
        except IntegrityError:
            if len(batch) == 1:
                return batch
        return [p for p in batch if self.add_pairs(run_id, [p])]

    def add_counts(self, run_id: str, counts: Mapping[tuple[str, str, bool], int]) -> None:
        """Add to the run's outcome counts, keyed by (``pairs`` or ``noise``, outcome,
        comparable); several processes may add to one run at once. ``RunFinished``
        (nothing added) if the run is finished."""
        counts = {key: n for key, n in counts.items() if n}
        if not counts:
            return
        with self.engine.begin() as c:
            self._check_open(c, run_id)
            add_to_counts(c, schema.run_counts,
                          [{"run_id": run_id, "of": of, "outcome": outcome, "comparable": comparable, "pairs": n}
                           for (of, outcome, comparable), n in sorted(counts.items())])

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
        p = schema.pairs.c
        last = (-1, -1)
        while True:
            query = (schema.pairs.select().where(p.run_id == run_id, sa.tuple_(p.seq, p.id) > last)
                     .order_by(p.seq, p.id).limit(batch))
            rows = self._with_answers(query)
            if not rows:
                return
            yield from rows
            last = (rows[-1]["seq"], rows[-1]["id"])

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

    def percentiles(self, run_id: str, side: Side, measure: str, ps: Sequence[float]) -> list[float | None]:
        """Nearest-rank percentiles of one measure of a side's answers (``ttft``,
        ``ttfat``, ``duration``, ``inter_token_latency`` or ``tokens_per_second``), over the
        answers that succeeded.

        The database sorts, so that a run of any size summarizes in constant memory.
        """
        a, p = schema.answers.c, schema.pairs.c
        value = _MEASURES[measure]
        where = (p.run_id == run_id, a.side == side.value, a.error.is_(None), value.is_not(None))
        source = schema.answers.join(schema.pairs, a.pair_id == p.id)
        with self.engine.connect() as c:
            n = int(c.execute(sa.select(sa.func.count()).select_from(source).where(*where)).scalar_one())
            if not n:
                return [None for _ in ps]
            return [float(c.execute(sa.select(value).select_from(source).where(*where).order_by(value)
                                    .offset(nearest_rank(n, q)).limit(1))
                          .scalar_one()) for q in ps]

    def _with_answers(self, query: sa.Select[Any]) -> list[StoredPair]:
        with self.engine.connect() as c:
            rows = c.execute(query).all()
            if not rows:
                return []
            answer_rows = c.execute(
                schema.answers.select().where(schema.answers.c.pair_id.in_([r.id for r in rows]))).all()
        by_pair: dict[int, dict[Side, Answer]] = {}
        for a in answer_rows:
            by_pair.setdefault(a.pair_id, {})[Side(a.side)] = _answer(a)
        return [StoredPair(row._asdict(), by_pair.get(row.id, {})) for row in rows]


@dataclass(frozen=True)
class StoredPair:
    """A pair as read back: its columns, and its answers by side."""

    row: dict[str, Any]
    answers: dict[Side, Answer]

    def __getitem__(self, column: str) -> Any:
        return self.row[column]


def add_to_counts(c: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Add each row's ``pairs`` to the row of ``table`` with its primary key, made at 0
    if it is missing: several processes may add to one row at once."""
    insert = (postgresql.insert if c.dialect.name == "postgresql" else sqlite.insert)(table)
    upsert = insert.on_conflict_do_update(index_elements=[col.name for col in table.primary_key],
                                          set_={"pairs": table.c.pairs + insert.excluded.pairs})
    c.execute(upsert, rows)


def _run(row: Any) -> Run:
    return Run(row.id, row.kind, row.created_at, row.finished_at, dict(row.settings), row.name)


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _storable(table: sa.Table, row: dict[str, Any]) -> dict[str, Any]:
    """A row fitted to its table, as both backends would keep it: each NUL character as
    U+FFFD (PostgreSQL's text cannot hold NUL, and a model can write one), strings cut to
    their column's length (a client's 300-character category, a long request id) and
    integers held within 32 bits (a server's absurd token count). PostgreSQL refuses what
    does not fit, and one refused pair must not cost the pairs written beside it; SQLite
    would keep it as it came. The comparison has already seen the answer as it came."""
    fitted = {}
    for name, value in row.items():
        column_type = table.c[name].type
        if isinstance(value, str):
            value = value.replace("\x00", "\ufffd")
            length = getattr(column_type, "length", None)
            if length is not None and len(value) > length:
                value = value[:length]
        elif isinstance(value, int) and not isinstance(value, bool) and isinstance(column_type, sa.Integer):
            value = min(max(value, _INT_MIN), _INT_MAX)
        fitted[name] = value
    return fitted


def _pair_row(run_id: str, pair: Pair, now: datetime) -> dict[str, Any]:
    comparison, noise = pair.comparison, pair.noise
    return _storable(schema.pairs, {
        "run_id": run_id, "key": pair.key, "seq": pair.seq, "category": pair.category,
        "endpoint": pair.endpoint, "prompt": pair.prompt, "request": pair.request,
        "comparable": pair.comparable, "outcome": comparison.outcome.value,
        "similarity": comparison.similarity, "difflib_ratio": comparison.difflib_ratio,
        "first_char": comparison.first_char, "first_token": comparison.first_token,
        "length_ratio": comparison.length_ratio, "margin": pair.margin,
        "noise_outcome": noise.outcome.value if noise else None,
        "noise_similarity": noise.similarity if noise else None, "created_at": now,
        "signals": pair.signals, "suggested": pair.suggested, "priority": pair.priority,
        "score": pair.score, "noise_score": pair.noise_score,
        "token_agreement": (pair.score or {}).get("agreement"), "grade": pair.grade, "flip": pair.flip,
    })


def _answer_row(pair_id: int, a: Answer) -> dict[str, Any]:
    return _storable(schema.answers, {
        "pair_id": pair_id, "side": a.side.value, "model": a.model, "status": a.status, "error": a.error,
        "text": a.text, "finish_reason": a.finish_reason, "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.completion_tokens, "ttft": a.ttft, "ttfat": a.ttfat, "ttlt": a.ttlt,
        "duration": a.duration,
        "attempts": a.attempts, "tokens": a.tokens, "margins": a.margins, "tool_calls": a.tool_calls,
        "reasoning": a.reasoning, "refusal": a.refusal, "reasoning_tokens": a.reasoning_tokens,
        "other_choices": [asdict(c) for c in a.others] or None, "choice_count": len(a.choices),
        "token_source": a.token_source,
    })


def _answer(row: Any) -> Answer:
    return Answer(
        side=Side(row.side), model=row.model, text=row.text, finish_reason=row.finish_reason,
        prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens, ttft=row.ttft, ttfat=row.ttfat,
        ttlt=row.ttlt, duration=row.duration, status=row.status, error=row.error, attempts=row.attempts,
        tokens=row.tokens, margins=row.margins, tool_calls=row.tool_calls, reasoning=row.reasoning,
        refusal=row.refusal, reasoning_tokens=row.reasoning_tokens,
        others=tuple(Choice(**c) for c in row.other_choices or ()), token_source=row.token_source,
    )

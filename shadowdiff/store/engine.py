"""Where a store is and how it is opened: its URL, the SQLAlchemy engine and its
tuning for SQLite or PostgreSQL, and the Alembic migrations run on open.

A location is a directory (its ``shadowdiff.sqlite`` is used), a file path, or a
database URL (``sqlite:///…``, ``postgresql://…``). A path that does not exist yet is
a directory unless it ends in a database file's suffix (``.sqlite``, ``.sqlite3``,
``.db``): ``--out results.v2`` is a directory.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from shadowdiff.errors import ConfigError
from shadowdiff.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from alembic.config import Config

STORE_FILE = "shadowdiff.sqlite"
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_SQLITE_HEADER = b"SQLite format 3\x00"   # the first 16 bytes of every SQLite database file
_MIGRATION_LOCK = 7_361_942  # any constant: the advisory lock id used while migrating


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


def store_engine(location: str | Path, *, create: bool, timeout: float | None) -> Engine:
    """An engine for the store at ``location``, tuned for its database (see ``Store.open``
    for ``create`` and ``timeout``); nothing is connected yet."""
    try:
        if not create:
            _check_existing(location)
        url = database_url(location, create=create)
    except OSError as exc:
        raise ConfigError(f"cannot use store {location}: {exc.strerror or exc}") from exc
    try:
        engine = sa.create_engine(url, future=True, pool_pre_ping=True, **_engine_options(url, timeout))
    except (sa.exc.ArgumentError, ImportError) as exc:
        raise ConfigError(f"cannot use store {location}: {exc}") from exc
    if engine.dialect.name == "postgresql":
        logging.getLogger("psycopg").addFilter(_REPEATED_DRIVER_WARNING)   # (added once: filters are a set)
    if engine.dialect.name == "sqlite":
        busy = 10_000 if timeout is None else max(1, round(timeout * 1000))
        sa.event.listen(engine, "connect", functools.partial(_sqlite_pragmas, busy=busy))
        sa.event.listen(engine, "begin", _sqlite_begin)
    return engine


def _engine_options(url: str, timeout: float | None) -> dict[str, Any]:
    """``create_engine``'s bounds on waiting: connecting and a pooled connection
    (PostgreSQL), a locked file (SQLite's driver)."""
    if timeout is None:
        return {}
    if url.startswith("postgresql"):
        return {"connect_args": _postgresql_connect_args(timeout), "pool_timeout": timeout}
    return {"connect_args": {"timeout": timeout}}


def limit_statements(engine: Engine, timeout: float) -> None:
    """On PostgreSQL, bound every statement of the sessions opened from now on by
    ``timeout`` seconds (called after the migration, which is not bounded)."""
    if engine.dialect.name == "postgresql":
        engine.dispose()
        sa.event.listen(engine, "connect", _limit_postgresql(timeout))


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
    cursor.execute(f"PRAGMA busy_timeout={busy}")
    _wal(cursor, busy / 1000)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _wal(cursor: Any, wait: float) -> None:
    """WAL: readers (reports, the review UI) never block the writer; NORMAL sync is durable
    against a killed process (not a power cut), at a fraction of the cost.

    Turning a new database file to WAL takes an exclusive lock without the busy handler:
    of several processes opening a new store at once (``serve --workers N``'s first start),
    all but one could be refused at once with "database is locked". The switch is tried
    again, for as long as a locked file is waited for anyway."""
    deadline = time.monotonic() + wait
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _sqlite_begin(connection: Connection) -> None:
    # BEGIN IMMEDIATE takes the write lock up front. With a plain (deferred) BEGIN, a
    # transaction that reads and then writes - a claim, a migration - fails with
    # "database is locked" at once, whatever busy_timeout says, when another writer
    # got in between; IMMEDIATE makes it wait its turn instead.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def migrate(engine: Engine, location: str | Path, create: bool) -> None:
    """Bring the store's schema to the newest revision (under an advisory lock on
    PostgreSQL, so that several proxy replicas starting at once migrate once).

    A ``ConfigError`` for a database holding other tables, a store that is missing when
    not ``create``, or one at a revision newer than this shadowdiff knows."""
    if _at_newest(engine):
        return
    # (imported here: a store already at the newest revision, the rule, needs no Alembic)
    from alembic import command
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
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


def schema_revision(engine: Engine) -> str | None:
    """The store's schema revision (None before the first migration)."""
    from alembic.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _at_newest(engine: Engine) -> bool:
    """Whether the store is at the newest revision already, read without Alembic: importing
    it and reading its scripts was most of a command's start (0.3 s of CPU) for nothing."""
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table("alembic_version"):
            return False
        versions = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    return versions == [SCHEMA_VERSION]


def _alembic_config(connection: Connection) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(resources.files("shadowdiff.store") / "migrations"))
    config.attributes["connection"] = connection
    return config

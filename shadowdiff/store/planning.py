"""The query planner's statistics, kept current after bulk writes.

PostgreSQL plans from statistics that ANALYZE gathers (autovacuum runs it when it gets to
it); a store filled by a replay minutes ago may have none, and then the planner guesses
- on a run of 300,000 pairs, a plan 25 times slower than with them. ``refresh`` analyzes
the pairs and answers when their statistics are missing or behind the rows written since
(more than a tenth of the table). SQLite's planner needs none for the store's queries (its
indexes match them), but a table never analyzed is analyzed, on a bounded sample
(``analysis_limit``), so that its later plans have them too.

A refresh is never an error: a role that may read a store but not analyze it, or a
SQLite file that is read-only or locked, keeps the statistics it has.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from shadowdiff.store import schema

log = logging.getLogger(__name__)

# The tables a run's reads plan over: the rest are small, or read by key.
TABLES = (schema.pairs.name, schema.answers.name)
# Stale: rows written since the last ANALYZE beyond this share of the table (and this many).
STALE_SHARE = 0.1
STALE_ROWS = 1_000
# Rows of each index SQLite's ANALYZE reads (its estimates need no more).
SQLITE_SAMPLE = 1_000


def refresh(engine: Engine) -> bool:
    """Analyze the store's big tables if their statistics are missing or stale; whether it did."""
    try:
        if engine.dialect.name == "postgresql":
            return _refresh_postgresql(engine)
        return _refresh_sqlite(engine)
    except DBAPIError as exc:
        log.debug("the store's statistics were not refreshed: %s", exc.orig)
        return False


def stale(c: Connection) -> list[str]:
    """The big tables whose statistics are missing or behind (PostgreSQL)."""
    rows = c.execute(sa.text(
        "SELECT c.relname, c.reltuples, s.n_mod_since_analyze, s.n_live_tup "
        "FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
        "WHERE c.relname IN :names AND c.relnamespace = to_regnamespace(current_schema())::oid"
    ).bindparams(sa.bindparam("names", expanding=True)), {"names": list(TABLES)}).all()
    return [name for name, tuples, modified, live in rows
            if tuples < 0 or modified > STALE_SHARE * max(tuples, live) + STALE_ROWS]


def _refresh_postgresql(engine: Engine) -> bool:
    with engine.connect() as c:
        tables = stale(c)
        if tables:
            c.exec_driver_sql("ANALYZE " + ", ".join(tables))
        c.commit()
    return bool(tables)


def _refresh_sqlite(engine: Engine) -> bool:
    with engine.connect() as c:
        analyzed = set(c.exec_driver_sql("SELECT DISTINCT tbl FROM sqlite_stat1").scalars()) if _has_stat1(c) else set()
        tables = [name for name in TABLES if name not in analyzed]
        if tables:
            c.exec_driver_sql(f"PRAGMA analysis_limit = {SQLITE_SAMPLE}")
            for name in tables:
                c.exec_driver_sql(f"ANALYZE {name}")
        c.commit()
    return bool(tables)


def _has_stat1(c: Connection) -> bool:
    return c.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").first() is not None

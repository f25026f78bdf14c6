"""The store: runs, pairs and answers, in SQLite (a file) or PostgreSQL.

``Store.open`` takes a directory (its ``shadowdiff.sqlite`` is used), a file path,
or a database URL (``sqlite:///…``, ``postgresql://…``). A path that does not exist
yet is a directory unless it ends in a database file's suffix (``.sqlite``,
``.sqlite3``, ``.db``): ``--out results.v2`` is a directory.
``Store.open_existing``, for the commands that only read a store, never creates one.
The schema is versioned with Alembic migrations that run on open (under an advisory
lock on PostgreSQL, so that several proxy replicas starting at once migrate once).

A pair is stored whole or not at all, and nothing is added to a finished run
(``store``'s docstring says how).

The modules, each with one job:

* ``engine``: where a store is (``database_url``), the engine and its SQLite or
  PostgreSQL tuning, and the migrations run on open;
* ``schema``: the tables; ``rows``: records to rows and back (``Run``, ``StoredPair``);
* ``store``: the ``Store`` class; ``order``: log order's pages and the review queue's
  order; ``speed``: the answers' speed percentiles; ``tallies``: what a run's verdict is
  decided from, read into plain counts; ``summaryrows``: what a run's summary counts,
  read without the texts; ``planning``: the query planner's statistics, kept current;
* ``members``, ``review``, ``reviewers``, ``prune``, ``writer``, ``plotrows``: serve
  runs' processes, reviews, reviewers, retention, the background writer, plot data.

This module only names the package's public API.
"""

from shadowdiff.store import schema
from shadowdiff.store.engine import SQLITE_SUFFIXES, STORE_FILE, database_url, sqlite_path
from shadowdiff.store.order import queue_order, queue_place
from shadowdiff.store.rows import Run, StoredPair
from shadowdiff.store.store import Store, add_to_counts

__all__ = [
    "SQLITE_SUFFIXES",
    "STORE_FILE",
    "Run",
    "Store",
    "StoredPair",
    "add_to_counts",
    "database_url",
    "queue_order",
    "queue_place",
    "schema",
    "sqlite_path",
]

"""Retention: ``shadowdiff prune`` deletes the old pairs of serve runs and
nothing a report or a reviewer relies on: reviewed and claimed pairs, runs, their
outcome counts, replay runs. A pruned serve run reports the same outcome counts and
the same decision. On SQLite and PostgreSQL, with a writer and a second prune at once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from shadowdiff.errors import ConfigError
from shadowdiff.report.summary import summarize
from shadowdiff.store import Store, schema
from shadowdiff.store.prune import Scope, parse_duration, prune, pruned_counts, vacuum
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.verdict.acceptance import acceptance
from tests.support import cli
from tests.support.pruning import made, serve_run

DAY = 86_400.0


def age(store: Store, days: float, *where: Any) -> None:
    """Set the pairs' creation back by ``days`` (all of them, or those ``where`` selects)."""
    with store.engine.begin() as c:
        c.execute(schema.pairs.update().where(*where).values(created_at=datetime.now(UTC) - timedelta(days=days)))


def rows(store: Store, table: sa.Table) -> list[tuple[Any, ...]]:
    with store.engine.connect() as c:
        return sorted(tuple(r) for r in c.execute(table.select()))


def table_sizes(store: Store) -> dict[str, int]:
    with store.engine.connect() as c:
        return {t.name: int(c.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())
                for t in schema.metadata.sorted_tables}


@pytest.mark.parametrize(("text", "seconds"), [("7d", 7 * DAY), ("36h", 36 * 3600.0), ("90m", 5400.0),
                                          ("1d12h", 1.5 * DAY), ("2w", 14 * DAY), (" 30S ", 30.0), ("1.5h", 5400.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "says"), [("7", "takes a duration"), ("", "takes a duration"), ("7 days", "takes"),
                                       ("d", "takes"), ("-1d", "negative"), ("0d", "longer than zero"),
                                       ("0h0m", "longer than zero"), ("999999999d", "century"), ("1d x", "takes")])
def test_bad_durations_are_refused(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_duration(text, "--retain")


def test_prune_deletes_old_unreviewed_pairs_of_serve_runs_and_nothing_else(store: Store) -> None:
    run_id = serve_run(store)
    replay = store.create_run("replay", {})
    store.add_pairs(replay, [made(f"r{i}", "near") for i in range(1, 11)])
    fresh = serve_run(store, 8, prefix="f")
    age(store, 10, schema.pairs.c.run_id != fresh)
    queue = ReviewQueue(store)
    stored = {p["key"]: p["id"] for p in store.pairs(run_id)}
    queue.add_review(stored["k2"], "ann", "wording")
    queue.add_review(stored["k3"], "bob", "factual", "candidate")
    assert queue.claim_next("cy", Filters(run_id=run_id)) is not None   # held by a reviewer: kept too
    claimed = [p["key"] for p in store.pairs(run_id) if p["claimed_by"]]
    counts, runs = rows(store, schema.run_counts), rows(store, schema.runs)

    result = prune(store, 7 * DAY, batch=7)

    assert result.deleted == {run_id: 42 - 3} and result.kept_reviewed == {run_id: 2}
    assert result.kept_claimed == {run_id: 1} and result.batches >= 6 and not result.stopped
    assert sorted(p["key"] for p in store.pairs(run_id)) == sorted(["k2", "k3", *claimed])
    assert store.count_pairs(replay) == 10 and store.count_pairs(fresh) == 10      # never a replay's, nor new ones
    assert rows(store, schema.run_counts) == counts and rows(store, schema.runs) == runs
    assert len(queue.reviews(stored["k2"])) == 1 and len(queue.reviews(stored["k3"])) == 1
    with store.engine.connect() as c:   # the answers went with their pairs
        orphans = c.execute(sa.select(sa.func.count()).select_from(schema.answers).where(
            ~sa.exists().where(schema.pairs.c.id == schema.answers.c.pair_id))).scalar_one()
    assert orphans == 0 and table_sizes(store)["answers"] == 2 * (3 + 10 + 10)
    assert sum(pruned_counts(store, run_id).values()) == 39
    assert prune(store, 7 * DAY).total == 0      # again: nothing more


def test_a_dry_run_changes_nothing(store: Store) -> None:
    run_id = serve_run(store)
    age(store, 3)
    before = {t.name: rows(store, t) for t in schema.metadata.sorted_tables}
    result = prune(store, DAY, dry_run=True)
    assert result.deleted == {run_id: 42} and result.dry_run and result.batches == 0
    assert {t.name: rows(store, t) for t in schema.metadata.sorted_tables} == before


def test_only_the_runs_asked_for(store: Store) -> None:
    a, b, unnamed = serve_run(store, name="a", prefix="a"), serve_run(store, name="b", prefix="b"), serve_run(store)
    age(store, 3)
    assert prune(store, DAY, Scope(deployment="a")).deleted == {a: 42}
    assert prune(store, DAY, Scope(unnamed=True)).deleted == {unnamed: 42}
    assert prune(store, DAY, Scope(run_id=b)).deleted == {b: 42}


def test_a_replay_run_or_a_missing_one_is_refused(store: Store) -> None:
    replay = store.create_run("replay", {})
    with pytest.raises(ConfigError, match="only serve runs are pruned"):
        prune(store, DAY, Scope(run_id=replay))
    with pytest.raises(ConfigError, match="no run nope"):
        prune(store, DAY, Scope(run_id="nope"))


@pytest.mark.parametrize("min_reviewed", [1.0, 0.2])
def test_a_pruned_serve_run_reports_the_same_counts_and_decision(store: Store, min_reviewed: float) -> None:
    run_id = serve_run(store)
    queue = ReviewQueue(store)
    for p in list(store.pairs(run_id))[:10]:
        if p["outcome"] in ("near", "divergent"):
            queue.add_review(p["id"], "ann", "wording")
    store.finish_run(run_id)
    before_summary, before = summarize(store, run_id), acceptance(store, run_id, min_reviewed=min_reviewed,
                                                                  max_errors=3)
    age(store, 3)
    assert prune(store, DAY).total > 30
    after_summary, after = summarize(store, run_id), acceptance(store, run_id, min_reviewed=min_reviewed,
                                                                max_errors=3)
    for name in ("pairs", "outcomes", "comparable", "comparable_outcomes", "noise", "not_compared"):
        assert getattr(after_summary, name) == getattr(before_summary, name), name
    assert after_summary.changed_rate == before_summary.changed_rate
    assert after_summary.stored < before_summary.stored and after_summary.pruned == before_summary.stored - \
        after_summary.stored
    for name in ("decision", "identical", "equivalent", "needs_review", "unreviewed", "errors", "compared",
                 "sampled", "verdicts"):
        assert getattr(after, name) == getattr(before, name), name
    assert after.pruned_unreviewed == after.unreviewed > 0
    # a prune never turns an INCOMPLETE run into a PASS: below --min-reviewed 1, the unreviewed
    # pairs it deleted may have shown a sign of a factual regression (their signs went with them)
    assert after.decision.name == before.decision.name == "INCOMPLETE"
    if min_reviewed == 1.0:
        assert after.reasons == before.reasons
    else:
        assert any("deleted by retention, and whether they showed one went with them" in r for r in after.reasons)


def test_a_writer_and_a_second_prune_at_once(store: Store) -> None:
    """A proxy writes to the run while two processes prune it: every new pair lands,
    every old one is deleted and counted once."""
    run_id = serve_run(store, 400, unstored_identical=0)
    age(store, 3)
    stop = threading.Event()
    written: list[int] = []
    failures: list[BaseException] = []

    def write() -> None:
        i = 0
        try:
            while not stop.is_set() or i < 20:
                i += 1
                assert not store.add_pairs(run_id, [made(f"w{i}", "near")])
                store.add_counts(run_id, {("pairs", "near", True): 1})
                written.append(i)
        except BaseException as exc:
            failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    results: list[int] = []
    prunes = [threading.Thread(target=lambda: results.append(prune(store, DAY, batch=25).total)) for _ in range(2)]
    for t in prunes:
        t.start()
    for t in prunes:
        t.join()
    stop.set()
    writer.join()
    assert not failures
    assert sum(results) == 402 and sum(pruned_counts(store, run_id).values()) == 402
    assert sorted(p["key"] for p in store.pairs(run_id)) == sorted(f"w{i}" for i in written)
    assert sum(n for (of, _, _), n in store.counts(run_id).items() if of == "pairs") == 402 + len(written)


def test_a_stop_is_heeded_between_batches(store: Store) -> None:
    serve_run(store)
    age(store, 3)
    stop = threading.Event()
    stop.set()
    result = prune(store, DAY, batch=5, stop=stop)
    assert result.stopped and result.total == 0


def file_size(store: Store, file: Path) -> int:
    """The database file's size once its write-ahead log is written into it."""
    raw = store.engine.raw_connection()   # outside a transaction (the store's connections begin one)
    try:
        raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()
    return file.stat().st_size


def test_vacuum_gives_a_sqlite_file_back(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    try:
        run_id = serve_run(store, 2_000)
        age(store, 3)
        size = file_size(store, tmp_path / "shadowdiff.sqlite")
        prune(store, DAY)
        assert file_size(store, tmp_path / "shadowdiff.sqlite") == size     # freed pages are kept for reuse
        vacuum(store)
        assert file_size(store, tmp_path / "shadowdiff.sqlite") < size / 2 and store.count_pairs(run_id) == 0
    finally:
        store.close()


def shadowdiff(*args: str) -> cli.Ran:
    return cli.shadowdiff(*args)


def test_the_command(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    try:
        run_id = serve_run(store)
        replay = store.create_run("replay", {})
        age(store, 3)
    finally:
        store.close()
    dry = shadowdiff("prune", str(tmp_path), "--older-than", "2d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"run {run_id} (started " in dry.stdout and "would delete 42 pairs;" in dry.stdout
    done = shadowdiff("prune", str(tmp_path), "--older-than", "2d", "--vacuum")
    assert done.returncode == 0, done.stderr
    assert "deleted 42 pairs in 1 transaction (" in done.stdout and "vacuumed" in done.stdout
    for args, says in [(("--older-than", "0d"), "longer than zero"), (("--older-than", "week"), "takes a duration"),
                       (("--older-than", "1d", "--run", replay), "only serve runs"),
                       (("--older-than", "1d", "--run", "nope"), "no run nope")]:
        refused = shadowdiff("prune", str(tmp_path), *args)
        assert refused.returncode == 3 and says in refused.stderr, refused.stderr
    missing = shadowdiff("prune", str(tmp_path / "none"), "--older-than", "1d")
    assert missing.returncode == 3 and "no store" in missing.stderr


def test_a_verdict_and_a_prune_at_once_never_lose_the_verdict_silently(store: Store) -> None:
    """A reviewer's verdict on a pair a prune is deleting: either the verdict lands (the
    pair is locked against the prune) or the reviewer is told "no pair", never a
    foreign-key error (a 500 in the UI)."""
    from shadowdiff.errors import InputError

    run_id = serve_run(store, 4)
    age(store, 10)
    target = next(p["id"] for p in store.pairs(run_id))
    deleting = store.engine.connect()
    txn = deleting.begin()
    # as a prune does: the pair chosen and locked, then deleted, in one transaction
    deleting.execute(sa.select(schema.pairs.c.id).where(schema.pairs.c.id == target).with_for_update())
    outcome: dict[str, Any] = {}

    def review() -> None:
        try:
            outcome["review"] = ReviewQueue(store).add_review(target, "ann", "wording")
        except Exception as exc:
            outcome["error"] = exc

    reviewer = threading.Thread(target=review)
    reviewer.start()
    reviewer.join(0.5)       # (PostgreSQL: it waits for the prune's lock; SQLite: for its write lock)
    deleting.execute(schema.answers.delete().where(schema.answers.c.pair_id == target))
    deleting.execute(schema.pairs.delete().where(schema.pairs.c.id == target))
    txn.commit()
    deleting.close()
    reviewer.join(30)
    assert "review" not in outcome
    assert isinstance(outcome.get("error"), InputError) and str(outcome["error"]) == f"no pair {target}"

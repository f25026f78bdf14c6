"""The store on SQLite (always) and PostgreSQL (when SHADOWDIFF_TEST_POSTGRES names one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from proxy.compare import compare
from proxy.records import Answer, Pair, Side
from proxy.store import STORE_FILE, Store, database_url, schema
from shadowdiff.errors import ConfigError


def pair(key: str, seq: int, base: str = "a b c", cand: str = "a b d") -> Pair:
    answers = {
        Side.BASELINE: Answer(Side.BASELINE, "m", base, "stop", 5, 3, 0.01, 0.1, 200, tokens=["a", " b", " c"]),
        Side.CANDIDATE: Answer(Side.CANDIDATE, "m-fp8", cand, "stop", 5, 3, 0.01, 0.05, 200),
    }
    return Pair(key, seq, "/v1/chat/completions", "prompt é", {"messages": [{"role": "user", "content": "x"}]},
                compare(base, cand), answers, category="math", margin=0.2)


def test_round_trip(store: Store) -> None:
    run = store.create_run("replay", {"log": "x.jsonl", "overrides": {"temperature": 0}})
    assert store.add_pair(run, pair("k1", 1))
    assert store.add_pair(run, pair("k2", 2, cand="a b c"))
    assert not store.add_pair(run, pair("k1", 3))  # unique (run, key): never stored twice
    assert store.has_pair(run, "k1")
    assert not store.has_pair(run, "k9")
    assert store.count_pairs(run) == 2
    stored = list(store.pairs(run, batch=1))
    assert [p["key"] for p in stored] == ["k1", "k2"]
    assert [p["outcome"] for p in stored] == ["divergent", "identical"]
    first = stored[0]
    assert first["prompt"] == "prompt é"
    assert first["request"] == {"messages": [{"role": "user", "content": "x"}]}
    assert first.answers[Side.BASELINE].tokens == ["a", " b", " c"]
    assert first.answers[Side.CANDIDATE].text == "a b d"
    store.add_skipped(run, 7, "not valid JSON")
    assert store.skipped(run) == [(7, "not valid JSON")]
    store.finish_run(run)
    loaded = store.run(run)
    assert loaded.finished_at is not None
    assert loaded.settings["overrides"] == {"temperature": 0}
    latest = store.latest_run("replay")
    assert latest is not None and latest.id == run


def test_migrations_build_exactly_the_schema(store: Store) -> None:
    with store.engine.connect() as c:
        diff = compare_metadata(MigrationContext.configure(c), schema.metadata)
    assert diff == []
    assert store.revision() == schema.SCHEMA_VERSION


def test_reopening_keeps_data_and_does_not_migrate_twice(tmp_path: Path) -> None:
    first = Store.open(tmp_path)
    run = first.create_run("replay", {})
    first.add_pair(run, pair("k", 1))
    first.close()
    again = Store.open(tmp_path / STORE_FILE)
    assert again.count_pairs(run) == 1
    again.close()


def test_a_newer_store_is_refused(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    with store.engine.begin() as c:
        c.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    store.close()
    with pytest.raises(ConfigError, match="newer version"):
        Store.open(tmp_path)


def test_locations() -> None:
    assert database_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert database_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"
    with pytest.raises(ConfigError):
        Store.open("nosuchdb://x")


def test_writer_batches_reports_duplicates_and_flushes_on_close(store: Store) -> None:
    from proxy.store.writer import PairWriter

    run = store.create_run("replay", {})
    store.add_pair(run, pair("taken", 0))
    duplicates: list[Pair] = []
    writer = PairWriter(store, run, on_duplicate=duplicates.append, max_batch=7, max_delay=0.01)
    for i in range(50):
        writer.submit(pair(f"k{i}", i + 1))
    writer.submit(pair("taken", 99))
    writer.close()
    assert writer.written == 50
    assert [p.key for p in duplicates] == ["taken"]
    assert store.count_pairs(run) == 51
    assert sorted(p["seq"] for p in store.pairs(run)) == list(range(51))

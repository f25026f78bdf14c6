"""The store on SQLite (always) and PostgreSQL (the one SHADOWDIFF_TEST_POSTGRES names, or one on 127.0.0.1:5432)."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from shadowdiff.answers.compare import compare, error_comparison
from shadowdiff.answers.records import Answer, Choice, Pair
from shadowdiff.errors import ConfigError
from shadowdiff.store import STORE_FILE, Store, database_url, schema
from shadowdiff.store.writer import PairWriter
from shadowdiff.vocabulary import Side
from tests.support.fixtures import postgres_database
from tests.support.storing import pair


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


def test_every_part_of_an_answer_is_kept(store: Store) -> None:
    """Reasoning, refusal, tool calls, reasoning tokens and every choice come back as stored."""
    calls = [{"id": "chatcmpl-tool-1", "type": "function",
              "function": {"name": "get_weather", "arguments": '{"unit": "celsius"}'}}]
    whole = Answer(Side.CANDIDATE, "m-fp8", "", "tool_calls", 5, 9, 0.01, 0.05, 200, tool_calls=calls,
                   reasoning="17 * 23 = 391", refusal=None, reasoning_tokens=6,
                   others=(Choice(1, "The answer is 381.", "17 * 23 = 381", "I can't say.", None, "stop"),))
    stored = pair("k1", 1)
    stored.answers[Side.CANDIDATE] = whole
    run = store.create_run("replay", {})
    assert store.add_pair(run, stored)
    [loaded] = store.pairs(run)
    assert loaded.answers[Side.CANDIDATE] == whole
    assert loaded.answers[Side.BASELINE] == stored.answers[Side.BASELINE]   # one choice, no reasoning: as before


def test_scores_and_grades_are_kept(store: Store) -> None:
    """The teacher-forced scores, the grade and the flip come back as stored; the candidate's
    agreement is a column of its own (the queue and the histogram read it)."""
    score = {"agreement": 0.97, "tokens": 200, "first_disagreement": 14, "mean_drop": 0.01,
             "max_drop": 2.5, "kl": 0.004, "cascade": False}
    grade = {"reference": "42", "grader": "number", "baseline": True, "candidate": False, "replica": None}
    run = store.create_run("replay", {})
    assert store.add_pair(run, replace(pair("k1", 1), score=score, noise_score={"agreement": 1.0, "tokens": 200},
                                       grade=grade, flip="correct_to_wrong"))
    assert store.add_pair(run, pair("k2", 2))
    first, second = store.pairs(run)
    assert first["score"] == score and first["noise_score"] == {"agreement": 1.0, "tokens": 200}
    assert first["token_agreement"] == 0.97
    assert first["grade"] == grade and first["flip"] == "correct_to_wrong"
    assert second["score"] is None and second["token_agreement"] is None and second["flip"] is None



def test_a_nul_character_is_stored_as_a_replacement_character(store: Store) -> None:
    """PostgreSQL's text cannot hold NUL, which a model can write: the pair lands, on both backends alike."""
    stored = pair("k1", 1)
    stored.answers[Side.CANDIDATE] = Answer(Side.CANDIDATE, "m", "a\x00b", "stop", reasoning="391\x00",
                                            refusal="\x00", error=None)
    run = store.create_run("replay", {})
    assert store.add_pair(run, replace(stored, prompt="p\x00"))
    store.add_skipped(run, 3, "bad \x00 line")
    [loaded] = store.pairs(run)
    answer = loaded.answers[Side.CANDIDATE]
    assert (answer.text, answer.reasoning, answer.refusal, loaded["prompt"]) == ("a\ufffdb", "391\ufffd", "\ufffd",
                                                                                "p\ufffd")
    assert store.skipped(run) == [(3, "bad \ufffd line")]


def test_pairs_by_priority_pages_by_key_across_ties_and_gaps(store: Store) -> None:
    """The review queue's order: highest priority first; within a priority errors, then
    lowest similarity first; ties (equal or missing similarity) keep log order, and no
    pair is lost or repeated at a page boundary."""
    run = store.create_run("replay", {})
    texts = ["a b c", "a b d", "a x y", "a b c", "q r s", "a b d", "a b c ", "a b d"]
    priorities = [0, 40, 100, 0, 40, 100, 5, 40]
    pairs = [replace(pair(f"k{i}", i, cand=t), priority=prio) for i, (t, prio) in enumerate(
        zip(texts, priorities, strict=True))]
    pairs.append(Pair("err", 8, "/v1/chat/completions", "p", {}, error_comparison(),
                      {Side.BASELINE: Answer(Side.BASELINE, "m", "x"),
                       Side.CANDIDATE: Answer(Side.CANDIDATE, "m", error="HTTP 500")}))
    store.add_pairs(run, pairs)
    store.add_pairs(store.create_run("replay", {}), [pair("other", 0, cand="zzz")])   # another run's pair
    rank = {"error": 0, "divergent": 1, "near": 2, "equivalent": 3}
    expected = sorted((p for p in pairs if p.comparison.outcome.value != "identical"),
                      key=lambda p: (-p.priority, rank[p.comparison.outcome.value],
                                     -1.0 if p.comparison.similarity is None else p.comparison.similarity, p.seq))
    assert len(expected) == 7
    assert expected[0].priority == 100 and expected[-1].key == "err"
    for batch in (1, 2, 5, 200):
        assert [p["key"] for p in store.pairs_by_priority(run, batch=batch)] == [p.key for p in expected]
        assert [p["key"] for p in store.pairs_by_priority(run, batch=batch, failed=False)] == \
            [p.key for p in expected if p.key != "err"]
        assert [p["key"] for p in store.pairs_by_priority(run, batch=batch, failed=True)] == ["err"]


def test_percentiles_are_those_of_the_answers_tokens_per_second(store: Store) -> None:
    """The database computes ``Answer.tokens_per_second`` and the nearest-rank
    percentiles the reports show; both must agree with the Python property."""
    rng = random.Random(7)
    run = store.create_run("replay", {})
    candidates: list[Answer] = []
    pairs = []
    for i in range(90):
        tokens = rng.choice([None, 0, 1, 2, 17, 256])
        ttft = rng.choice([None, 0.0, 0.02, rng.random()])
        duration = rng.choice([None, 0.0, 0.01, rng.random() * 3])
        error = "HTTP 500" if i % 11 == 0 else None
        others = tuple(Choice(k, "y") for k in range(1, rng.choice([1, 1, 2, 3])))   # tokens/s is per choice
        ttlt = rng.choice([None, ttft, 0.3, rng.random() * 2])   # the last token: with the first, or after
        cand = Answer(Side.CANDIDATE, "m", "x", "stop", 3, tokens, ttft, duration, 200, error=error, others=others,
                      ttfat=rng.choice([None, ttft, 0.5]), ttlt=ttlt)
        candidates.append(cand)
        pairs.append(Pair(f"k{i}", i, "/v1/chat/completions", "p", {}, compare("x", "x"),
                          {Side.BASELINE: Answer(Side.BASELINE, "m", "x"), Side.CANDIDATE: cand}))
    store.add_pairs(run, pairs)

    def nearest_rank(values: list[float], q: float) -> float | None:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))] if ordered else None

    ok = [a for a in candidates if a.ok]
    for measure, values in (("inter_token_latency", [a.inter_token_latency for a in ok]),
                            ("ttft", [a.ttft for a in ok]), ("ttfat", [a.ttfat for a in ok]),
                            ("duration", [a.duration for a in ok])):
        present = [v for v in values if v is not None]
        assert len(present) > 10
        every = tuple(range(0, 101, 2))   # with under 50 values, this reaches each of them
        got = store.percentiles(run, Side.CANDIDATE, measure, every)
        assert got == pytest.approx([nearest_rank(present, q) for q in every], rel=1e-9), measure
    # tokens per second: one over the inter-token latency's (100 - q)-th, so the two agree
    latencies = [a.inter_token_latency for a in ok if a.inter_token_latency is not None]
    got = store.percentiles(run, Side.CANDIDATE, "tokens_per_second", every)
    assert got == pytest.approx([1 / nearest_rank(latencies, 100 - q) for q in every], rel=1e-9)
    assert got[every.index(50)] == pytest.approx(1 / store.percentiles(run, Side.CANDIDATE, "inter_token_latency",
                                                                      (50,))[0])
    assert store.percentiles(run, Side.REPLICA, "ttft", (50,)) == [None]


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


def test_a_store_at_the_newest_revision_opens_without_alembic(tmp_path: Path) -> None:
    """Opening a store already migrated reads its revision directly; Alembic (a third of a
    command's start) is imported only when there is something to migrate."""
    Store.open(tmp_path).close()
    script = ("import sys; from shadowdiff.store import Store; "
              f"Store.open({str(tmp_path)!r}).close(); print('alembic' in sys.modules)")
    opened = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert opened.stdout.strip() == "False"
    fresh = subprocess.run([sys.executable, "-c", script.replace(str(tmp_path), str(tmp_path / "new"))],
                           capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "True"    # a new store is migrated, with Alembic


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


def test_run_counts_add_up_across_batches_and_writers(store: Store) -> None:
    """What a serve run saw, stored or not: counts from several writers (several
    workers, one run) add up, and pair-less batches are counted too."""
    run = store.create_run("serve", {})
    other = store.create_run("serve", {})
    store.add_counts(run, {("pairs", "identical", True): 3, ("noise", "near", True): 1})
    store.add_counts(run, {("pairs", "identical", True): 2, ("pairs", "divergent", False): 4})
    store.add_counts(other, {("pairs", "identical", True): 7})
    store.add_counts(run, {})
    assert store.counts(run) == {("pairs", "identical", True): 5, ("noise", "near", True): 1,
                                 ("pairs", "divergent", False): 4}
    writers = [PairWriter(store, run, max_delay=0.01) for _ in range(2)]
    for i in range(40):
        writers[i % 2].add_counts({("pairs", "identical", True): 1})
    writers[0].submit(pair("k1", 1))
    writers[1].add_counts({("noise", "near", True): 1, ("pairs", "near", False): 0})
    for writer in writers:
        writer.close()
    assert store.counts(run) == {("pairs", "identical", True): 45, ("noise", "near", True): 2,
                                 ("pairs", "divergent", False): 4}
    assert store.counts(other) == {("pairs", "identical", True): 7}
    assert store.count_pairs(run) == 1
    assert store.counts(store.create_run("replay", {})) == {}


def test_a_connection_lost_in_a_batch_is_said_once_not_by_the_driver_too(caplog: pytest.LogCaptureFixture) -> None:
    """psycopg logs its own warning when the server goes away inside a pipelined batch (as
    ``executemany`` is); the batch's exception says the same, and the writer logs that."""
    import psycopg

    with postgres_database() as url:
        Store.open(url).close()   # opening a PostgreSQL store quiets the driver's repeat
        with psycopg.connect(url, autocommit=True) as victim, psycopg.connect(url, autocommit=True) as killer:
            pid = victim.info.backend_pid
            with pytest.raises(psycopg.OperationalError), victim.pipeline():
                victim.execute("SELECT 1")
                killer.execute("SELECT pg_terminate_backend(%s)", [pid])
                victim.execute("SELECT 2").fetchone()   # fails in the block: then its end fails too
    assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")] == []

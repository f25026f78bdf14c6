"""The reads a report makes of a whole run, on SQLite and PostgreSQL: pages in log order
on an index that holds their key (the plan, read with EXPLAIN: no sort), the summary's
light columns and grouped answer counts against the pairs they come from, every speed
percentile at once against Python's nearest rank, and the planner's statistics."""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from shadowdiff.answers.compare import compare
from shadowdiff.answers.records import Answer, Choice, Pair
from shadowdiff.store import Store, schema
from shadowdiff.store.order import LOG_START, log_page
from shadowdiff.store.summaryrows import answer_groups, summary_rows
from shadowdiff.vocabulary import Outcome, Side


def _bulk_run(store: Store, pairs: int, *, finish: bool = True) -> str:
    """A run of ``pairs`` bare pairs with a baseline answer each, written in bulk (a second run beside it)."""
    now = datetime.now(UTC)
    runs = [store.create_run("replay", {}) for _ in range(2)]
    outcomes = [o.value for o in Outcome]
    with store.engine.begin() as c:
        c.execute(schema.pairs.insert(), [
            {"run_id": run, "key": f"k{i}", "seq": i // 2, "endpoint": "/v1/chat/completions", "prompt": "p" * 200,
             "request": {}, "comparable": True, "outcome": outcomes[i % len(outcomes)], "created_at": now}
            for run in runs for i in range(pairs)])
        p = schema.pairs.c
        c.execute(schema.answers.insert().from_select(
            ["pair_id", "side", "text", "attempts"],
            sa.select(p.id, sa.literal(Side.BASELINE.value), sa.literal("an answer"), sa.literal(1))))
    if finish:
        store.finish_run(runs[0])
    return runs[0]


def _plan(store: Store, query: sa.Select[Any]) -> str:
    """The plan the database makes for ``query`` with its parameters, as text."""
    with store.engine.connect() as c:
        compiled = query.compile(dialect=c.dialect)
        params: Any = compiled.construct_params()
        if compiled.positional:
            params = tuple(params[name] for name in compiled.positiontup or ())
        explain = "EXPLAIN " if store.dialect == "postgresql" else "EXPLAIN QUERY PLAN "
        return "\n".join(str(row[-1]) for row in c.exec_driver_sql(explain + compiled.string, params))


def test_a_page_in_log_order_is_read_from_the_index_without_a_sort(store: Store) -> None:
    run = _bulk_run(store, 5_000)
    plan = _plan(store, log_page(run, (1_200, 0), 500))
    assert "ix_pairs_run_seq_id" in plan, plan
    if store.dialect == "postgresql":
        assert "Sort" not in plan and "Seq Scan" not in plan, plan
    else:
        assert "TEMP B-TREE" not in plan, plan


def test_pages_in_log_order_cover_the_run_once_across_ties_of_seq(store: Store) -> None:
    run = _bulk_run(store, 1_001)
    keys = [pair["key"] for pair in store.pairs(run, batch=7)]
    assert sorted(keys) == sorted(f"k{i}" for i in range(1_001))
    assert len(keys) == len(set(keys))
    with store.engine.connect() as c:
        first = c.execute(log_page(run, LOG_START, 3)).all()
    assert [row.seq for row in first] == [0, 0, 1]


def _pairs_with_sources(store: Store) -> tuple[str, list[Pair]]:
    """A run whose answers' token sources first appear out of alphabetical order, with failures."""
    run = store.create_run("replay", {})
    pairs = []
    sources = ["stream", None, "logprobs", "usage", "stream"]
    for i in range(40):
        source = sources[i % len(sources)]
        tokens = None if source is None and i % 2 else 10 + i
        base = Answer(Side.BASELINE, "m", "x", "stop", 3, tokens, 0.1, 1.0, 200, ttlt=0.5, token_source=source)
        cand = Answer(Side.CANDIDATE, "m", "y" if i % 3 else "x", "stop", 3, 7, 0.2, 2.0, 200, ttlt=0.2 + i / 100,
                      error="HTTP 500" if i % 7 == 0 else None, token_source="tokenizer" if i > 20 else "usage")
        pairs.append(Pair(f"k{i}", 40 - i, "/v1/chat/completions", "p", {}, compare(base.text, cand.text),
                          {Side.BASELINE: base, Side.CANDIDATE: cand}, category=["b", None, "a"][i % 3],
                          score={"agreement": 0.5, "tokens": 4, "agreed": 2} if i % 4 == 0 else None))
    store.add_pairs(run, pairs)
    return run, pairs


def test_the_summary_rows_are_the_pairs_light_columns_in_log_order(store: Store) -> None:
    run, _ = _pairs_with_sources(store)
    rows = list(summary_rows(store, run))
    stored = list(store.pairs(run))
    assert [(r.category, r.outcome, r.comparable, r.noise_outcome, r.similarity, r.score, r.noise_score)
            for r in rows] == [(p["category"], p["outcome"], p["comparable"], p["noise_outcome"], p["similarity"],
                                p["score"], p["noise_score"]) for p in stored]


def test_answer_groups_count_what_a_pass_over_the_answers_would(store: Store) -> None:
    run, _ = _pairs_with_sources(store)
    expected: dict[Side, dict[str, Any]] = {}
    for pair in store.pairs(run):   # the reading the summary made before: every answer, in log order
        for side, answer in pair.answers.items():
            tally = expected.setdefault(side, {"requests": 0, "errors": 0, "tokens": 0, "decoded": 0,
                                               "sources": Counter()})
            tally["requests"] += 1
            if not answer.ok:
                tally["errors"] += 1
                continue
            tally["tokens"] += answer.completion_tokens or 0
            tally["sources"][answer.token_source or "none"] += 1
            tally["decoded"] += answer.inter_token_latency is not None
    got: dict[Side, dict[str, Any]] = {}
    for group in answer_groups(store, run):
        tally = got.setdefault(group.side, {"requests": 0, "errors": 0, "tokens": 0, "decoded": 0,
                                            "sources": Counter()})
        tally["requests"] += group.answers
        if not group.ok:
            tally["errors"] += group.answers
            continue
        tally["tokens"] += group.output_tokens
        tally["sources"][group.token_source or "none"] += group.answers
        tally["decoded"] += group.decoded
    assert got == expected
    # the groups come in the order their first answer does, so the sources keep it
    for side in expected:
        assert list(got[side]["sources"]) == list(expected[side]["sources"])
    assert list(got[Side.BASELINE]["sources"]) != sorted(got[Side.BASELINE]["sources"])


def _nearest_rank(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))] if ordered else None


def _expected(values: list[float], measure: str, q: float) -> float | None:
    """A measure's nearest rank; tokens per second's, one over the inter-token latency's (100 - q)-th."""
    if measure != "tokens_per_second":
        return _nearest_rank(values, q)
    latency = _nearest_rank([1 / v for v in values], 100 - q)
    return None if latency is None else 1 / latency


def test_every_sides_percentiles_at_once_are_the_nearest_ranks(store: Store) -> None:
    """Ties, missing values and failed answers, on three sides, every measure in one call."""
    rng = random.Random(11)
    run = store.create_run("replay", {})
    pairs = []
    for i in range(70):
        sides = {}
        for side in (Side.BASELINE, Side.CANDIDATE, Side.REPLICA)[: 3 if i < 60 else 2]:   # a replica on some
            ttft = rng.choice([None, 0.1, 0.2, 0.2, round(rng.random(), 2)])   # ties on purpose
            sides[side] = Answer(side, "m", "x", "stop", 3, rng.choice([None, 1, 5, 40, 40]), ttft,
                                 rng.choice([None, 1.0, rng.random() * 3]), 200,
                                 error="HTTP 500" if rng.random() < 0.1 else None,
                                 others=tuple(Choice(k, "y") for k in range(1, rng.choice([1, 1, 2]))),
                                 ttfat=rng.choice([None, ttft]), ttlt=rng.choice([None, 0.5, 0.9, rng.random() * 2]))
        pairs.append(Pair(f"k{i}", i, "/v1/chat/completions", "p", {}, compare("x", "x"), sides))
    store.add_pairs(run, pairs)
    wanted = {"ttft": (0, 50, 95, 100), "ttfat": (50,), "duration": (1, 50, 99), "inter_token_latency": (50, 95),
              "tokens_per_second": (0, 5, 50, 95, 100)}
    got = store.speed_percentiles(run, wanted)
    stored = [a for p in pairs for a in p.answers.values() if a.ok]
    assert set(got) == {a.side for a in stored}
    for side, figures in got.items():
        ok = [a for a in stored if a.side is side]
        for measure, ps in wanted.items():
            values = [v for a in ok if (v := getattr(a, measure)) is not None]
            assert figures[measure] == pytest.approx([_expected(values, measure, q) for q in ps], rel=1e-12), \
                (side, measure)
    assert store.speed_percentiles(store.create_run("replay", {}), wanted) == {}


def test_a_finished_run_leaves_its_tables_analyzed(store: Store) -> None:
    run = _bulk_run(store, 300, finish=False)
    assert not _analyzed(store)
    store.finish_run(run)
    assert _analyzed(store) == {"pairs", "answers"}
    assert store.refresh_statistics() is False   # current: nothing to do


def _analyzed(store: Store) -> set[str]:
    with store.engine.connect() as c:
        if store.dialect == "postgresql":
            return set(c.execute(sa.text("SELECT relname FROM pg_class WHERE relname IN ('pairs', 'answers') "
                                         "AND reltuples >= 0")).scalars())
        if c.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").first() is None:
            return set()
        return set(c.exec_driver_sql("SELECT DISTINCT tbl FROM sqlite_stat1").scalars())


def test_statistics_that_cannot_be_refreshed_are_no_error(tmp_path: Any) -> None:
    """A store locked by a writer (SQLite) keeps the statistics it has: the report goes on."""
    store = Store.open(tmp_path / "store.sqlite", timeout=0.2)
    other = Store.open(tmp_path / "store.sqlite")
    try:
        with other.engine.connect() as c:
            c.exec_driver_sql("SELECT 1")   # BEGIN IMMEDIATE: the write lock, held
            assert store.refresh_statistics() is False
        assert store.refresh_statistics() is True
    finally:
        store.close()
        other.close()

"""A run's tally (``shadowdiff.store.tallies.run_tally``) is what the store holds: the
pairs counted by the database as they read one by one, each reviewer's first verdict,
the run's counts table, retention's counts, the pairs cut by the token cap, skipped
lines, its proxies and settings - and nothing of another run. On SQLite and PostgreSQL.

The verdict's rules are tested on made-up tallies (tests/verdict/test_acceptance_property.py):
these tests are what lets those stand for stores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shadowdiff.answers.compare import compare_answers, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.store import Store, schema
from shadowdiff.store.members import RunMembers
from shadowdiff.store.review import ReviewQueue
from shadowdiff.store.tallies import LOG_CHANGED, STOPPED_BY_LOG, CappedPairs, PairGroup, Review, run_tally
from shadowdiff.verdict.acceptance import acceptance, decide
from shadowdiff.vocabulary import Side
from tests.support.reporting import answered_pair

# answers that make each outcome (checked: a wrong guess fails the test)
TEXTS = {
    "identical": ("Same answer.", "Same answer."),
    "equivalent": ("Line one.\nLine two.", "Line one.\n\nLine two."),
    "near": ("The total is 42 dollars in all.", "The total is 43 dollars in all."),
    "divergent": ("Paris is the capital of France.", "Bananas are yellow and curved fruit."),
}


def flat(groups: Iterable[PairGroup]) -> Counter[PairGroup]:
    """Groups as a multiset of single pairs: the database's order and grouping left out."""
    counted: Counter[PairGroup] = Counter()
    for g in groups:
        counted[replace(g, n=1)] += g.n
    return counted


def read_one_by_one(store: Store, run: str) -> Counter[PairGroup]:
    """The run's pairs read row by row, as the tally should count them."""
    with store.engine.connect() as c:
        reviewed = set(c.execute(schema.reviews.select().with_only_columns(schema.reviews.c.pair_id)).scalars())
    return flat(PairGroup(row["outcome"], bool(row["comparable"]), 1, reviewed=row["id"] in reviewed,
                          replica_failed=row["noise_outcome"] == "error", suggested=row["suggested"],
                          judge_verdict=row["judge_verdict"], judge_wrong_side=row["judge_wrong_side"])
                for row in store.pairs(run))


def capped_pair(key: str, seq: int, text: str, tokens: int) -> Pair:
    """A pair both of whose sides stopped at the token cap, after thinking (``text``: the
    answer so far, "" before any)."""
    sides = {side: Answer(side, "m", text, "length", completion_tokens=tokens, reasoning="Rivers flow downhill, so")
             for side in (Side.BASELINE, Side.CANDIDATE)}
    return Pair(key, seq, "/v1/chat/completions", "p", {}, compare_answers(sides[Side.BASELINE],
                                                                           sides[Side.CANDIDATE]), sides)


def test_the_tally_of_a_replay_run_is_what_the_store_holds(store: Store) -> None:
    run = store.create_run("replay", {})
    failed = Answer(Side.CANDIDATE, "m", error="HTTP 500", status=500)
    pairs = [answered_pair("same1", 0, *TEXTS["identical"]), answered_pair("same2", 1, *TEXTS["identical"]),
             answered_pair("eq", 2, *TEXTS["equivalent"]), answered_pair("flip", 3, *TEXTS["near"]),
             answered_pair("drift", 4, *TEXTS["divergent"]), answered_pair("judged", 5, *TEXTS["divergent"]),
             answered_pair("failed", 6, "An answer.", failed),
             replace(answered_pair("sampled", 7, *TEXTS["near"]), comparable=False),
             replace(answered_pair("noisy", 8, *TEXTS["identical"]), noise=error_comparison()),
             answered_pair("empty", 9, "", ""), capped_pair("cut1", 10, "", 16),
             capped_pair("cut2", 11, "The river", 24)]
    store.add_pairs(run, pairs)
    ids = {row["key"]: row["id"] for row in store.pairs(run)}
    queue = ReviewQueue(store)
    queue.add_review(ids["drift"], "ana", "wording")
    queue.add_review(ids["flip"], "bob", "factual", "candidate", "43 is wrong")
    queue.add_review(ids["flip"], "ana", "minor", "candidate")
    with store.engine.begin() as c:   # a later verdict, as builds before the first was final stored it
        c.execute(schema.reviews.insert().values(pair_id=ids["drift"], reviewer="ana", verdict="factual",
                                                 wrong_side="candidate", note="", created_at=datetime.now(UTC)))
    queue.set_judge(ids["judged"], "factual", "candidate", "wrong")
    store.add_skipped(run, 20, "not JSON")
    store.add_skipped(run, 21, "no messages")
    store.set_run_setting(run, LOG_CHANGED, "3 lines appended")
    store.set_run_setting(run, STOPPED_BY_LOG, "line 22: a different prompt")
    # another run, whose pairs and reviews must not leak into this one's tally
    other = store.create_run("replay", {})
    store.add_pairs(other, [answered_pair("flip", 0, *TEXTS["near"])])
    queue.add_review(next(iter(store.pairs(other)))["id"], "ana", "factual", "candidate")

    tally = run_tally(store, run)

    assert flat(tally.groups) == read_one_by_one(store, run)
    outcomes = Counter(g.outcome for g in tally.groups for _ in range(g.n))
    assert outcomes == {"identical": 4, "equivalent": 1, "near": 2, "divergent": 2, "error": 1, "unanswered": 2}
    assert sum(g.n for g in tally.groups if g.replica_failed) == 1
    assert sum(g.n for g in tally.groups if g.reviewed) == 2
    assert [g.judge_wrong_side for g in tally.groups if g.judge_verdict] == ["candidate"]
    # each reviewer's first verdict, oldest first; the later one only counted
    assert tally.reviews == (Review(ids["drift"], "drift", "ana", "wording"),
                             Review(ids["flip"], "flip", "bob", "factual", "candidate", "43 is wrong"),
                             Review(ids["flip"], "flip", "ana", "minor", "candidate"))
    assert tally.after_reveal == 1
    # one cut before any answer (unanswered); the pairs answered without a finish reason are not known
    assert tally.capped == CappedPairs(2, 1, 8, (16, 24))
    assert (tally.skipped, tally.counts, tally.pruned, tally.short_members) == (2, {}, {}, 0)
    assert (tally.kind, tally.finished) == ("replay", False)
    assert (tally.log_changed, tally.stopped_by_log) == ("3 lines appended", "line 22: a different prompt")
    # and the verdict on the store is the verdict on its tally
    assert acceptance(store, run).as_json() == decide(tally).as_json()
    store.finish_run(run)
    assert run_tally(store, run).finished


def test_the_tally_of_a_serve_run_is_what_the_store_holds(store: Store) -> None:
    members = RunMembers(store)
    run = members.join("prod", {}, "a", "host", 1).run_id
    members.join("prod", {}, "b", "host", 2)
    store.add_pairs(run, [answered_pair("a-1", 0, *TEXTS["near"])])
    counts = {("pairs", "identical", True): 20, ("pairs", "near", True): 1,
              ("not_compared", "primary_failed", False): 2, ("dropped", "divergent", True): 1,
              ("capped", "identical", True): 3, ("noise", "error", False): 1}
    store.add_counts(run, counts)
    with store.engine.begin() as c:   # as a prune leaves them
        c.execute(schema.pruned.insert(), [{"run_id": run, "outcome": "near", "comparable": True, "pairs": 4},
                                           {"run_id": run, "outcome": "identical", "comparable": False, "pairs": 7}])
    members.leave(run, "a")
    members.leave(run, "b", "incomplete")   # the last one: the run is finished, short of b's pairs

    tally = run_tally(store, run)

    assert tally.counts == counts
    assert tally.pruned == {("near", True): 4, ("identical", False): 7}
    assert (tally.kind, tally.finished, tally.short_members) == ("serve", True, 1)
    assert flat(tally.groups) == read_one_by_one(store, run)


def test_a_proxy_closed_by_force_is_short_until_it_moves_on(store: Store) -> None:
    members = RunMembers(store)
    run = members.join("prod", {}, "a", "host", 1).run_id
    members.close(run, force=True)
    assert run_tally(store, run).short_members == 1
    assert members.join("prod", {}, "a", "host", 1).run_id != run   # it was alive: it moved on
    assert run_tally(store, run).short_members == 0


@dataclass(frozen=True)
class PlannedPair:
    outcome: str
    comparable: bool
    replica_failed: bool
    reviews: tuple[tuple[str, str | None, str], ...]   # (verdict, the side it goes against, reviewer)


review = st.builds(lambda verdict, reviewer: (*verdict, reviewer),
                   st.sampled_from([("wording", None), ("equivalent", None), ("minor", "candidate"),
                                    ("factual", "candidate"), ("factual", "baseline")]),
                   st.sampled_from(["ana", "bob"]))
planned = st.builds(PlannedPair, st.sampled_from([*TEXTS, "error"]), st.booleans(), st.booleans(),
                    st.lists(review, max_size=2, unique_by=lambda r: r[2]).map(tuple))


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One store for every example (a run each): opening one migrates it, which is slow."""
    store = Store.open(Path(tmp_path_factory.mktemp("tallies")))
    yield store
    store.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(planned, max_size=5))
def test_random_runs_count_as_they_read(shared_store: Store, pairs: list[PlannedPair]) -> None:
    """Over random runs: the database's groups are the pairs read one by one, and the
    reviews are those given, in order."""
    store, queue = shared_store, ReviewQueue(shared_store)
    run = store.create_run("replay", {})
    made = []
    for i, p in enumerate(pairs):
        if p.outcome == "error":
            pair = answered_pair(f"k{i}", i, "An answer.", Answer(Side.CANDIDATE, "m", error="HTTP 500", status=500))
        else:
            pair = answered_pair(f"k{i}", i, *TEXTS[p.outcome])
        made.append(replace(pair, comparable=p.comparable, noise=error_comparison() if p.replica_failed else None))
    store.add_pairs(run, made)
    stored = {row["key"]: row for row in store.pairs(run)}
    given_reviews = []
    for i, p in enumerate(pairs):
        assert stored[f"k{i}"]["outcome"] == p.outcome
        for verdict, wrong, reviewer in p.reviews:
            queue.add_review(stored[f"k{i}"]["id"], reviewer, verdict, wrong)
            given_reviews.append(Review(stored[f"k{i}"]["id"], f"k{i}", reviewer, verdict, wrong))
    tally = run_tally(store, run)
    assert flat(tally.groups) == read_one_by_one(store, run)
    assert sum(g.n for g in tally.groups) == len(pairs)
    assert sum(g.n for g in tally.groups if g.replica_failed) == sum(p.replica_failed for p in pairs)
    assert list(tally.reviews) == given_reviews

"""A property of the acceptance verdict, over random stores: PASS only when the
README's PASS condition holds, FAIL exactly when a reviewer found the candidate
factually wrong, the counts the verdict prints are the store's, and each reviewed
pair counts once, under the verdict least favourable to the candidate.

The condition is computed here from what was put into the store, not read back from
it, so that the verdict and this test can disagree:

    PASS  <=>  the run finished, no factual verdict against the candidate, at least
               --min-reviewed of the comparable pairs changed in substance reviewed,
               none of those with a sign of a factual regression unreviewed,
               errored pairs + skipped lines <= --max-errors, and at least
               --min-compared comparable pairs answered by both sides.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shadowdiff.answers.records import Answer
from shadowdiff.store import Store
from shadowdiff.store.review import ReviewQueue
from shadowdiff.verdict.acceptance import acceptance
from shadowdiff.vocabulary import Decision, Side
from tests.support.reporting import answered_pair as _pair

# answers that make each outcome (checked by the test: a wrong guess fails it)
TEXTS = {
    "identical": ("Same answer.", "Same answer."),
    "equivalent": ("Line one.\nLine two.", "Line one.\n\nLine two."),
    "near": ("The total is 42 dollars in all.", "The total is 43 dollars in all."),
    "divergent": ("Paris is the capital of France.", "Bananas are yellow and curved fruit."),
}
# A pair's verdicts from the candidate's side, the least favourable to it first: when
# reviewers disagree, the first of theirs in this list stands (the README's rule).
STANDING = (("factual", "candidate"), ("improvement", "candidate"), ("minor", "candidate"), ("ambiguous", None),
            ("wording", None), ("equivalent", None), ("minor", "baseline"), ("improvement", "baseline"),
            ("factual", "baseline"))
# ... and how the verdict counts name each of them
COUNTED_AS = dict(zip(STANDING, ("factual", "improvement_baseline", "minor", "ambiguous", "wording", "equivalent",
                                 "minor_baseline", "improvement", "factual_baseline"), strict=True))


@dataclass(frozen=True)
class PlannedPair:
    outcome: str
    comparable: bool
    reviews: tuple[tuple[str, str | None, str], ...]   # (verdict, the side it goes against, reviewer)


review = st.builds(lambda verdict, reviewer: (*verdict, reviewer), st.sampled_from(STANDING),
                   st.sampled_from(["ana", "bob"]))
planned = st.builds(PlannedPair, st.sampled_from([*TEXTS, "error"]), st.booleans(),
                    # (a reviewer's first verdict on a pair is final: at most one each)
                    st.lists(review, max_size=2, unique_by=lambda r: r[2]).map(tuple))


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One store for every example (a run each): opening one migrates it, which is slow."""
    store = Store.open(Path(tmp_path_factory.mktemp("property")))
    yield store
    store.close()


# the threshold's edge, which random stores reach rarely: half reviewed of 60 % required
@example(pairs=[PlannedPair("near", True, (("wording", None, "ana"),)), PlannedPair("divergent", True, ())], skipped=0,
         finished=True, min_reviewed=0.6, max_errors=0, min_compared=1)
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(planned, max_size=4), skipped=st.integers(0, 2), finished=st.booleans(),
       min_reviewed=st.sampled_from([0.0, 0.5, 0.6, 0.9, 1.0]), max_errors=st.integers(0, 3),
       min_compared=st.integers(1, 3))
def test_pass_only_when_the_readme_condition_holds(shared_store: Store, pairs: list[PlannedPair], skipped: int,
                                                  finished: bool, min_reviewed: float, max_errors: int,
                                                  min_compared: int) -> None:
    store, queue = shared_store, ReviewQueue(shared_store)
    run = store.create_run("replay", {})
    made = []
    for i, p in enumerate(pairs):
        if p.outcome == "error":
            made.append(_pair(f"k{i}", i, "An answer.", Answer(Side.CANDIDATE, "m", error="HTTP 500", status=500)))
        else:
            made.append(_pair(f"k{i}", i, *TEXTS[p.outcome]))
        made[-1] = replace(made[-1], comparable=p.comparable)
    store.add_pairs(run, made)
    stored = {row["key"]: row for row in store.pairs(run)}
    for i, p in enumerate(pairs):
        assert stored[f"k{i}"]["outcome"] == p.outcome
        for verdict, wrong, reviewer in p.reviews:
            queue.add_review(stored[f"k{i}"]["id"], reviewer, verdict, wrong)
    for line in range(skipped):
        store.add_skipped(run, 100 + line, "not JSON")
    if finished:
        store.finish_run(run)

    result = acceptance(store, run, min_reviewed=min_reviewed, max_errors=max_errors, min_compared=min_compared)

    substantive = [p for p in pairs if p.comparable and p.outcome in ("near", "divergent")]
    reviewed = [p for p in substantive if p.reviews]
    errors = sum(p.outcome == "error" for p in pairs)
    compared = sum(p.comparable and p.outcome != "error" for p in pairs)
    against_candidate = [p for p in pairs if any(r[:2] == ("factual", "candidate") for r in p.reviews)]
    share = len(reviewed) / len(substantive) if substantive else 1.0
    # unreviewed pairs with a sign of a factual regression (the changed number) are never let go
    flagged = [p for i, p in enumerate(pairs) if p in substantive and not p.reviews
               and stored[f"k{i}"]["suggested"] == "factual"]
    condition = (finished and not against_candidate and share >= min_reviewed and not flagged
                 and errors + skipped <= max_errors and compared >= min_compared)
    assert (result.decision is Decision.PASS) == condition, result.text()
    assert (result.decision is Decision.FAIL) == bool(against_candidate), result.text()
    # the counts it prints are the store's, as the summary counts them: an identical
    # sampled pair is sampled, not identical
    assert (result.identical, result.errors, result.skipped, result.compared) == (
        sum(p.comparable and p.outcome == "identical" for p in pairs), errors, skipped, compared)
    assert result.sampled == sum(not p.comparable and p.outcome != "error" for p in pairs)
    assert result.pairs == len(pairs)
    assert (result.needs_review, result.unreviewed) == (len(substantive), len(substantive) - len(reviewed))
    assert len(result.factual) == sum(r[:2] == ("factual", "candidate") for p in pairs for r in p.reviews)
    standing = Counter(COUNTED_AS[min((r[:2] for r in p.reviews), key=STANDING.index)] for p in pairs if p.reviews)
    assert result.verdicts == dict(standing), result.text()
    assert f"verdict: {result.decision.name}" in result.text()
    if result.decision is not Decision.PASS:
        assert result.reasons

"""Properties of the acceptance verdict over random runs: PASS only when the PASS
condition of docs/review.md holds, FAIL exactly when a reviewer found the candidate factually wrong,
the counts the verdict prints are the run's, each reviewed pair counts once, under the
verdict least favourable to the candidate, and neither a stricter bar nor a verdict
that finds nothing wrong ever turns a verdict into PASS that was not one.

The verdict is ``decide``, a pure function of the run's tally (the counts the store
reads: tests/store/test_tallies.py shows they are what it holds), so each run is made
up here as a tally, thousands in a second. The condition is computed from the planned
run, not read from the verdict, so that the verdict and this test can disagree:

    PASS  <=>  the run finished (its log unchanged while read, none of its proxies
               short), no factual verdict against the candidate, at least
               --min-reviewed of the comparable pairs changed in substance reviewed,
               none of those with a sign of a factual regression unreviewed (nor
               deleted by retention unreviewed), prompts unchecked (errored pairs, the
               proxy's requests that failed, skipped lines, unanswered pairs, pairs
               whose replica failed) <= --max-errors, no more than --max-capped of the
               comparable pairs cut by the token cap on both sides, and at least
               --min-compared (and at least one) comparable pairs answered by both sides.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from hypothesis import example, given, settings
from hypothesis import strategies as st

from shadowdiff.store.tallies import CappedPairs, PairGroup, Review, RunTally
from shadowdiff.verdict.acceptance import decide
from shadowdiff.verdict.result import Acceptance, Bar
from shadowdiff.vocabulary import Decision, NotCompared, Outcome

# A pair's verdicts from the candidate's side, the least favourable to it first: when
# reviewers disagree, the first of theirs in this list stands (docs/review.md's rule).
STANDING = (("factual", "candidate"), ("improvement", "candidate"), ("minor", "candidate"), ("ambiguous", None),
            ("wording", None), ("equivalent", None), ("minor", "baseline"), ("improvement", "baseline"),
            ("factual", "baseline"))
# ... and how the verdict counts name each of them
COUNTED_AS = dict(zip(STANDING, ("factual", "improvement_baseline", "minor", "ambiguous", "wording", "equivalent",
                                 "minor_baseline", "improvement", "factual_baseline"), strict=True))
# The requests a proxy made no pair of that count against the run (docs/serve.md's list,
# written out here so that it and the code can differ).
FAILED = ("primary_failed", "candidate_4xx", "candidate_left", "drained", "proxy_lost", "proxy_failed")
RANK = {Decision.PASS: 0, Decision.INCOMPLETE: 1, Decision.FAIL: 2}


@dataclass(frozen=True)
class PlannedPair:
    outcome: str
    comparable: bool
    reviews: tuple[tuple[str, str | None, str], ...]   # (verdict, the side it goes against, reviewer)
    flagged: bool = False         # triage saw a sign of a factual regression (suggested: factual)
    replica_failed: bool = False
    copies: int = 1               # as many pairs alike (a group of the store's counts)
    judge: tuple[str, str | None] | None = None   # an LLM judge's suggestion

    @property
    def substantive(self) -> bool:
        return self.comparable and self.outcome in ("near", "divergent")

    @property
    def compared(self) -> bool:
        return self.comparable and self.outcome not in ("error", "unanswered")


@dataclass(frozen=True)
class Serve:
    """What a serve run counted besides the pairs it stored."""

    # pairs it saw and did not keep (identical, sampled, failed), by (outcome, comparable)
    unstored: tuple[tuple[str, bool], ...]
    not_compared: tuple[tuple[str, int], ...]   # requests that made no pair, by why
    dropped: tuple[tuple[str, bool, int], ...]   # pairs compared and never stored, by (outcome, comparable)


@dataclass(frozen=True)
class PlannedRun:
    pairs: list[PlannedPair]
    skipped: int = 0
    finished: bool = True
    log_changed: bool = False
    short_members: int = 0
    capped: int = 0             # comparable pairs cut by the token cap on both sides (at most those)
    unknown: int = 0            # comparable pairs without a finish reason: said, never judged
    pruned: int = 0             # unreviewed pairs changed in substance deleted by retention
    pruned_equivalent: int = 0
    after_reveal: int = 0       # later verdicts of a reviewer on a pair: never counted
    serve: Serve | None = None


def tally_of(run: PlannedRun) -> RunTally:
    """The tally the store would read of the planned run."""
    groups, reviews, pair_id = [], [], 0
    for p in run.pairs:
        judge_verdict, judge_side = p.judge or (None, None)
        groups.append(PairGroup(p.outcome, p.comparable, p.copies, reviewed=bool(p.reviews),
                                replica_failed=p.replica_failed, suggested="factual" if p.flagged else "wording",
                                judge_verdict=judge_verdict, judge_wrong_side=judge_side))
        for _ in range(p.copies):
            pair_id += 1
            reviews += [Review(pair_id, f"k{pair_id}", reviewer, verdict, side)
                        for verdict, side, reviewer in p.reviews]
    compared = sum(p.copies for p in run.pairs if p.compared)
    unanswered = sum(p.copies for p in run.pairs if p.comparable and p.outcome == "unanswered")
    capped = min(run.capped, compared + unanswered)
    counts: dict[tuple[str, str, bool], int] = {}
    if run.serve is not None:
        seen: Counter[tuple[str, bool]] = Counter()
        for p in run.pairs:
            seen[p.outcome, p.comparable] += p.copies
        seen.update(run.serve.unstored)
        counts.update({("pairs", outcome, comparable): n for (outcome, comparable), n in seen.items()})
        if failed := sum(p.copies for p in run.pairs if p.replica_failed):
            counts["noise", "error", False] = failed
        if capped:
            counts["capped", "identical", True] = capped
        counts.update({("not_compared", why, False): n for why, n in run.serve.not_compared})
        counts.update({("dropped", outcome, comparable): n for outcome, comparable, n in run.serve.dropped})
    pruned = {("near", True): run.pruned} if run.pruned else {}
    if run.pruned_equivalent:
        pruned["equivalent", True] = run.pruned_equivalent
    cut = CappedPairs(capped, 0, run.unknown, (16, 16) if capped else (None, None))
    return RunTally(kind="serve" if run.serve else "replay", finished=run.finished,
                    log_changed="3 lines appended" if run.log_changed else None, groups=tuple(groups),
                    reviews=tuple(reviews), after_reveal=run.after_reveal, counts=counts,
                    pruned=pruned, skipped=run.skipped, capped=cut, short_members=run.short_members)


def mostly(value: object, *others: object, times: int = 4) -> st.SearchStrategy[object]:
    """``value`` ``times`` as often as each of ``others``: a run that fails on one thing
    at a time shows each rule, where one failing on many shows none."""
    return st.sampled_from([value] * times + list(others))


# (a factual verdict against the candidate is rarer than the others: most runs do not fail)
review = st.builds(lambda verdict, reviewer: (*verdict, reviewer), st.sampled_from(STANDING[1:] * 3 + STANDING[:1]),
                   st.sampled_from(["ana", "bob"]))
# (every outcome; those that leave nothing unchecked more often)
planned = st.builds(PlannedPair, st.sampled_from([*(o.value for o in Outcome), "identical", "near", "divergent"]),
                    mostly(True, False, times=3),
                    # (a reviewer's first verdict on a pair is final: at most one each)
                    st.lists(review, max_size=2, unique_by=lambda r: r[2]).map(tuple),
                    flagged=mostly(False, True, times=3), replica_failed=mostly(False, True), copies=st.integers(1, 3),
                    judge=st.sampled_from([None, ("factual", "candidate"), ("equivalent", None)]))
serve = st.builds(Serve,
                  st.lists(st.sampled_from([("identical", True), ("identical", False), ("error", True)]),
                           max_size=3).map(tuple),
                  st.lists(st.tuples(st.sampled_from([w.value for w in NotCompared]), st.integers(1, 2)), max_size=2,
                           unique_by=lambda r: r[0]).map(tuple),
                  st.lists(st.tuples(st.sampled_from(["identical", "near", "divergent"]), st.booleans(),
                                     st.integers(1, 2)), max_size=2, unique_by=lambda r: r[:2]).map(tuple))
runs = st.builds(PlannedRun, st.lists(planned, max_size=5), skipped=mostly(0, 1, 2), finished=mostly(True, False),
                 log_changed=mostly(False, True, times=8), short_members=mostly(0, 1, times=8),
                 capped=mostly(0, 1, 3), unknown=mostly(0, 1), pruned=mostly(0, 1, 2), pruned_equivalent=mostly(0, 1),
                 after_reveal=mostly(0, 1), serve=st.none() | serve)
bars = st.builds(Bar, st.sampled_from([0.0, 0.5, 0.6, 0.9, 1.0]), st.integers(0, 4), st.integers(0, 3),
                 st.sampled_from([0.0, 0.25, 0.5, 1.0]))


@dataclass(frozen=True)
class Expected:
    """The counts and the condition, from the plan."""

    pairs: int
    identical: int
    equivalent: int
    errors: int
    sampled: int
    unanswered: int
    compared: int
    replica_errors: int
    needs_review: int
    unreviewed: int
    flagged: int        # unreviewed pairs changed in substance with a sign of a factual regression
    capped_share: float
    against_candidate: int   # factual verdicts against the candidate


def expected(run: PlannedRun) -> Expected:
    pairs = run.pairs
    substantive = [p for p in pairs if p.substantive]
    unreviewed = sum(p.copies for p in substantive if not p.reviews)
    seen = [(p.outcome, p.comparable, p.copies) for p in pairs]
    seen += [(outcome, comparable, 1) for outcome, comparable in (run.serve.unstored if run.serve else ())]
    compared = sum(n for outcome, comparable, n in seen if comparable and outcome not in ("error", "unanswered"))
    unanswered = sum(n for outcome, comparable, n in seen if comparable and outcome == "unanswered")
    dropped = sum(n for outcome, comparable, n in run.serve.dropped if comparable and outcome != "identical") \
        if run.serve else 0
    capped = min(run.capped, sum(p.copies for p in pairs if p.compared or (p.comparable and p.outcome == "unanswered")))
    return Expected(
        pairs=sum(n for *_, n in seen),
        identical=sum(n for outcome, comparable, n in seen if comparable and outcome == "identical"),
        equivalent=sum(p.copies for p in pairs if p.comparable and p.outcome == "equivalent" and not p.reviews)
        + run.pruned_equivalent,
        errors=sum(n for outcome, _, n in seen if outcome == "error")
        + (sum(n for why, n in run.serve.not_compared if why in FAILED) if run.serve else 0),
        sampled=sum(n for outcome, comparable, n in seen if not comparable and outcome != "error"),
        unanswered=unanswered, compared=compared,
        replica_errors=sum(p.copies for p in pairs if p.replica_failed),
        needs_review=sum(p.copies for p in substantive) + dropped + run.pruned,
        unreviewed=unreviewed + dropped + run.pruned,
        flagged=sum(p.copies for p in substantive if not p.reviews and p.flagged),
        capped_share=capped / (compared + unanswered) if capped else 0.0,
        against_candidate=sum(p.copies * sum(r[:2] == ("factual", "candidate") for r in p.reviews) for p in pairs))


def passes(run: PlannedRun, bar: Bar, e: Expected) -> bool:
    """The PASS condition of docs/review.md (the module docstring), on the plan."""
    share = 1 - e.unreviewed / e.needs_review if e.needs_review else 1.0
    unchecked = e.errors + run.skipped + e.unanswered + e.replica_errors
    return (run.finished and not run.log_changed and not run.short_members and not e.against_candidate
            and share >= bar.min_reviewed and not e.flagged and not run.pruned and unchecked <= bar.max_errors
            and e.capped_share <= bar.max_capped and e.compared >= max(bar.min_compared, 1))


# the threshold's edge, which random runs reach rarely: half reviewed of 60 % required
@example(run=PlannedRun([PlannedPair("near", True, (("wording", None, "ana"),)), PlannedPair("divergent", True, ())]),
         bar=Bar(min_reviewed=0.6))
# --min-compared 0 still needs something compared
@example(run=PlannedRun([PlannedPair("unanswered", True, ())]), bar=Bar(min_compared=0, max_errors=1))
@settings(max_examples=1000, deadline=None)
@given(run=runs, bar=bars)
def test_pass_only_when_the_readme_condition_holds(run: PlannedRun, bar: Bar) -> None:
    result = decide(tally_of(run), bar)
    e = expected(run)
    assert (result.decision is Decision.PASS) == passes(run, bar, e), result.text()
    assert (result.decision is Decision.FAIL) == bool(e.against_candidate), result.text()
    assert f"verdict: {result.decision.name}" in result.text()
    if result.decision is not Decision.PASS:
        assert result.reasons
    else:
        # never a PASS on what was not checked
        assert result.compared >= 1 and result.unchecked <= bar.max_errors and not result.pruned_unreviewed
        assert "factual" not in result.suggested_unreviewed
    assert_counts(result, run, e)


def assert_counts(result: Acceptance, run: PlannedRun, e: Expected) -> None:
    """The counts the verdict prints are the run's, as the summary counts them: an
    identical sampled pair is sampled, not identical; a serve run's pairs are those it
    saw, stored or not."""
    assert (result.pairs, result.identical, result.equivalent, result.errors, result.sampled) == (
        e.pairs, e.identical, e.equivalent, e.errors, e.sampled)
    assert (result.unanswered, result.compared, result.replica_errors, result.skipped) == (
        e.unanswered, e.compared, e.replica_errors, run.skipped)
    assert (result.needs_review, result.unreviewed, result.pruned_unreviewed) == (
        e.needs_review, e.unreviewed, run.pruned)
    assert len(result.factual) == e.against_candidate
    # each reviewed pair once, under the verdict least favourable to the candidate
    standing = Counter()
    for p in run.pairs:
        if p.reviews:
            standing[COUNTED_AS[min((r[:2] for r in p.reviews), key=STANDING.index)]] += p.copies
    assert result.verdicts == dict(standing), result.text()
    assert result.after_reveal == run.after_reveal
    unreviewed = [p for p in run.pairs if p.substantive and not p.reviews]
    assert result.suggested_unreviewed == _suggested(unreviewed)
    judged = Counter()
    for p in unreviewed:
        if p.judge:
            judged["factual (candidate wrong)" if p.judge[0] == "factual" else p.judge[0]] += p.copies
    assert result.judge_unreviewed == dict(judged)


def _suggested(unreviewed: list[PlannedPair]) -> dict[str, int]:
    counted: Counter[str] = Counter()
    for p in unreviewed:
        counted["factual" if p.flagged else "wording"] += p.copies
    return dict(counted)


@settings(max_examples=300, deadline=None)
@given(run=runs, bar=bars, stricter=st.tuples(st.sampled_from([0.0, 0.1, 0.5]), st.integers(0, 2), st.integers(0, 2),
                                              st.sampled_from([0.0, 0.25])))
def test_a_stricter_bar_never_decides_better(run: PlannedRun, bar: Bar,
                                             stricter: tuple[float, int, int, float]) -> None:
    """Monotone in the bar: more reviewed, fewer errors, more compared or fewer capped
    required never turns INCOMPLETE into PASS, nor FAIL into anything else (a factual
    regression fails the run whatever the bar)."""
    tally = tally_of(run)
    more, fewer_errors, more_compared, fewer_capped = stricter
    strict = Bar(min(bar.min_reviewed + more, 1.0), max(bar.max_errors - fewer_errors, 0),
                 bar.min_compared + more_compared, max(bar.max_capped - fewer_capped, 0.0))
    lenient, harsh = decide(tally, bar), decide(tally, strict)
    assert RANK[harsh.decision] >= RANK[lenient.decision], (lenient.text(), harsh.text())
    assert (harsh.decision is Decision.FAIL) == (lenient.decision is Decision.FAIL)


@settings(max_examples=300, deadline=None)
@given(run=runs, bar=bars, which=st.integers(0, 4), verdict=st.sampled_from(STANDING[1:]))
def test_a_review_that_finds_nothing_factual_never_decides_worse(run: PlannedRun, bar: Bar, which: int,
                                                                 verdict: tuple[str, str | None]) -> None:
    """Monotone in the evidence: reviewing an unreviewed pair with any verdict but a factual
    one against the candidate never turns a PASS (or an INCOMPLETE) into something worse."""
    unreviewed = [i for i, p in enumerate(run.pairs) if p.substantive and not p.reviews]
    if not unreviewed:
        return
    i = unreviewed[which % len(unreviewed)]
    pairs = list(run.pairs)
    pairs[i] = replace(pairs[i], reviews=((*verdict, "ana"),))
    before, after = decide(tally_of(run), bar), decide(tally_of(replace(run, pairs=pairs)), bar)
    assert RANK[after.decision] <= RANK[before.decision], (before.text(), after.text())


def test_a_tally_decides_as_the_same_tally_again() -> None:
    """A pure function: the same tally and bar give the same verdict, to the byte."""
    run = PlannedRun([PlannedPair("near", True, (("minor", "candidate", "ana"), ("wording", None, "bob")), copies=2),
                      PlannedPair("divergent", True, (), flagged=True), PlannedPair("identical", False, ())],
                     skipped=1, capped=1, after_reveal=1)
    tally = tally_of(run)
    first: Acceptance = decide(tally, Bar(min_reviewed=0.5))
    again = decide(tally, Bar(min_reviewed=0.5))
    assert first.as_json() == again.as_json() and first.text() == again.text()
    assert first.decision is Decision.INCOMPLETE

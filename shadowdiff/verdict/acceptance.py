"""The acceptance verdict: does the candidate pass?

The bar, from the manual check this tool automates: zero cases where the candidate
gets a fact or number wrong that the baseline got right. Every pair whose answers
differ in substance (``near`` or ``divergent``, decoded deterministically) needs a
person's verdict; one ``factual`` verdict against the candidate fails the run, and
until enough pairs are reviewed the run is incomplete. An LLM judge's suggestion
never counts - only a person's verdict does.

The verdicts are counted from the candidate's side: each directional verdict
(``factual``, ``minor``, ``improvement``) names the side it goes against, and is
counted under its own name when that is the candidate (``factual``: the candidate
wrong, ``minor``: slightly worse; ``improvement``: the candidate better, so against the
baseline) and under ``<verdict>_baseline`` for the same verdict about the baseline
(``factual_baseline``: the baseline wrong and the candidate right; ``minor_baseline``:
the baseline slightly worse; ``improvement_baseline``: the baseline better). When
reviewers disagree on a pair, the verdict least favourable to the candidate stands,
in the order of ``STANDING``.

Counting and deciding are apart: the store reads a run's tally (``run_tally``, in
``shadowdiff.store.tallies``: every query), and ``decide`` turns a tally into the
verdict, a pure function whose policy is one named rule per reason a run can fail or
stay incomplete. ``acceptance`` is the two together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shadowdiff.answers.records import side_against
from shadowdiff.store import Store

# (the run settings replay writes, read by the tally: importable from here as before)
from shadowdiff.store.tallies import LOG_CHANGED as LOG_CHANGED
from shadowdiff.store.tallies import STOPPED_BY_LOG as STOPPED_BY_LOG
from shadowdiff.store.tallies import PairGroup, Review, RunTally, run_tally
from shadowdiff.verdict.agreement import agreement_of
from shadowdiff.verdict.gates import MAX_CAPPED
from shadowdiff.verdict.result import DEFAULT_BAR, STANDING, Acceptance, Bar
from shadowdiff.verdict.rules import RULES, no_factual_regression
from shadowdiff.vocabulary import (
    NOT_COMPARED_ERRORS,
    SUBSTANTIVE,
    Decision,
    Outcome,
    Side,
    Standing,
    Tally,
    Verdict,
)

# A directional verdict by the side it goes against (the keys of ``Acceptance.verdicts``
# are ``Standing`` members: the candidate's side of each verdict).
_ORIENTED = {
    (Verdict.FACTUAL, Side.CANDIDATE): Standing.FACTUAL, (Verdict.FACTUAL, Side.BASELINE): Standing.FACTUAL_BASELINE,
    (Verdict.MINOR, Side.CANDIDATE): Standing.MINOR, (Verdict.MINOR, Side.BASELINE): Standing.MINOR_BASELINE,
    (Verdict.IMPROVEMENT, Side.BASELINE): Standing.IMPROVEMENT,
    (Verdict.IMPROVEMENT, Side.CANDIDATE): Standing.IMPROVEMENT_BASELINE,
}
# When reviewers disagree on a pair, the verdict least favourable to the candidate stands:
# ``Standing``'s order, from the worst for the candidate to the best.
_SEVERITY: dict[str, int] = {name: len(STANDING) - i for i, name in enumerate(STANDING)}
def oriented(verdict: str, wrong_side: str | None) -> Standing:
    """A stored verdict (and the side it goes against) as a key of ``Acceptance.verdicts``."""
    checked = Verdict(verdict)
    side = side_against(checked, wrong_side)
    return Standing(checked.value) if side is None else _ORIENTED[checked, side]


def acceptance(store: Store, run_id: str, *, min_reviewed: float = 1.0, max_errors: int = 0,
               min_compared: int = 1, max_capped: float = MAX_CAPPED, without_review: bool = False) -> Acceptance:
    """Decide PASS / FAIL / INCOMPLETE for a run (see the module docstring): the store's
    tally of it (``shadowdiff.store.tallies``), decided on by ``decide``."""
    return decide(run_tally(store, run_id), Bar(min_reviewed, max_errors, min_compared, max_capped, without_review))


def decide(tally: RunTally, bar: Bar = DEFAULT_BAR) -> Acceptance:
    """The verdict on a run's tally: a reviewer's factual verdict against the candidate
    fails it; else each rule of ``RULES`` in turn may leave it INCOMPLETE, with its reason.
    A pure function: the same tally and bar give the same verdict."""
    result = _count(tally)
    result.thresholds = {"min_reviewed": bar.min_reviewed, "max_errors": bar.max_errors,
                         "min_compared": bar.min_compared, **({"without_review": 1} if bar.without_review else {})}
    no_factual_regression(result, tally, bar)
    if result.decision is Decision.FAIL:
        return result   # (no other rule is applied to a run that failed)
    for rule in RULES:
        rule(result, tally, bar)
    return result


def _count(tally: RunTally) -> Acceptance:
    """The run's counts, as the summary counts them, and no decision yet (PASS)."""
    result = Acceptance(Decision.PASS)
    compared = _count_pairs(result, tally.groups)
    # the token cap is judged on the stored pairs (a serve run keeps identical ones at its --keep-rate)
    c = tally.capped
    considered = compared + result.unanswered
    result.capped = {"pairs": c.pairs, "unanswered": c.unanswered, "of": considered, "unknown": c.unknown,
                     "share": c.pairs / considered if considered else 0.0, "tokens": list(c.tokens)}
    if tally.counts:
        compared = _count_seen(result, tally.counts)
    _count_pruned(result, tally.pruned)
    _count_reviews(result, tally.reviews, tally.after_reveal)
    result.skipped = tally.skipped
    result.compared = compared
    return result


@dataclass(frozen=True)
class _Split:
    """Pairs in one set of counts, as the summary counts them: every pair is an error,
    sampled (not comparable), unanswered (comparable, no answer on either side) or
    compared (both answered: the evidence a PASS needs); some of the compared identical."""

    pairs: int = 0
    errors: int = 0
    sampled: int = 0
    unanswered: int = 0
    compared: int = 0
    identical: int = 0


def _split(rows: Iterable[tuple[str, bool, int]]) -> _Split:
    """Split pairs counted by (outcome, comparable) as the summary does."""
    pairs = errors = sampled = unanswered = compared = identical = 0
    for outcome, comparable, n in rows:
        pairs += n
        if outcome == Outcome.ERROR:
            errors += n
        elif not comparable:
            sampled += n
        elif outcome == Outcome.UNANSWERED:
            unanswered += n
        else:
            compared += n
            identical += n if outcome == Outcome.IDENTICAL else 0
    return _Split(pairs, errors, sampled, unanswered, compared, identical)


def _take(result: Acceptance, split: _Split) -> int:
    """Set ``result``'s counts of pairs to ``split``'s; the pairs compared."""
    result.pairs, result.errors, result.sampled = split.pairs, split.errors, split.sampled
    result.unanswered, result.identical = split.unanswered, split.identical
    return split.compared


def _count_pairs(result: Acceptance, groups: Sequence[PairGroup]) -> int:
    """Count the stored pairs into ``result``; the pairs compared."""
    compared = _take(result, _split((g.outcome, g.comparable, g.n) for g in groups))
    suggested: Counter[str] = Counter()
    judged: Counter[str] = Counter()
    for g in groups:
        result.replica_errors += g.n if g.replica_failed else 0
        # (a reviewed equivalent pair is counted under its verdict)
        result.equivalent += g.n if g.comparable and g.outcome == Outcome.EQUIVALENT and not g.reviewed else 0
        if g.outcome in SUBSTANTIVE and g.comparable:
            result.needs_review += g.n
            if not g.reviewed:
                result.unreviewed += g.n
                suggested[g.suggested or "unknown"] += g.n
                if g.judge_verdict:
                    judged[_judged(g)] += g.n
    result.suggested_unreviewed = dict(suggested)
    result.judge_unreviewed = dict(judged)
    return compared


def _judged(group: PairGroup) -> str:
    """An LLM judge's suggestion, with the side it calls wrong when it calls one factual."""
    factual = group.judge_verdict == Verdict.FACTUAL.value and group.judge_wrong_side
    return f"{group.judge_verdict}{f' ({group.judge_wrong_side} wrong)' if factual else ''}"


def _count_seen(result: Acceptance, seen: Mapping[tuple[str, str, bool], int]) -> int:
    """Count what a serve run saw (its counts table) over the stored pairs: it keeps
    identical, sampled and failed pairs at --keep-rate (every pair that needs a verdict is
    stored). The pairs compared."""
    table: dict[str, dict[tuple[str, bool], int]] = {}
    for (of, outcome, comparable), n in seen.items():
        table.setdefault(of, {})[outcome, comparable] = n
    compared = _take(result, _split((outcome, comparable, n)
                                    for (outcome, comparable), n in table.get("pairs", {}).items()))
    result.replica_errors = sum(n for (outcome, _), n in table.get("noise", {}).items() if outcome == Outcome.ERROR)
    _count_capped_seen(result, table.get(Tally.CAPPED, {}), compared)
    # a primary that failed cost a pair, as a failed side does in a replay
    result.errors += sum(n for (why, _), n in table.get(Tally.NOT_COMPARED, {}).items() if why in NOT_COMPARED_ERRORS)
    # changed pairs the store never got need a verdict they can never have: unreviewed for good
    result.dropped = sum(n for (outcome, comparable), n in table.get(Tally.DROPPED, {}).items()
                         if comparable and outcome in SUBSTANTIVE)
    result.needs_review += result.dropped
    result.unreviewed += result.dropped
    return compared


def _count_capped_seen(result: Acceptance, seen: Mapping[tuple[str, bool], int], compared: int) -> None:
    """Count every pair a serve run saw cut by the cap, stored or not (the tokens: of the stored ones)."""
    if capped := {outcome: n for (outcome, _), n in seen.items()}:
        considered = compared + result.unanswered
        result.capped.update(pairs=sum(capped.values()), unanswered=capped.get(Outcome.UNANSWERED, 0),
                             of=considered, share=sum(capped.values()) / considered if considered else 0.0)


def _count_pruned(result: Acceptance, pruned: Mapping[tuple[str, bool], int]) -> None:
    """Count the pairs deleted by retention, never a reviewed pair: one that needed a
    verdict still lacks it, so that a prune never turns an INCOMPLETE run into a PASS."""
    for (outcome, comparable), n in pruned.items():
        if outcome in SUBSTANTIVE and comparable:
            result.needs_review += n
            result.unreviewed += n
            result.pruned_unreviewed += n
        elif outcome == Outcome.EQUIVALENT and comparable:
            result.equivalent += n


def _count_reviews(result: Acceptance, reviews: Sequence[Review], after_reveal: int) -> None:
    """Count each reviewed pair once, under the verdict least favourable to the
    candidate, and list the factual verdicts against it. Only a reviewer's first verdict
    on a pair (the blind one) counts: older builds took more after the reveal, which would
    let one who has seen the sides decide the run."""
    result.after_reveal = after_reveal
    if after_reveal:
        result.warnings.append(f"{after_reveal} {'verdict' if after_reveal == 1 else 'verdicts'} "
                               "given by a reviewer to a pair they had already judged (after its reveal, by an "
                               "older shadowdiff) not counted: only each reviewer's first, blind verdict is")
    by_pair: dict[int, set[str]] = {}
    for review in reviews:
        kind = oriented(review.verdict, review.wrong_side)
        by_pair.setdefault(review.pair_id, set()).add(kind)
        if kind == Standing.FACTUAL:
            result.factual.append({"pair_id": review.pair_id, "key": review.key,
                                   "reviewer": review.reviewer, "note": review.note})
    result.agreement = agreement_of(reviews)
    result.disagreements = len(result.agreement.disagreements)
    result.verdicts = dict(Counter(max(kinds, key=_SEVERITY.__getitem__) for kinds in by_pair.values()))

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
from dataclasses import dataclass, field
from typing import Any

from shadowdiff.answers.invisible import safe_text
from shadowdiff.answers.records import side_against
from shadowdiff.statistics import confidence
from shadowdiff.store import Store

# (the run settings replay writes, read by the tally: importable from here as before)
from shadowdiff.store.tallies import LOG_CHANGED as LOG_CHANGED
from shadowdiff.store.tallies import STOPPED_BY_LOG as STOPPED_BY_LOG
from shadowdiff.store.tallies import PairGroup, Review, RunTally, run_tally
from shadowdiff.verdict.agreement import Agreement, agreement_of
from shadowdiff.verdict.gates import MAX_CAPPED
from shadowdiff.verdict.rules import RULES, no_factual_regression, share
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
STANDING = tuple(Standing)
_SEVERITY: dict[str, int] = {name: len(STANDING) - i for i, name in enumerate(STANDING)}
# Each count in words (one, many), in the order the report prints them.
_WORDS: dict[str, tuple[str, str]] = {
    Standing.FACTUAL: ("factual regression", "factual regressions"),
    Standing.IMPROVEMENT_BASELINE: ("pair where the baseline is better", "pairs where the baseline is better"),
    Standing.MINOR: ("minor regression", "minor regressions"),
    Standing.IMPROVEMENT: ("improvement", "improvements"),
    Standing.MINOR_BASELINE: ("pair where the baseline is slightly worse",
                              "pairs where the baseline is slightly worse"),
    Standing.FACTUAL_BASELINE: ("pair where the baseline is factually wrong and the candidate right",
                                "pairs where the baseline is factually wrong and the candidate right"),
}


# Each verdict from the candidate's side in the reports' tables, in the order of ``STANDING``.
VERDICT_LABELS = {
    Standing.FACTUAL: "factual: the candidate wrong (a regression: fails the run)",
    Standing.IMPROVEMENT_BASELINE: "improvement: the baseline better",
    Standing.MINOR: "minor: the candidate slightly worse",
    Standing.AMBIGUOUS: "ambiguous",
    Standing.WORDING: "wording only",
    Standing.EQUIVALENT: "equivalent",
    Standing.MINOR_BASELINE: "minor: the baseline slightly worse",
    Standing.IMPROVEMENT: "improvement: the candidate better",
    Standing.FACTUAL_BASELINE: "factual: the baseline wrong, the candidate right (not a regression)",
}


def oriented(verdict: str, wrong_side: str | None) -> Standing:
    """A stored verdict (and the side it goes against) as a key of ``Acceptance.verdicts``."""
    checked = Verdict(verdict)
    side = side_against(checked, wrong_side)
    return Standing(checked.value) if side is None else _ORIENTED[checked, side]


def counted(n: int, key: str) -> str:
    """``n`` pairs of a verdict key, in words: "1 minor regression", "2 improvements"."""
    one, many = _WORDS[key]
    return f"{n} {one if n == 1 else many}"


@dataclass
class Acceptance:
    decision: Decision
    identical: int = 0
    equivalent: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    unreviewed: int = 0
    needs_review: int = 0
    errors: int = 0
    skipped: int = 0          # log lines (or saved answers) that made no pair
    compared: int = 0         # comparable pairs both sides answered: the evidence a PASS needs
    pairs: int = 0            # every pair made: compared + unanswered + sampled + errors
    unanswered: int = 0       # comparable pairs where neither side reached an answer: nothing compared
    replica_errors: int = 0   # pairs whose replica failed: no noise floor for that prompt
    capped: dict[str, Any] = field(default_factory=dict)   # pairs cut by the token cap on both sides
    warnings: list[str] = field(default_factory=list)      # what the reader must know; no gate decided on it
    dropped: int = 0          # of needs_review: pairs a proxy compared but could not store (never reviewable)
    sampled: int = 0
    disagreements: int = 0    # pairs where two different reviewers' verdicts differ
    after_reveal: int = 0     # verdicts a reviewer gave a pair they had judged (older builds): not counted
    suggested_unreviewed: dict[str, int] = field(default_factory=dict)
    judge_unreviewed: dict[str, int] = field(default_factory=dict)   # the LLM judge's suggestions
    pruned_unreviewed: int = 0   # of the unreviewed, deleted by retention: they can no longer be reviewed
    factual: list[dict[str, Any]] = field(default_factory=list)   # the failing pairs
    reasons: list[str] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=dict)   # what the decision was made with
    # each gate's value and where it came from (``shadowdiff.verdict.gates.Gates.as_json``), once resolved
    gates: dict[str, Any] = field(default_factory=dict)
    agreement: Agreement = field(default_factory=lambda: agreement_of(()))   # between reviewers

    def as_json(self) -> dict[str, Any]:
        return {"decision": self.decision.name, "identical": self.identical, "equivalent": self.equivalent,
                "verdicts": self.verdicts, "unreviewed": self.unreviewed, "needs_review": self.needs_review,
                "errors": self.errors, "skipped": self.skipped, "compared": self.compared, "sampled": self.sampled,
                "pairs": self.pairs, "unanswered": self.unanswered, "replica_errors": self.replica_errors,
                "capped": self.capped, "warnings": self.warnings,
                "dropped": self.dropped,
                "disagreements": self.disagreements, "after_reveal": self.after_reveal,
                "suggested_unreviewed": self.suggested_unreviewed, "judge_unreviewed": self.judge_unreviewed,
                "pruned_unreviewed": self.pruned_unreviewed, "factual": self.factual,
                "reasons": self.reasons, "thresholds": self.thresholds, "gates": self.gates,
                "agreement": self.agreement.as_json(),
                "factual_rate_upper": self.factual_rate_upper}

    @property
    def factual_rate_upper(self) -> dict[str, Any] | None:
        """How high the rate of factual regressions may still be, given the reviews: the
        exact one-sided 95 % bound (Clopper–Pearson) from k factual verdicts against the
        candidate in n reviewed pairs, and what it allows per compared prompt if the
        unreviewed pairs changed in substance are like the reviewed ones (identical and
        equivalent pairs carry no regression). None before any review."""
        reviewed = sum(self.verdicts.values())
        if not reviewed:
            return None
        k = self.verdicts.get(Standing.FACTUAL, 0)
        upper = confidence.rate_upper(k, reviewed)
        per_prompt = upper * self.needs_review / self.compared if self.compared else None
        return {"factual": k, "reviewed": reviewed, "upper": upper, "confidence": confidence.CONFIDENCE,
                "per_compared_prompt_upper": per_prompt}

    def gate(self, excess: dict[str, Any] | None, max_excess: float | None, max_rate: float | None) -> None:
        """The gates on how sure the run is (``report --max-excess-divergence``,
        ``--max-factual-rate``): FAIL when the excess over the noise floor is surely above
        its limit (the interval's lower bound exceeds it); PASS on it only when the whole
        interval is within it; INCOMPLETE between the two, and, for a run that would pass,
        while the regression rate may still be above its limit (more reviews decide)."""
        if excess is not None and noisy_replica(excess):
            self.warnings.append(
                f"the replica changed as many answers as the candidate or more "
                f"({excess['replica_changed'] * 100:.1f} % vs "
                f"{excess['candidate_changed'] * 100:.1f} % of the same {excess['pairs']:,} prompts): a noise floor "
                "this high hides the candidate's own changes; check that the replica runs the baseline's exact "
                "configuration (same engine, version, flags and batch invariance)")
        if max_excess is not None:
            self.thresholds["max_excess_divergence"] = max_excess
            if excess is None:
                self._incomplete("--max-excess-divergence needs a noise floor: replay with --replica (and a "
                                 "prompt both the candidate and the replica answered)")
            elif excess["low"] > max_excess:
                self.decision = Decision.FAIL
                self.reasons.append(f"the candidate changes at least {excess['low'] * 100:.1f} points more answers "
                                    f"than the noise floor (95 %, on the {excess['pairs']:,} prompts the candidate "
                                    f"and the replica both answered), above --max-excess-divergence "
                                    f"{max_excess * 100:g} points")
            elif excess["high"] > max_excess:
                self._incomplete(f"the excess over the noise floor may still be {excess['high'] * 100:+.1f} points "
                                 f"(95 % interval {excess['low'] * 100:+.1f} to {excess['high'] * 100:+.1f}, on the "
                                 f"{excess['pairs']:,} prompts the candidate and the replica both answered), above "
                                 f"--max-excess-divergence {max_excess * 100:g} points: more prompts (or a quieter "
                                 "replica) narrow it")
        if max_rate is not None:
            self.thresholds["max_factual_rate"] = max_rate
            bound = self.factual_rate_upper
            k, n = (bound["factual"], bound["reviewed"]) if bound else (0, 0)
            upper = bound["upper"] if bound else 1.0
            if upper > max_rate:
                more = self._more_reviews(max_rate)
                self._incomplete(f"{k} factual in {n} reviewed allows a regression rate up to {upper * 100:.1f} %, "
                                 f"above --max-factual-rate {max_rate * 100:g} %: {more} more reviewed pairs without "
                                 "a factual regression would bring it below")

    def gate_flips(self, flips: dict[str, Any] | None, max_flips: int | None) -> None:
        """The gate on flips (``--max-flips``): FAIL when more pairs than ``max_flips`` went
        from right (the baseline) to wrong (the candidate) by their reference answers;
        INCOMPLETE when nothing was graded, for a gate that checked nothing must not pass."""
        if max_flips is None:
            return
        self.thresholds["max_flips"] = max_flips
        if flips is None:
            self._incomplete("--max-flips needs pairs graded against a reference answer, and this run has none "
                             "(give each prompt a reference: the log's reference field or replay --references)")
        elif not flips["graded"]:
            self._incomplete(f"--max-flips: {flips['references']} pairs had a reference answer and none could be "
                             "graded on both sides" + (f" ({flips['ungradable_answers']} answers the grader could not "
                                                       "grade)" if flips["ungradable_answers"] else ""))
        elif flips["correct_to_wrong"] > max_flips:
            self.decision = Decision.FAIL
            self.reasons.append(f"{flips['correct_to_wrong']} correct→wrong flips (the baseline right, the candidate "
                                f"wrong, by the reference answers) in {flips['graded']} graded pairs, above "
                                f"--max-flips {max_flips}")
        elif flips["ungradable_answers"]:
            self._incomplete(f"--max-flips: {flips['ungradable_answers']} answers could not be graded (a pattern "
                             "out of time), and a flip among them would be unseen")

    @property
    def unchecked(self) -> int:
        """Prompts the run did not check (what --max-errors allows): pairs that failed, log
        lines that made none, pairs where neither side answered, and pairs whose replica failed
        (their noise floor is unknown)."""
        return self.errors + self.skipped + self.unanswered + self.replica_errors

    def unchecked_parts(self) -> list[str]:
        cut = self.capped.get(Outcome.UNANSWERED, 0)
        parts = [(self.errors, f"{self.errors} pairs could not be compared (errors)"),
                 (self.skipped, f"{self.skipped} log lines made no pair (skipped)"),
                 (self.unanswered, f"{self.unanswered} pairs where neither side reached an answer"
                                   + (f" ({cut} cut by the token cap inside their thinking or before their first "
                                      "word: replay with a larger --max-tokens)" if cut else "")),
                 (self.replica_errors, f"{self.replica_errors} pairs whose replica failed (no noise floor for them)")]
        return [text for n, text in parts if n]

    def capped_text(self) -> str | None:
        """The pairs cut by the token cap on both sides, in words (None when there are none)."""
        c = self.capped
        if not c or not c["pairs"]:
            return None
        low, high = c["tokens"]
        over = ("" if high is None else f", compared over their first {high:,} tokens" if low == high
                else f", compared over their first {low:,} to {high:,} tokens")
        before = f"; {c['unanswered']} of them before any answer" if c["unanswered"] else ""
        return (f"{c['pairs']:,} of {c['of']:,} comparable pairs ({share(c['share'])}) hit the token cap on both "
                f"sides{over}{before}")

    def _more_reviews(self, target: float) -> int:
        """How many more reviewed pairs, none a factual regression, bound the rate at ``target``."""
        reviewed = sum(self.verdicts.values())
        return confidence.reviews_needed(target, self.verdicts.get(Standing.FACTUAL, 0)) - reviewed

    def _incomplete(self, reason: str) -> None:
        if self.decision is not Decision.FAIL:
            self.decision = Decision.INCOMPLETE
        self.reasons.append(reason)

    def bound_text(self) -> str | None:
        bound = self.factual_rate_upper
        if bound is None:
            return None
        line = (f"{bound['factual']} factual in {bound['reviewed']} reviewed: the rate among pairs changed in "
                f"substance may still be up to {bound['upper'] * 100:.1f} % (95 %, exact)")
        if bound["per_compared_prompt_upper"] is not None:
            line += (f", {bound['per_compared_prompt_upper'] * 100:.1f} % of all compared prompts if the unreviewed "
                     "are like the reviewed")
        more = self._more_reviews(0.05)
        if more <= 0:
            return line
        return line + f"; {more} more reviewed pairs without a factual regression would bound it below 5 %"

    def verdict_rows(self) -> list[tuple[str, int]]:
        """Reviewed pairs by the verdict that stands, in words, least favourable to the candidate first."""
        return [(VERDICT_LABELS[key], self.verdicts.get(key, 0)) for key in STANDING]

    def text(self) -> str:
        v = self.verdicts
        lines = [
            f"{self.identical} identical, {self.equivalent + v.get(Standing.EQUIVALENT, 0)} equivalent, "
            f"{v.get(Standing.WORDING, 0)} wording-only, {v.get(Standing.AMBIGUOUS, 0)} ambiguous, "
            f"{self.unreviewed} unreviewed" + (f", {self.unanswered} unanswered" if self.unanswered else "")
            + (f", {self.sampled} sampled (not compared)" if self.sampled else "")
            + (f", {self.errors} errors" if self.errors else "")
            + (f", {self.skipped} skipped lines" if self.skipped else ""),
            "against the candidate: " + ", ".join(
                counted(v.get(k, 0), k)
                for k in (Standing.FACTUAL, Standing.IMPROVEMENT_BASELINE, Standing.MINOR)),
            "for the candidate: " + ", ".join(
                counted(v.get(k, 0), k)
                for k in (Standing.IMPROVEMENT, Standing.MINOR_BASELINE, Standing.FACTUAL_BASELINE)),
        ]
        if self.suggested_unreviewed:
            lines.append("unreviewed, by suggestion: " + ", ".join(
                f"{n} {k}" for k, n in sorted(self.suggested_unreviewed.items(), key=lambda kv: -kv[1])))
        if self.judge_unreviewed:
            lines.append("unreviewed, by the LLM judge's suggestion (not counted): " + ", ".join(
                f"{n} {k}" for k, n in sorted(self.judge_unreviewed.items(), key=lambda kv: -kv[1])))
        if self.pruned_unreviewed:
            lines.append(f"{self.pruned_unreviewed} of the unreviewed pairs were deleted by retention (shadowdiff "
                         "prune, serve --retain) before anyone gave a verdict: they can no longer be reviewed")
        if bound := self.bound_text():
            lines.append(bound)
        lines += [f"note: {warning}" for warning in self.warnings]
        lines.append(f"verdict: {self.decision.name}" + (f" - {'; '.join(self.reasons)}" if self.reasons else ""))
        if self.gates:
            lines.append("gates: " + "; ".join(g["text"] for g in self.gates.values()))
        for f in self.factual:
            # keys, reviewers and notes come from logs and people: one line each, whatever they hold
            lines.append(f"  factual regression: pair {safe_text(f['key'])} (id {f['pair_id']}), the candidate is "
                         f"wrong according to {safe_text(f['reviewer'])}"
                         + (f": {safe_text(f['note'])}" if f["note"] else ""))
        if agreement := self.agreement.text():
            lines.append(agreement)
        return "\n".join(lines)


@dataclass(frozen=True)
class Bar:
    """What a run must reach to pass (``report``'s gates of the same names)."""

    min_reviewed: float = 1.0   # the share of the pairs changed in substance reviewed
    max_errors: int = 0         # prompts left unchecked (``Acceptance.unchecked``)
    min_compared: int = 1       # comparable pairs both sides answered
    max_capped: float = MAX_CAPPED   # the share of them cut by the token cap on both sides


def acceptance(store: Store, run_id: str, *, min_reviewed: float = 1.0, max_errors: int = 0,
               min_compared: int = 1, max_capped: float = MAX_CAPPED) -> Acceptance:
    """Decide PASS / FAIL / INCOMPLETE for a run (see the module docstring): the store's
    tally of it (``shadowdiff.store.tallies``), decided on by ``decide``."""
    return decide(run_tally(store, run_id), Bar(min_reviewed, max_errors, min_compared, max_capped))


def decide(tally: RunTally, bar: Bar = Bar()) -> Acceptance:
    """The verdict on a run's tally: a reviewer's factual verdict against the candidate
    fails it; else each rule of ``RULES`` in turn may leave it INCOMPLETE, with its reason.
    A pure function: the same tally and bar give the same verdict."""
    result = _count(tally)
    result.thresholds = {"min_reviewed": bar.min_reviewed, "max_errors": bar.max_errors,
                         "min_compared": bar.min_compared}
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


def noisy_replica(excess: dict[str, Any]) -> bool:
    """Whether the replica (a second baseline) changed at least as many answers as the
    candidate: a noise floor that high hides the candidate's own changes."""
    return bool(excess["replica_changed"] > 0 and excess["replica_changed"] >= excess["candidate_changed"])

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
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from shadowdiff.answers.invisible import safe_text
from shadowdiff.answers.records import side_against
from shadowdiff.statistics import confidence
from shadowdiff.store import Store, schema
from shadowdiff.store.members import STALE_AFTER, RunMembers
from shadowdiff.store.prune import pruned_counts
from shadowdiff.store.review import first_verdicts
from shadowdiff.verdict.agreement import Agreement, agreement_of
from shadowdiff.verdict.gates import MAX_CAPPED
from shadowdiff.vocabulary import (
    NOT_COMPARED_ERRORS,
    SUBSTANTIVE,
    UNCOMPARED,
    Decision,
    Outcome,
    Side,
    Standing,
    Tally,
    Verdict,
)

# Why an open run decides nothing yet: what it saw may be a small part of what it was to see.
_UNFINISHED = {
    "replay": "the run did not finish (stopped or killed part-way): continue it with the same "
              "`shadowdiff replay` command and --resume, then report again",
    "serve": "the proxy's run is still open (a proxy of it is serving, or was killed before it stopped): "
             "report again once they have all stopped; if one was killed, close the run with "
             f"`shadowdiff close STORE --run RUN` once it has been silent for {STALE_AFTER:.0f} s",
    "compare": "the comparison did not finish: run `shadowdiff compare` again",
}
# The run's setting that says its log changed while it was replayed (how, in words), and
# the one that says a line of it stopped the run (which, in words).
LOG_CHANGED = "log_changed_during_run"
STOPPED_BY_LOG = "stopped_by_log"

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
        return (f"{c['pairs']:,} of {c['of']:,} comparable pairs ({_share(c['share'])}) hit the token cap on both "
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


def acceptance(store: Store, run_id: str, *, min_reviewed: float = 1.0, max_errors: int = 0,
               min_compared: int = 1, max_capped: float = MAX_CAPPED) -> Acceptance:
    """Decide PASS / FAIL / INCOMPLETE for a run (see the module docstring).

    The pairs are counted by the database, grouped on the few columns the decision
    needs, so deciding on a run of a million pairs holds a few dozen rows; only the
    run's reviews (as many as people wrote) are read.
    """
    p, r = schema.pairs.c, schema.reviews.c
    reviewed = (sa.select(r.pair_id).select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id))
                .where(p.run_id == run_id).distinct().subquery())
    is_reviewed = reviewed.c.pair_id.is_not(None).label("reviewed")
    replica_failed = p.noise_outcome == Outcome.ERROR.value
    group = (p.outcome, p.comparable, p.suggested, p.judge_verdict, p.judge_wrong_side)
    with store.engine.connect() as c:
        groups = c.execute(sa.select(*group, is_reviewed, replica_failed.label("replica_failed"),
                                     sa.func.count().label("n"))
                           .select_from(schema.pairs.outerjoin(reviewed, reviewed.c.pair_id == p.id))
                           .where(p.run_id == run_id)
                           .group_by(*group, reviewed.c.pair_id.is_not(None), replica_failed)).all()
        reviews = c.execute(sa.select(r.pair_id, p.key, r.reviewer, r.verdict, r.wrong_side, r.note, r.id)
                            .select_from(schema.reviews.join(schema.pairs, r.pair_id == p.id))
                            .where(p.run_id == run_id).order_by(r.id)).all()
    result = Acceptance(Decision.PASS, thresholds={"min_reviewed": min_reviewed, "max_errors": max_errors,
                                                   "min_compared": min_compared})
    verdicts: Counter[str] = Counter()
    suggested: Counter[str] = Counter()
    judged: Counter[str] = Counter()
    compared = 0   # comparable pairs both sides answered: the evidence a PASS needs
    for row in groups:
        n = row.n
        # one set of counts, as the summary counts them: every pair is an error, sampled
        # (not comparable), unanswered (comparable, no answer on either side) or compared
        result.pairs += n
        result.replica_errors += n if row.replica_failed else 0
        if row.outcome == Outcome.ERROR:
            result.errors += n
        elif not row.comparable:
            result.sampled += n
        elif row.outcome == Outcome.UNANSWERED:
            result.unanswered += n
        else:
            compared += n
            if row.outcome == Outcome.IDENTICAL:
                result.identical += n
            elif row.outcome == Outcome.EQUIVALENT and not row.reviewed:
                result.equivalent += n
        if row.outcome in SUBSTANTIVE and row.comparable:
            result.needs_review += n
            if not row.reviewed:
                result.unreviewed += n
                suggested[row.suggested or "unknown"] += n
                if row.judge_verdict:
                    factual = row.judge_verdict == Verdict.FACTUAL.value and row.judge_wrong_side
                    wrong = f" ({row.judge_wrong_side} wrong)" if factual else ""
                    judged[row.judge_verdict + wrong] += n
    # the token cap is judged on the stored pairs (a serve run keeps identical ones at its --keep-rate)
    result.capped = _capped(store, run_id, considered=compared + result.unanswered)
    if seen := store.counts(run_id):
        # a serve run keeps identical, sampled and failed pairs at --keep-rate: count
        # those from what it saw (every pair that needs a verdict is stored)
        pairs_seen = {(outcome, comparable): n for (of, outcome, comparable), n in seen.items() if of == "pairs"}
        result.pairs = sum(pairs_seen.values())
        result.errors = sum(n for (outcome, _), n in pairs_seen.items() if outcome == Outcome.ERROR)
        result.sampled = sum(n for (outcome, comparable), n in pairs_seen.items()
                             if not comparable and outcome != Outcome.ERROR)
        result.unanswered = sum(n for (outcome, comparable), n in pairs_seen.items()
                                if comparable and outcome == Outcome.UNANSWERED)
        result.identical = sum(n for (outcome, comparable), n in pairs_seen.items()
                               if comparable and outcome == Outcome.IDENTICAL)
        compared = sum(n for (outcome, comparable), n in pairs_seen.items()
                       if comparable and outcome not in UNCOMPARED)
        result.replica_errors = sum(n for (of, outcome, _), n in seen.items()
                                    if of == "noise" and outcome == Outcome.ERROR)
        if capped := {outcome: n for (of, outcome, _), n in seen.items() if of == Tally.CAPPED}:
            # every pair it saw cut by the cap, stored or not (the tokens: of the stored ones)
            considered = compared + result.unanswered
            result.capped.update(pairs=sum(capped.values()), unanswered=capped.get(Outcome.UNANSWERED, 0),
                                 of=considered, share=sum(capped.values()) / considered if considered else 0.0)
        # a primary that failed cost a pair, as a failed side does in a replay
        result.errors += sum(n for (of, why, _), n in seen.items()
                             if of == Tally.NOT_COMPARED and why in NOT_COMPARED_ERRORS)
        # changed pairs the store never got need a verdict they can never have: unreviewed for good
        result.dropped = sum(n for (of, outcome, comparable), n in seen.items()
                             if of == Tally.DROPPED and comparable and outcome in SUBSTANTIVE)
        result.needs_review += result.dropped
        result.unreviewed += result.dropped
    for (outcome, comparable), n in pruned_counts(store, run_id).items():
        # deleted by retention, never a reviewed pair: one that needed a verdict still
        # lacks it, so that a prune never turns an INCOMPLETE run into a PASS
        if outcome in SUBSTANTIVE and comparable:
            result.needs_review += n
            result.unreviewed += n
            result.pruned_unreviewed += n
        elif outcome == Outcome.EQUIVALENT and comparable:
            result.equivalent += n
    # a reviewer's first verdict on a pair is the blind one; older builds took more after
    # the reveal, which would let one who has seen the sides decide the run
    blind_reviews = first_verdicts(reviews)
    result.after_reveal = len(reviews) - len(blind_reviews)
    if result.after_reveal:
        result.warnings.append(f"{result.after_reveal} {'verdict' if result.after_reveal == 1 else 'verdicts'} "
                               "given by a reviewer to a pair they had already judged (after its reveal, by an "
                               "older shadowdiff) not counted: only each reviewer's first, blind verdict is")
    by_pair: dict[int, set[str]] = {}
    for review in blind_reviews:
        kind = oriented(review.verdict, review.wrong_side)
        by_pair.setdefault(review.pair_id, set()).add(kind)
        if kind == Standing.FACTUAL:
            result.factual.append({"pair_id": review.pair_id, "key": review.key,
                                   "reviewer": review.reviewer, "note": review.note})
    result.agreement = agreement_of(blind_reviews)
    result.disagreements = len(result.agreement.disagreements)
    for kinds in by_pair.values():
        verdicts[max(kinds, key=_SEVERITY.__getitem__)] += 1
    result.verdicts = dict(verdicts)
    result.suggested_unreviewed = dict(suggested)
    result.judge_unreviewed = dict(judged)
    result.skipped = len(store.skipped(run_id))
    result.compared = compared
    reviewed_share = 1.0 if not result.needs_review else 1 - result.unreviewed / result.needs_review
    if result.factual:
        result.decision = Decision.FAIL
        # pairs, as the counts are: two reviewers calling one pair factual is one regression
        pairs = len({f["pair_id"] for f in result.factual})
        result.reasons.append(f"{pairs} factual regression(s) against the candidate")
    else:
        if reviewed_share < min_reviewed:
            result.decision = Decision.INCOMPLETE
            result.reasons.append(f"{result.unreviewed} of {result.needs_review} pairs changed in substance are "
                                  "unreviewed "
                                  f"({_share(reviewed_share)} reviewed, {_share(min_reviewed)} required)"
                                  + (f", {result.dropped} of them dropped before reaching the store (never "
                                     "reviewable)" if result.dropped else ""))
        elif (flagged := result.suggested_unreviewed.get(Verdict.FACTUAL, 0)) or result.pruned_unreviewed:
            # --min-reviewed below 1 lets ordinary changes go unreviewed, never the evidence of a
            # regression: a flip by the reference answers, a changed number, label or structure.
            # A pair deleted by retention took its signs with it: it may have shown one.
            result.decision = Decision.INCOMPLETE
            shown = [f"{flagged} unreviewed pairs show a sign of a factual regression (a flip by the reference "
                     "answers, a changed number, label or structure, a refusal)"] if flagged else []
            if result.pruned_unreviewed:
                shown.append(f"{result.pruned_unreviewed} unreviewed pairs were deleted by retention, and whether "
                             "they showed one went with them")
            result.reasons.append("; ".join(shown) + f"; --min-reviewed {min_reviewed:g} lets only pairs known to "
                                  "show none go unreviewed: review them (they lead the review queue)")
        if result.unchecked > max_errors:
            result.decision = Decision.INCOMPLETE
            result.reasons.append(f"{'; '.join(result.unchecked_parts())}: {result.unchecked} prompts unchecked, "
                                  f"{max_errors} allowed (--max-errors)")
        result.thresholds["max_capped"] = max_capped
        if unknown := result.capped.get("unknown"):
            # (saved answers without one, such as a JSON list of strings: said, not judged)
            result.warnings.append(f"{unknown:,} of {result.capped['of']:,} comparable pairs have no finish reason "
                                   "on a side (answers saved without one): --max-capped could not check whether "
                                   "the token cap cut them")
        if cut := result.capped_text():
            result.warnings.append(cut)
            if result.capped["share"] > max_capped:
                result.decision = Decision.INCOMPLETE
                result.reasons.append(f"{cut}: what the answers said after the cap was never compared; replay "
                                      f"with a larger --max-tokens (--max-capped {_share(max_capped)} allowed)")
        run = store.run(run_id)
        if changed := run.settings.get(LOG_CHANGED):
            result.decision = Decision.INCOMPLETE
            result.reasons.append(f"the log changed while the run read it ({safe_text(str(changed))}): its pairs may "
                                  "answer two versions of it; replay the log as it is now as a new run")
        if run.finished_at is None:
            result.decision = Decision.INCOMPLETE
            stopped = run.settings.get(STOPPED_BY_LOG)
            result.reasons.append(f"the run stopped at its log ({safe_text(str(stopped))}): fix the log and replay it "
                                  "as a new run, without --resume (a resume refuses a log whose contents changed)"
                                  if stopped else _UNFINISHED.get(run.kind, "the run did not finish"))
        # lost: killed; incomplete: its store failed at shutdown; forced: closed by --force while it
        # still counted as running - alive, it moved on to a new run with what it held (and is
        # found there); killed, it is short like a lost one
        members = RunMembers(store).members(run_id)
        moved = _moved_on(store, run_id, [m.id for m in members if m.ended == "forced"])
        short = [m for m in members if m.ended in ("lost", "incomplete") or (m.ended == "forced" and m.id not in moved)]
        if short:
            result.decision = Decision.INCOMPLETE
            result.reasons.append(f"{len(short)} of the run's proxies stopped without writing all they compared "
                                  "(killed, closed by --force, or their store failed at shutdown): its counts and "
                                  "pairs are short of what was served; check the candidate on a new run (or replay "
                                  "the captured traffic)")
        if not compared:
            result.decision = Decision.INCOMPLETE
            result.reasons.append("nothing was compared: no pair decoded deterministically was answered by both "
                                  "sides" + (" (a sampled request, e.g. --temperature keep, is never comparable)"
                                             if result.sampled else ""))
        elif compared < min_compared:
            result.decision = Decision.INCOMPLETE
            result.reasons.append(f"only {compared} comparable pairs were answered by both sides; "
                                  f"{min_compared} required (--min-compared): too few to show that the candidate "
                                  f"changes little (even with none changed, up to "
                                  f"{confidence.rate_upper(0, compared) * 100:.0f} % of its answers may, 95 %); "
                                  f"replay a longer log, or give --min-compared {compared} to accept them as enough")
    return result


def noisy_replica(excess: dict[str, Any]) -> bool:
    """Whether the replica (a second baseline) changed at least as many answers as the
    candidate: a noise floor that high hides the candidate's own changes."""
    return bool(excess["replica_changed"] > 0 and excess["replica_changed"] >= excess["candidate_changed"])


def _capped(store: Store, run_id: str, considered: int) -> dict[str, Any]:
    """The stored comparable pairs where both sides stopped at the token cap (finish
    reason ``length``) in the same choice: how many, how many of them before any answer,
    out of ``considered``, and the fewest and most tokens a side generated per choice in
    them. Read from the answers whose first choice was cut, or that hold more choices
    (their finish reasons are in ``other_choices``): a handful of rows in most runs."""
    p, base, cand = schema.pairs.c, schema.answers.alias("base"), schema.answers.alias("cand")
    cut_or_many = [sa.or_(side.c.finish_reason == "length", side.c.other_choices.is_not(None)) for side in (base, cand)]
    query = (sa.select(p.outcome, base.c.finish_reason, cand.c.finish_reason, base.c.other_choices,
                       cand.c.other_choices, base.c.completion_tokens, cand.c.completion_tokens,
                       base.c.choice_count, cand.c.choice_count)
             .select_from(schema.pairs
                          .join(base, sa.and_(base.c.pair_id == p.id, base.c.side == Side.BASELINE.value))
                          .join(cand, sa.and_(cand.c.pair_id == p.id, cand.c.side == Side.CANDIDATE.value)))
             .where(p.run_id == run_id, p.comparable, p.outcome != Outcome.ERROR.value, *cut_or_many))
    pairs = unanswered = 0
    tokens: list[float] = []
    unknown = (sa.select(sa.func.count()).select_from(query.get_final_froms()[0])
               .where(p.run_id == run_id, p.comparable, p.outcome != Outcome.ERROR.value,
                      sa.or_(base.c.finish_reason.is_(None), cand.c.finish_reason.is_(None))))
    with store.engine.connect() as c:
        not_known = int(c.execute(unknown).scalar_one())
        for outcome, finish_a, finish_b, others_a, others_b, tokens_a, tokens_b, count_a, count_b in c.execute(query):
            if not _cut(finish_a, others_a) & _cut(finish_b, others_b):
                continue
            pairs += 1
            unanswered += outcome == Outcome.UNANSWERED
            # usage counts every choice's tokens: per choice, as the cap applies
            tokens += [t / max(n or 1, 1) for t, n in ((tokens_a, count_a), (tokens_b, count_b)) if t is not None]
    return {"pairs": pairs, "unanswered": unanswered, "of": considered, "unknown": not_known,
            "share": pairs / considered if considered else 0.0,
            "tokens": [round(min(tokens)) if tokens else None, round(max(tokens)) if tokens else None]}


def _cut(first: str | None, others: Any) -> set[int]:
    """The indexes of an answer's choices that stopped at the token cap."""
    choices = [{"index": 0, "finish_reason": first}, *(others if isinstance(others, list) else ())]
    return {int(ch.get("index", i)) for i, ch in enumerate(choices)
            if isinstance(ch, dict) and ch.get("finish_reason") == "length"}


def _share(value: float) -> str:
    """A percentage that never rounds a shortfall away (89.8 % is not "90 %")."""
    return f"{100 * value:.0f} %" if round(100 * value, 6) == round(100 * value) else f"{100 * value:.1f} %"


def _moved_on(store: Store, run_id: str, members: list[str]) -> set[str]:
    """Those of ``members`` (closed by --force in ``run_id``) found in another run since: alive."""
    if not members:
        return set()
    m = schema.run_members.c
    with store.engine.connect() as c:
        return set(c.execute(sa.select(m.member).where(m.member.in_(members), m.run_id != run_id)).scalars())

"""The acceptance verdict as a record: what a run's tally counted, the decision and its
reasons, and how they are said (``text``, ``as_json``). ``shadowdiff.verdict.acceptance``
fills it in; ``Bar`` is what a run must reach.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shadowdiff.answers.invisible import safe_text
from shadowdiff.statistics import confidence
from shadowdiff.statistics.scorestats import unreadable
from shadowdiff.verdict import tokengates
from shadowdiff.verdict.agreement import Agreement, agreement_of
from shadowdiff.verdict.gates import MAX_CAPPED
from shadowdiff.vocabulary import Decision, Outcome, Standing

# Each verdict in the order a reviewer's verdicts stand (``shadowdiff.vocabulary.Standing``).
STANDING = tuple(Standing)
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
    reasons: list[str] = field(default_factory=list)   # what failed it first, then what left it incomplete
    _failing: int = field(default=0, repr=False, compare=False)   # how many of ``reasons`` failed it (the first)
    thresholds: dict[str, float] = field(default_factory=dict)   # what the decision was made with
    # each gate's value and where it came from (``shadowdiff.verdict.gates.Gates.as_json``), once resolved
    gates: dict[str, Any] = field(default_factory=dict)
    agreement: Agreement = field(default_factory=lambda: agreement_of(()))   # between reviewers
    # what to run next, for an INCOMPLETE run (``shadowdiff.report.write.next_steps``): (command, what it does)
    next_steps: list[tuple[str, str]] = field(default_factory=list)

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
                "factual_rate_upper": self.factual_rate_upper,
                "next_steps": [{"command": command, "what": what} for command, what in self.next_steps]}

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
                self.fail(f"the candidate changes at least {excess['low'] * 100:.1f} points more answers "
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
        INCOMPLETE when nothing was graded, or the baseline was never right (no flip could be
        seen), for a gate that checked nothing must not pass."""
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
            self.fail(f"{flips['correct_to_wrong']} correct→wrong flips (the baseline right, the candidate "
                      f"wrong, by the reference answers) in {flips['graded']} graded pairs, above "
                      f"--max-flips {max_flips}")
        elif not flips.get("baseline_correct"):
            # a flip is the baseline right and the candidate wrong: with the baseline never right,
            # none could be seen (a grader that reads no final answer here, or another log's references)
            self._incomplete(f"--max-flips: the baseline was right on none of the {flips['graded']} graded pairs, so "
                             "no flip (the baseline right, the candidate wrong) could be seen: check that the grader "
                             "reads these answers (docs/reports.md, graders) and that the references are this log's")
        elif flips["ungradable_answers"]:
            self._incomplete(f"--max-flips: {flips['ungradable_answers']} answers could not be graded (a pattern "
                             "out of time), and a flip among them would be unseen")

    def gate_tokens(self, agreement: dict[str, Any] | None, max_disagreement: float | None = None, *,
                    min_agreement: float | None = None, max_kl: float | None = None) -> None:
        """The gates on the teacher-forced measures (``shadowdiff.verdict.tokengates``):
        ``--max-token-disagreement`` on the tokens of the baseline's answers the candidate
        disagrees on beyond the baseline's own disagreement with them, ``--min-token-agreement``
        on the candidate's agreement itself, ``--max-kl`` on the KL divergence per token; each
        with its 95 % interval over prompts. FAIL when an interval lies beyond its limit;
        INCOMPLETE while one reaches beyond it, or when the run was not scored or its figures
        cannot be read."""
        limits = {"max_token_disagreement": max_disagreement, "min_token_agreement": min_agreement,
                  "max_kl": max_kl}
        gates = tokengates.given(limits)
        if not gates:
            return
        for gate, limit in gates:
            self.thresholds[gate.name] = limit
        flags = " and ".join(gate.text(limit) for gate, limit in gates)
        if not agreement or not agreement.get("pairs"):
            self._incomplete(f"{flags} {'need' if len(gates) > 1 else 'needs'} the answers scored teacher-forced, "
                             "and this run has none (replay --score, or serve --score-rate)")
            return
        why = unreadable(agreement)
        if why is not None:
            self._incomplete(f"{flags}: {why}")
            return
        for gate, limit in gates:
            flag, interval = gate.text(limit), agreement.get(gate.key)
            if not interval or interval.get("high") is None:
                self._incomplete(f"{flag}: the {gate.what} has no interval (scored on fewer than 2 prompts)")
                continue
            read = tokengates.reading(interval, limit, gate.upper)
            if read == tokengates.FAIL:
                self.fail(gate.failed.format(measure=gate.measure(interval), flag=flag))
            elif read == tokengates.INCOMPLETE:
                self._incomplete(f"{flag}: the {gate.what}, {gate.measure(interval)}, reaches "
                                 f"{'above' if gate.upper else 'below'} it; more prompts scored would narrow its "
                                 "interval")

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

    def fail(self, reason: str) -> None:
        """FAIL, for ``reason``: put before every reason that only left the run incomplete,
        so that a FAIL line leads with what failed it."""
        self.decision = Decision.FAIL
        self.reasons.insert(self._failing, reason)
        self._failing += 1

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
        lines += [f"next: {command}   ({what})" for command, what in self.next_steps]
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
    without_review: bool = False     # decide from the measures alone (``--without-review``): no review asked


DEFAULT_BAR = Bar()


def noisy_replica(excess: dict[str, Any]) -> bool:
    """Whether the replica (a second baseline) changed at least as many answers as the
    candidate: a noise floor that high hides the candidate's own changes."""
    return bool(excess["replica_changed"] > 0 and excess["replica_changed"] >= excess["candidate_changed"])


def share(value: float) -> str:
    """A percentage that never rounds a shortfall away (89.8 % is not "90 %")."""
    return f"{100 * value:.0f} %" if round(100 * value, 6) == round(100 * value) else f"{100 * value:.1f} %"

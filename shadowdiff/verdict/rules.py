"""The rules of the acceptance verdict: each may decide against a run, and says why.

A rule reads the run's tally and the bar it is held to, and where the run falls short
sets the decision and adds the reason to the ``Acceptance`` being built
(``shadowdiff.verdict.acceptance.decide`` applies them, in ``RULES``' order).
"""

from __future__ import annotations

from collections.abc import Callable

from shadowdiff.answers.invisible import safe_text
from shadowdiff.statistics import confidence
from shadowdiff.store.members import STALE_AFTER
from shadowdiff.store.tallies import RunTally
from shadowdiff.verdict.result import Acceptance, Bar, share
from shadowdiff.vocabulary import Decision, Verdict

# Why an open run decides nothing yet: what it saw may be a small part of what it was to see.
_UNFINISHED = {
    "replay": "the run did not finish (stopped or killed part-way): continue it with the same "
              "`shadowdiff replay` command and --resume, then report again",
    "serve": "the proxy's run is still open (a proxy of it is serving, or was killed before it stopped): "
             "report again once they have all stopped; if one was killed, close the run with "
             f"`shadowdiff close STORE --run RUN` once it has been silent for {STALE_AFTER:.0f} s",
    "compare": "the comparison did not finish: run `shadowdiff compare` again",
}


def no_factual_regression(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """No reviewer found the candidate factually wrong: one such verdict fails the run."""
    if result.factual:
        # pairs, as the counts are: two reviewers calling one pair factual is one regression
        pairs = len({f["pair_id"] for f in result.factual})
        result.fail(f"{pairs} factual regression{'' if pairs == 1 else 's'} against the candidate")


def reviewed_enough(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """At least --min-reviewed of the pairs changed in substance reviewed, and none of
    those left unreviewed a pair that may show a factual regression."""
    reviewed_share = 1.0 if not result.needs_review else 1 - result.unreviewed / result.needs_review
    flagged = result.suggested_unreviewed.get(Verdict.FACTUAL, 0)
    if bar.without_review:
        # (said, loudly: a decision no person looked at; the measured gates decide, in ``write_reports``)
        if result.unreviewed:
            result.warnings.append(
                f"decided without review (--without-review): {result.unreviewed} of {result.needs_review} pairs "
                "changed in substance were never looked at by a person"
                + (f", {flagged} of them with a sign of a factual regression (a changed number, label or "
                   "structure, a flip, a refusal)" if flagged else "")
                + "; the decision rests on the measured gates alone")
        return
    if result.unreviewed and bar.min_reviewed < 1 and reviewed_share >= bar.min_reviewed:
        result.warnings.append(f"--min-reviewed {bar.min_reviewed:g} leaves {result.unreviewed} of "
                               f"{result.needs_review} pairs changed in substance unreviewed: nobody looked at them")
    if reviewed_share < bar.min_reviewed:
        result.decision = Decision.INCOMPLETE
        result.reasons.append(f"{result.unreviewed} of {result.needs_review} pairs changed in substance are "
                              "unreviewed "
                              f"({share(reviewed_share)} reviewed, {share(bar.min_reviewed)} required)"
                              + (f", {result.dropped} of them dropped before reaching the store (never "
                                 "reviewable)" if result.dropped else ""))
    elif flagged or result.pruned_unreviewed:
        # --min-reviewed below 1 lets ordinary changes go unreviewed, never the evidence of a
        # regression: a flip by the reference answers, a changed number, label or structure.
        # A pair deleted by retention took its signs with it: it may have shown one.
        result.decision = Decision.INCOMPLETE
        shown = [f"{flagged} unreviewed pairs show a sign of a factual regression (a flip by the reference "
                 "answers, a changed number, label or structure, a refusal)"] if flagged else []
        if result.pruned_unreviewed:
            shown.append(f"{result.pruned_unreviewed} unreviewed pairs were deleted by retention, and whether "
                         "they showed one went with them")
        result.reasons.append("; ".join(shown) + f"; --min-reviewed {bar.min_reviewed:g} lets only pairs known to "
                              "show none go unreviewed: review them (they lead the review queue)")


def few_unchecked(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """No more prompts unchecked than --max-errors."""
    if result.unchecked > bar.max_errors:
        result.decision = Decision.INCOMPLETE
        result.reasons.append(f"{'; '.join(result.unchecked_parts())}: {result.unchecked} prompts unchecked, "
                              f"{bar.max_errors} allowed (--max-errors)")


def few_capped(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """No more than --max-capped of the comparable pairs cut by the token cap on both sides;
    the pairs it could not check are said, not judged."""
    result.thresholds["max_capped"] = bar.max_capped
    if unknown := result.capped.get("unknown"):
        # (saved answers without one, such as a JSON list of strings)
        result.warnings.append(f"{unknown:,} of {result.capped['of']:,} comparable pairs have no finish reason "
                               "on a side (answers saved without one): --max-capped could not check whether "
                               "the token cap cut them")
    if cut := result.capped_text():
        result.warnings.append(cut)
        if result.capped["share"] > bar.max_capped:
            result.decision = Decision.INCOMPLETE
            result.reasons.append(f"{cut}: what the answers said after the cap was never compared; replay "
                                  f"with a larger --max-tokens (--max-capped {share(bar.max_capped)} allowed)")


def log_unchanged(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """The log did not change while the run read it."""
    if tally.log_changed:
        result.decision = Decision.INCOMPLETE
        result.reasons.append(f"the log changed while the run read it ({safe_text(tally.log_changed)}): its pairs may "
                              "answer two versions of it; replay the log as it is now as a new run")


def finished(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """The run finished: an open one may have seen a small part of what it was to see."""
    if not tally.finished:
        result.decision = Decision.INCOMPLETE
        stopped = tally.stopped_by_log
        result.reasons.append(f"the run stopped at its log ({safe_text(stopped)}): fix the log and replay it "
                              "as a new run, without --resume (a resume refuses a log whose contents changed)"
                              if stopped else _UNFINISHED.get(tally.kind, "the run did not finish"))


def members_whole(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """Every proxy of the run wrote all it compared."""
    if tally.short_members:
        result.decision = Decision.INCOMPLETE
        result.reasons.append(f"{tally.short_members} of the run's proxies stopped without writing all they compared "
                              "(killed, closed by --force, or their store failed at shutdown): its counts and "
                              "pairs are short of what was served; check the candidate on a new run (or replay "
                              "the captured traffic)")


def compared_enough(result: Acceptance, tally: RunTally, bar: Bar) -> None:
    """At least --min-compared comparable pairs answered by both sides, and never none."""
    compared = result.compared
    if not compared:
        result.decision = Decision.INCOMPLETE
        result.reasons.append("nothing was compared: no pair decoded deterministically was answered by both "
                              "sides" + (" (a sampled request, e.g. --temperature keep, is never comparable)"
                                         if result.sampled else ""))
    elif compared < bar.min_compared:
        result.decision = Decision.INCOMPLETE
        result.reasons.append(f"only {compared} comparable pairs were answered by both sides; "
                              f"{bar.min_compared} required (--min-compared): too few to show that the candidate "
                              f"changes little (even with none changed, up to "
                              f"{confidence.rate_upper(0, compared) * 100:.0f} % of its answers may, 95 %); "
                              f"replay a longer log, or give --min-compared {compared} to accept them as enough")


Rule = Callable[[Acceptance, RunTally, Bar], None]
# Applied in this order to a run no reviewer found factually wrong (each may leave it
# INCOMPLETE): the reasons are given in it.
RULES: tuple[Rule, ...] = (reviewed_enough, few_unchecked, few_capped, log_unchanged, finished, members_whole,
                           compared_enough)

"""Flips: a pair graded against its reference, and a run's flips counted and tested.

A pair whose prompt has a reference answer (``shadowdiff.triage.grading``) is graded on each
side. When exactly one of baseline and candidate is right, the pair *flipped*:
``correct_to_wrong`` (the candidate got wrong what the baseline got right: a regression
nobody has to argue about) or ``wrong_to_correct``. Flipped pairs go to the top of the
review queue, above any priority triage gives (``FLIP_PRIORITY``, one band for both
directions, so that the priority gives no side away in blind review), with a ``flip``
signal that says which side the reference favours.

A run's graded pairs make a paired 2x2 table (baseline right or not, candidate right or
not). ``FlipTally`` counts it and tests it: McNemar's exact test (the two-sided binomial
test of the discordant pairs, correct→wrong against wrong→correct, at p = 1/2), an exact
upper bound of the correct→wrong rate among the prompts the baseline got right, and the
change in accuracy with Newcombe's paired interval; the same table of the replica
against the baseline is the noise floor of flips.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import sqlalchemy as sa

from shadowdiff.answers.records import Pair
from shadowdiff.statistics import confidence
from shadowdiff.store import Store, schema
from shadowdiff.triage.grading import Graded, Grader, Reference, grade_answer
from shadowdiff.triage.signals import flip_reason
from shadowdiff.vocabulary import Side, Verdict

CORRECT_TO_WRONG = "correct_to_wrong"
WRONG_TO_CORRECT = "wrong_to_correct"
# Added to a flipped pair's triage priority: above anything triage gives (at most 100 for a
# changed number: shadowdiff.triage.signals). One band for both
# directions, for blind review: the pair page says which letter the reference favours, so a
# priority that told correct→wrong from wrong→correct would tell which letter is the candidate.
FLIP_PRIORITY = 300
# Answers longer than this are graded in a thread (a pattern on a long answer takes time).
OFF_LOOP_CHARS = 4_000
MCNEMAR = "exact McNemar: two-sided binomial test of the discordant pairs at p = 1/2"


def flip_of(baseline: bool | None, other: bool | None) -> str | None:
    """``correct_to_wrong``, ``wrong_to_correct`` or None (both graded alike, or one not graded)."""
    if baseline is None or other is None or baseline == other:
        return None
    return CORRECT_TO_WRONG if baseline else WRONG_TO_CORRECT


def grade_pair(pair: Pair, reference: Reference, grader: Grader) -> Pair:
    """``pair`` with its grade (``Pair.grade``: the reference, the grader, each side right
    or not, and what the grader read) and its flip; a flipped pair also gets the ``flip``
    signal, the suggestion ``factual`` and a priority above triage's."""
    grades = {side: grade_answer(pair.answers.get(side), reference, grader) for side in Side}
    grade: dict[str, Any] = {"reference": reference, "grader": grader.value,
                             **{side.value: _correct(g) for side, g in grades.items()}}
    if found := {side.value: g.found for side, g in grades.items() if g is not None and g.found is not None}:
        grade["found"] = found
    if problems := {side.value: g.problem for side, g in grades.items() if g is not None and g.problem}:
        grade["problems"] = problems
    flip = flip_of(grade["baseline"], grade["candidate"])
    if flip is None:
        return replace(pair, grade=grade)
    signal = {"kind": "flip", "value": {"baseline": grade["baseline"], "candidate": grade["candidate"],
                                        "grader": grader.value},
              "reason": flip_reason(grade["baseline"], grade["candidate"], grader.value)}
    return replace(pair, grade=grade, flip=flip, signals=[signal, *(pair.signals or [])], suggested=Verdict.FACTUAL,
                   priority=FLIP_PRIORITY + max(pair.priority, 0))


async def grade_pair_off_loop(pair: Pair, reference: Reference, grader: Grader) -> Pair:
    """``grade_pair`` for callers on an event loop: in a thread for long answers or a pattern."""
    longest = max((len(a.text) for a in pair.answers.values()), default=0)
    if grader is Grader.REGEX or longest > OFF_LOOP_CHARS:
        return await asyncio.to_thread(grade_pair, pair, reference, grader)
    return grade_pair(pair, reference, grader)


def _correct(graded: Graded | None) -> bool | None:
    return None if graded is None else graded.correct


# -- a run's flips ---------------------------------------------------------------------------


@dataclass
class Table:
    """The paired 2x2 table of one side against the baseline, over prompts both were graded on."""

    both: int = 0
    correct_to_wrong: int = 0
    wrong_to_correct: int = 0
    neither: int = 0

    def add(self, baseline: bool, other: bool) -> None:
        if baseline and other:
            self.both += 1
        elif baseline:
            self.correct_to_wrong += 1
        elif other:
            self.wrong_to_correct += 1
        else:
            self.neither += 1

    @property
    def graded(self) -> int:
        return self.both + self.correct_to_wrong + self.wrong_to_correct + self.neither

    def as_json(self, other: str) -> dict[str, Any]:
        """The table's figures; ``other`` names the side compared with the baseline."""
        n, c2w, w2c = self.graded, self.correct_to_wrong, self.wrong_to_correct
        base_right, other_right = self.both + c2w, self.both + w2c
        change = confidence.paired_difference(self.both, w2c, c2w, self.neither)
        return {
            "graded": n, "baseline_correct": base_right, f"{other}_correct": other_right,
            "correct_to_wrong": c2w, "wrong_to_correct": w2c,
            "baseline_accuracy": base_right / n, f"{other}_accuracy": other_right / n,
            # the other side's accuracy minus the baseline's, with Newcombe's paired interval
            "accuracy_change": change.as_json() if change else None,
            "mcnemar_p": confidence.mcnemar_exact(c2w, w2c), "mcnemar_test": MCNEMAR,
            "correct_to_wrong_rate": c2w / base_right if base_right else None,
            # exact one-sided bound of the rate at which the baseline's right answers turn wrong
            "correct_to_wrong_upper": confidence.rate_upper(c2w, base_right) if base_right else None,
            "confidence": confidence.CONFIDENCE,
        }


@dataclass
class FlipTally:
    """A run's grades counted: the candidate's table, the replica's (the noise floor)."""

    references: int = 0      # pairs with a reference
    candidate: Table = field(default_factory=Table)
    replica: Table = field(default_factory=Table)
    graders: Counter[str] = field(default_factory=Counter)
    problems: int = 0        # answers the grader could not grade (a pattern out of time)

    def add(self, grade: dict[str, Any] | None) -> None:
        if not isinstance(grade, dict):
            return
        self.references += 1
        self.problems += len(grade.get("problems") or {})
        base = grade.get("baseline")
        if base is None:
            return
        if grade.get("candidate") is not None:
            self.candidate.add(base, grade["candidate"])
            self.graders[str(grade.get("grader"))] += 1
        if grade.get("replica") is not None:
            self.replica.add(base, grade["replica"])

    def as_json(self) -> dict[str, Any] | None:
        """summary.json's ``flips``; None when no pair had a reference; only the counts when
        pairs had one but none was graded on both baseline and candidate (``graded`` 0)."""
        if not self.references:
            return None
        if not self.candidate.graded:
            return {"graded": 0, "references": self.references, "not_graded": self.references,
                    "ungradable_answers": self.problems}
        return {**self.candidate.as_json("candidate"), "references": self.references,
                "not_graded": self.references - self.candidate.graded, "ungradable_answers": self.problems,
                "graders": dict(sorted(self.graders.items())),
                "noise": self.replica.as_json("replica") if self.replica.graded else None}


def flip_summary(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run's flips (``FlipTally.as_json``), read from the grades alone, streamed."""
    tally = FlipTally()
    p = schema.pairs.c
    with store.engine.connect() as c:
        for (grade,) in c.execution_options(stream_results=True, yield_per=1000).execute(
                sa.select(p.grade).where(p.run_id == run_id)):
            tally.add(grade)
    return tally.as_json()


def _none_graded(flips: dict[str, Any]) -> str:
    why = (f" ({flips['ungradable_answers']} answers the grader could not grade: a pattern out of time)"
           if flips["ungradable_answers"] else " (a side failed on each)")
    return f"{flips['references']} pairs had a reference answer, and none was graded on both sides{why}"


def flip_lines(flips: dict[str, Any] | None) -> list[str]:
    """The flips in words, one sentence each (the terminal and the reports)."""
    if not flips:
        return []
    if not flips["graded"]:
        return [_none_graded(flips)]
    n = flips["graded"]
    lines = [f"graded against a reference: {n} pairs; right: baseline {flips['baseline_correct']} "
             f"({flips['baseline_accuracy'] * 100:.1f} %), candidate {flips['candidate_correct']} "
             f"({flips['candidate_accuracy'] * 100:.1f} %)"
             + (f" ({flips['not_graded']} more with a reference had a side that failed)" if flips["not_graded"]
                else "")
             + ("; neither side matched any reference: the answers may not end in a final answer the grader "
                "reads (see docs/reports.md, graders), or the references are not this log's; a simulator's synthetic "
                "text matches none; no flip could be seen" if not flips["baseline_correct"]
                and not flips["candidate_correct"] else "")]
    if flips["baseline_correct"] or flips["candidate_correct"]:   # (else every figure below is a zero of nothing)
        lines.append(f"flips: {flips['correct_to_wrong']} correct→wrong (the baseline right, the candidate wrong), "
                     f"{flips['wrong_to_correct']} wrong→correct; McNemar's exact test p = {flips['mcnemar_p']:.3g} "
                     + ("(below 0.05: the accuracy changed beyond chance)" if flips["mcnemar_p"] < 0.05
                        else "(no evidence at 0.05 that the accuracy changed)"))
    if flips["correct_to_wrong_upper"] is not None:
        lines.append(f"of the {flips['baseline_correct']} prompts the baseline got right, the candidate may get up "
                     f"to {flips['correct_to_wrong_upper'] * 100:.1f} % wrong (95 %, exact)")
    if noise := flips.get("noise"):
        lines.append(f"noise floor of flips (replica vs baseline): {noise['correct_to_wrong']} correct→wrong, "
                     f"{noise['wrong_to_correct']} wrong→correct in {noise['graded']} graded")
    return lines


def flip_rows(flips: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """The reports' table of flips: (figure, value, what it means in one sentence)."""
    if not flips:
        return []
    if not flips["graded"]:
        return [("graded pairs", "0", _none_graded(flips))]

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value * 100:.1f} %"

    n = flips["graded"]
    change = flips["accuracy_change"]
    rows = [
        ("graded pairs", f"{n}", "Pairs whose prompt has a reference answer and whose baseline and candidate both "
                                 "answered, each answer graded right or wrong against it."),
        ("baseline right", f"{flips['baseline_correct']} ({pct(flips['baseline_accuracy'])})",
         "How many of them the baseline answered right: its accuracy on these prompts."),
        ("candidate right", f"{flips['candidate_correct']} ({pct(flips['candidate_accuracy'])})",
         "How many of them the candidate answered right: its accuracy on the same prompts."),
    ]
    if not flips["baseline_correct"] and not flips["candidate_correct"]:
        # (flips, McNemar and the accuracy change would all be zeros of nothing)
        return [*rows, ("flips", "not measured", "Neither side matched any reference: the answers may not end in a "
                        "final answer the grader reads, or the references are not this log's; no flip could be "
                        "seen.")]
    rows += [
        ("correct→wrong flips", f"{flips['correct_to_wrong']}",
         "Prompts the baseline got right and the candidate wrong: regressions by the reference, first in the "
         "review queue."),
        ("wrong→correct flips", f"{flips['wrong_to_correct']}",
         "Prompts the baseline got wrong and the candidate right."),
        ("McNemar's exact p", f"{flips['mcnemar_p']:.3g}",
         "How likely flips at least this lopsided are if the two were equally accurate (two-sided binomial test of "
         "the flips): small means the accuracy really changed."),
    ]
    if change is not None:
        rows.append(("accuracy change", f"{change['estimate'] * 100:+.1f} points (95 % {change['low'] * 100:+.1f} "
                                        f"to {change['high'] * 100:+.1f})",
                     "The candidate's accuracy minus the baseline's on the same prompts, with Newcombe's paired "
                     "interval."))
    if flips["correct_to_wrong_upper"] is not None:
        rows.append(("correct→wrong rate, upper bound", pct(flips["correct_to_wrong_upper"]),
                     "Of the prompts the baseline gets right, the share the candidate may still get wrong (exact "
                     "one-sided 95 % bound)."))
    if noise := flips.get("noise"):
        rows.append(("replica's flips (noise floor)", f"{noise['correct_to_wrong']} correct→wrong, "
                                                     f"{noise['wrong_to_correct']} wrong→correct of {noise['graded']}",
                     "The same flips of the replica (a second baseline) against the baseline: what running the "
                     "baseline again flips, with whatever differs between the two (their batches, their hardware)."))
    return rows

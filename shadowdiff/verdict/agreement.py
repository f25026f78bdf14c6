"""Inter-reviewer agreement: do two people reviewing the same pair blind give the same verdict?

A verdict is compared with its side (``minor/candidate`` is not ``minor/baseline``),
and only a reviewer's first verdict on a pair counts: a later one (which older builds
took after the page had shown the sides) is neither in kappa nor a disagreement. Each
pair reviewed by two different people gives one item: its first review and the first
later review by someone else.
When those items involve exactly two reviewers, each reviewer is a rater column - the
classic Cohen's kappa of two raters, whose chance agreement comes from each person's
own habits. With more reviewers, who rotate, the columns are the first and the second
review: Cohen's kappa over first-vs-second review. Chance agreement of 100 % (both
columns use one and the same category) leaves kappa undefined: it is reported as
such, never divided out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from shadowdiff.answers.invisible import safe_text
from shadowdiff.answers.records import side_against
from shadowdiff.store.review import first_verdicts
from shadowdiff.vocabulary import Verdict

FEW = 10      # below this many pairs reviewed twice, kappa is said to be rough
LISTED = 20   # disagreements listed in the text (the terminal); summary.json and the reports list them all


@dataclass(frozen=True)
class Kappa:
    items: int
    observed: float | None     # share of items both raters put in the same category
    expected: float | None     # that share by chance, from each rater's own category shares
    kappa: float | None        # None: no items, or chance agreement is already 100 %
    raters: tuple[str, ...] = ()   # the two reviewers, when the columns are people; else none


def cohens_kappa(ratings: Sequence[tuple[str, str]]) -> Kappa:
    """Cohen's kappa of two raters: one (rater 1's category, rater 2's) per item.

    kappa = (p_o - p_e) / (1 - p_e), computed in fractions so that p_e = 1 is seen exactly."""
    n = len(ratings)
    if not n:
        return Kappa(0, None, None, None)
    observed = Fraction(sum(a == b for a, b in ratings), n)
    first, second = Counter(a for a, _ in ratings), Counter(b for _, b in ratings)
    expected = sum((Fraction(first[c] * second[c], n * n) for c in first), Fraction(0))
    kappa = None if expected == 1 else (observed - expected) / (1 - expected)
    return Kappa(n, float(observed), float(expected), None if kappa is None else float(kappa))


@dataclass(frozen=True)
class Rating:
    reviewer: str
    label: str      # the verdict with the side it goes against: "minor/candidate", "wording"
    note: str

    def as_json(self) -> dict[str, str]:
        return {"reviewer": self.reviewer, "verdict": self.label, "note": self.note}


def label(verdict: str, wrong_side: str | None) -> str:
    """A review's category for agreement: its verdict, with its side when it names one."""
    checked = Verdict(verdict)
    side = side_against(checked, wrong_side)
    return checked.value if side is None else f"{checked.value}/{side.value}"


@dataclass(frozen=True)
class Disagreement:
    pair_id: int
    key: str
    reviews: tuple[Rating, ...]    # every counted review of the pair (each reviewer's first), oldest first

    def as_json(self) -> dict[str, Any]:
        return {"pair_id": self.pair_id, "key": self.key, "reviews": [r.as_json() for r in self.reviews]}


@dataclass(frozen=True)
class Agreement:
    reviewed: int                    # pairs with at least one review
    twice: Kappa                     # over the pairs reviewed by two different reviewers
    disagreements: tuple[Disagreement, ...]   # pairs where two different reviewers' verdicts differ

    def as_json(self) -> dict[str, Any]:
        return {"reviewed": self.reviewed, "reviewed_twice": self.twice.items, "raters": list(self.twice.raters),
                "observed": self.twice.observed,
                "expected": self.twice.expected, "kappa": self.twice.kappa,
                "disagreements": [d.as_json() for d in self.disagreements]}

    @property
    def columns(self) -> str:
        """What the two rater columns are, in words."""
        if self.twice.raters:
            return "two reviewers, each a rater"
        return "each pair's first review against the first later one by someone else"

    @property
    def kappa_text(self) -> str:
        """Agreement in words: observed, chance, kappa (or why there is none)."""
        k = self.twice
        if not k.items or k.observed is None or k.expected is None:
            return "no pair has two reviews by different reviewers"
        who = f"between {k.raters[0]} and {k.raters[1]}, " if k.raters else ""
        figures = (f"{k.items} {'pair' if k.items == 1 else 'pairs'} reviewed twice, {who}observed agreement "
                   f"{_pct(k.observed)}, by chance {_pct(k.expected)}")
        if k.kappa is None:
            return figures + ", Cohen's kappa undefined (every review compared gives the same verdict: agreement " \
                             "by chance is already 100 %)"
        few = f" (from {k.items} pairs: too few to read much into)" if k.items < FEW else ""
        return figures + f", Cohen's kappa {k.kappa:.2f}{few}"

    def text(self) -> str:
        """For the terminal: empty when nobody reviewed anything."""
        if not self.reviewed:
            return ""
        lines = [f"inter-reviewer agreement ({self.columns}): {self.kappa_text}"]
        if self.disagreements:
            lines.append(f"reviewers disagree on {len(self.disagreements)} "
                         f"{'pair' if len(self.disagreements) == 1 else 'pairs'} (the verdict least favourable "
                         "to the candidate counts):")
            for d in self.disagreements[:LISTED]:
                lines.append(f"  pair {safe_text(d.key)} (id {d.pair_id}): " + "; ".join(
                    f"{safe_text(r.reviewer)} {r.label}" + (f" ({safe_text(_one_line(r.note))})" if r.note else "")
                    for r in d.reviews))
            if len(self.disagreements) > LISTED:
                lines.append(f"  ... and {len(self.disagreements) - LISTED} more (all in summary.json and the reports)")
        return "\n".join(lines)


def agreement_of(reviews: Iterable[Any]) -> Agreement:
    """Agreement over review rows (``pair_id``, ``key``, ``reviewer``, ``verdict``,
    ``wrong_side``, ``note``) in the order they were written."""
    by_pair: dict[int, list[Rating]] = {}
    keys: dict[int, str] = {}
    for row in first_verdicts(reviews):
        by_pair.setdefault(row.pair_id, []).append(Rating(row.reviewer, label(row.verdict, row.wrong_side), row.note))
        keys[row.pair_id] = row.key
    items: list[tuple[Rating, Rating]] = []
    disagreements = []
    for pair_id, pair_reviews in by_pair.items():
        first = pair_reviews[0]
        second = next((r for r in pair_reviews[1:] if r.reviewer != first.reviewer), None)
        if second is not None:
            items.append((first, second))
        if any(a.reviewer != b.reviewer and a.label != b.label for a in pair_reviews for b in pair_reviews):
            disagreements.append(Disagreement(pair_id, keys[pair_id], tuple(pair_reviews)))
    people = sorted({r.reviewer for item in items for r in item})
    if len(people) == 2:
        # two people: each is a column, whichever of them reviewed a pair first
        ratings = [(a.label, b.label) if a.reviewer == people[0] else (b.label, a.label) for a, b in items]
        kappa = replace(cohens_kappa(ratings), raters=tuple(people))
    else:
        kappa = cohens_kappa([(a.label, b.label) for a, b in items])
    return Agreement(len(by_pair), kappa, tuple(disagreements))


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def _one_line(text: str) -> str:
    return " ".join(text.split())

"""Blind review: which side a reviewer sees as A, and side names rewritten to letters.

A reviewer who knows which answer is the candidate's reads it differently; so the
sides are shown as A and B in an order that is random per pair, stable (the same on
every visit, in ``serve`` and in ``review``), and not derivable from anything a
reviewer holds: it comes from a key the store made for itself (``secrets``), not
from the shared review token. The LLM judge sees the answers in the same order, so
its letters are the page's.

Letters alone are not enough: whatever else a page shows before the verdict (signal
reasons, the judge's suggestion, the marks) must read the same whichever side A is,
or its order or wording would name the side (tests/review/test_blind_pages.py).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from shadowdiff.triage.signals import ONE_SIDED_KINDS, REASONING_REASONS, SIGNAL_KINDS, explain
from shadowdiff.vocabulary import Side, Verdict

_SIDE_WORDS = re.compile(r"\b(?:the\s+)?(baseline|candidate)('s)?\b", re.IGNORECASE)


def blind(text: str, a_is_baseline: bool) -> str:
    """Replace the side names in a text with the letters the reviewer sees.

    For the judge's reasons stored by earlier builds, which name the sides. Not for a
    signal's reason: swapping words for letters keeps its baseline-first order, which
    alone gives the side away (``blind_reason`` rebuilds those instead)."""
    def letter(m: re.Match[str]) -> str:
        is_baseline = m.group(1).lower() == Side.BASELINE
        return ("A" if is_baseline == a_is_baseline else "B") + (m.group(2) or "")

    return _SIDE_WORDS.sub(letter, text)


# the signal kinds the queue filters by: a filter on a one-sided kind would list the pairs it marks
QUEUE_KINDS = tuple(k for k in SIGNAL_KINDS if k not in ONE_SIDED_KINDS)


def shown_signals(signals: list[dict[str, Any]] | None, a_is_baseline: bool,
                  revealed: bool = False) -> list[dict[str, str]]:
    """A pair's signals as its page shows them: kind and ``blind_reason``; before the
    reveal without the one-sided kinds (``signals.ONE_SIDED_KINDS``)."""
    return [{"kind": str(s.get("kind")), "reason": blind_reason(s, a_is_baseline, revealed)} for s in signals or []
            if revealed or s.get("kind") not in ONE_SIDED_KINDS]


def queue_kinds(signals: list[dict[str, Any]] | None) -> list[str]:
    """The signal kinds a queue row shows: sorted, none of the one-sided ones (nor the
    divergence, which nearly every changed pair has)."""
    return sorted({s["kind"] for s in signals or [] if s["kind"] != "divergence" and s["kind"] not in ONE_SIDED_KINDS})


def blind_reason(signal: dict[str, Any], a_is_baseline: bool, revealed: bool = False) -> str:
    """A signal's reason as the reviewer may read it: rebuilt from its value, A first,
    in words that are the same whichever side A is (``signals.explain``).

    The stored reason is not blinded word for word: it names the baseline first, and
    the order alone would give the side away. A kind or value this version does not
    know gets a neutral text, never the stored reason. Until ``revealed``, a divergence
    is said without its margin: that is the baseline's certainty alone, so it differs
    with the side that is the baseline."""
    kind, value = str(signal.get("kind")), signal.get("value")
    if kind == "divergence" and isinstance(value, dict) and not revealed:
        value = {**value, "margin": None}
    if kind == "reasoning":
        reason = signal.get("reason")
        return reason if reason in REASONING_REASONS else "the reasoning differs"
    if kind == "structured" and isinstance(value, dict) and value.get("tool_calls"):
        # built side-free when stored (values in sorted order, counts by size): shown as it is
        return str(signal.get("reason") or "the tool calls differ")
    try:
        reason = explain(kind, value, "baseline" if a_is_baseline else "candidate", ("A", "B"))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        reason = ""
    return reason or f"the answers differ ({kind}): see them below"


def judge_text(verdict: str, worse: str | None, a_is_baseline: bool, revealed: bool = False) -> str:
    """The judge's suggested verdict as a reviewer may see it before the reveal, on the
    pair page and in the queue alike: "minor (B worse)", "factual (A wrong)".

    ``improvement`` (the baseline is worse) is shown as minor with the worse letter:
    the word alone would say which side is the candidate. Once ``revealed``, the
    judge's own word is shown."""
    shown = Verdict.MINOR.value if verdict == Verdict.IMPROVEMENT.value and not revealed else verdict
    if not worse:
        return shown
    return f"{shown} ({_letter(worse, a_is_baseline)} {'wrong' if verdict == Verdict.FACTUAL.value else 'worse'})"


def _letter(side: Side | str, a_is_baseline: bool) -> str:
    return "A" if (Side(side) is Side.BASELINE) == a_is_baseline else "B"


class Blinding:
    def __init__(self, key: str) -> None:
        self._key = key.encode()

    def a_is_baseline(self, pair_id: int) -> bool:
        return hmac.new(self._key, f"side:{pair_id}".encode(), hashlib.sha256).digest()[0] % 2 == 0

    def letter(self, side: Side | str, pair_id: int) -> str:
        """The letter ``side`` (baseline or candidate) has on this pair's page."""
        return _letter(side, self.a_is_baseline(pair_id))

    def side(self, letter: str, pair_id: int) -> Side:
        """The side behind ``letter`` on this pair's page."""
        return Side.BASELINE if (letter == "A") == self.a_is_baseline(pair_id) else Side.CANDIDATE


def score_view(score: dict[str, Any] | None, noise_score: dict[str, Any] | None) -> str | None:
    """A pair's teacher-forced score (``shadowdiff.triage.scoring``) in words that name no side,
    for the page after the reveal. The scored answer is always the baseline's, so even
    the share is one side's figure (a reviewer who counts the tokens of each answer can
    tell which one it is over): the page holds it back until the verdict."""
    if not isinstance(score, dict) or "agreement" not in score:
        return None
    text = (f"Read token by token (each model given the same answer to score), the two models agree on "
            f"{float(score['agreement']):.1%} of one answer's tokens")
    if isinstance(noise_score, dict) and "agreement" in noise_score:
        text += f"; the replica (the noise floor) on {float(noise_score['agreement']):.1%}"
    return text + "."


def grade_view(grade: dict[str, Any] | None, a_is_baseline: bool) -> dict[str, Any] | None:
    """A pair's grade against its reference answer (``shadowdiff.verdict.flips``) in the page's
    letters: the reference, the grader, and per letter right, wrong or not graded (None)
    and what the grader read in that answer. The reference is the log's, the same whoever
    is A: nothing here names a side."""
    if not isinstance(grade, dict):
        return None
    sides = ("baseline", "candidate") if a_is_baseline else ("candidate", "baseline")
    found = grade.get("found") or {}
    return {"reference": grade.get("reference"), "grader": grade.get("grader"),
            "letters": [(letter, grade.get(side), found.get(side)) for letter, side in zip("AB", sides, strict=True)]}

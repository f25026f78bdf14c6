"""Comparing two answers to the same request: the core shared by the proxy and replay.

The steps follow the manual check shadowdiff automates (../shared/DESIGN.md):
byte equality settles identical pairs; equality after normalization (Unicode NFC,
whitespace runs collapsed) settles formatting-only ones; the rest are graded by a
normalized Indel similarity (rapidfuzz: ``1 - indel_distance / (len(a) + len(b))``,
i.e. twice the longest common subsequence over the total length), over characters, or
over words for answers longer than ``WORD_LEVEL_FROM`` characters.

An answer is compared whole (``compare_answers``): every choice's text, reasoning,
refusal and tool calls. It is ``identical`` only if every part of every choice is
byte-identical (tool calls by name and arguments: their ids are random per request),
``equivalent`` only if every part is equal after normalization (tool-call arguments as
canonical JSON, so reordered keys are equal); otherwise similarity and the first
divergence are measured on ``render``, one text of the whole answer, which for a plain
one-choice answer is its text.

``difflib.SequenceMatcher(None, a, b).ratio()`` - what the manual check used - turns
on ``autojunk`` for texts of 200+ characters and then reports nonsense (0.17 for two
272-character answers that differ in one digit), and it is quadratic. It is kept only
as a compatibility column, with ``autojunk=False``, for texts up to ``difflib_limit``
characters.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from rapidfuzz.distance import Indel, Prefix

from shadowdiff.errors import ConfigError

if TYPE_CHECKING:   # records import this module (a Pair holds a Comparison)
    from shadowdiff.records import Answer, Choice

# Character-level Indel is bit-parallel but still O(n*m/64): two unrelated
# 32,000-character answers take ~45 ms. Past this length the same formula is applied
# to words and punctuation marks instead (~5x fewer units), which keeps any pair under
# 10 ms (bench/compare_cost.py) at the price of judging long answers a little more
# strictly (a changed digit costs a whole word).
WORD_LEVEL_FROM = 8000
_UNITS = re.compile(r"\w+|[^\w\s]")


class Outcome(StrEnum):
    """What a pair's comparison concluded, from most to least alike."""

    IDENTICAL = "identical"      # byte-for-byte equal
    EQUIVALENT = "equivalent"    # equal after normalization (whitespace, NFC)
    NEAR = "near"                # similarity at or above the near threshold
    DIVERGENT = "divergent"      # below it
    ERROR = "error"              # a side failed: nothing to compare


@dataclass(frozen=True)
class Thresholds:
    """Where ``near`` ends and ``divergent`` begins, and the difflib length cap."""

    near: float = 0.9
    difflib_limit: int = 0   # 0: off; the column is opt-in (quadratic cost)

    def __post_init__(self) -> None:
        if not 0.0 <= self.near <= 1.0:
            raise ConfigError(f"the near threshold must be within 0..1, got {self.near}")
        if self.difflib_limit < 0:
            raise ConfigError("the difflib length limit must not be negative")


@dataclass(frozen=True)
class Comparison:
    """The comparison of a candidate (``b``) with a baseline (``a``)."""

    outcome: Outcome
    similarity: float | None            # normalized Indel similarity, 0..1
    difflib_ratio: float | None         # compatibility column (None past the limit)
    first_char: int | None              # first differing character, None if equal
    first_token: int | None             # first differing token, when tokens are known
    length_ratio: float | None          # len(b) / len(a), None when a is empty
    finish_reasons: tuple[str | None, str | None] = (None, None)

    @property
    def finish_differs(self) -> bool:
        return self.finish_reasons[0] != self.finish_reasons[1]


def normalize(text: str) -> str:
    """Unicode NFC with every whitespace run collapsed to one space, ends stripped."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def similarity(a: str, b: str) -> float:
    """Normalized Indel similarity: over characters, or over words for long texts."""
    if max(len(a), len(b)) > WORD_LEVEL_FROM:
        return float(Indel.normalized_similarity(_UNITS.findall(a), _UNITS.findall(b)))
    return float(Indel.normalized_similarity(a, b))


def difflib_ratio(a: str, b: str) -> float:
    """``SequenceMatcher(None, a, b, autojunk=False).ratio()``: quadratic, use sparingly."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def first_difference(a: Sequence[str] | str, b: Sequence[str] | str) -> int | None:
    """Index of the first differing element (character or token); None if equal."""
    common = int(Prefix.similarity(a, b))
    if common == len(a) == len(b):
        return None
    return common


def compare(a: str, b: str, *, tokens_a: Sequence[str] | None = None,
            tokens_b: Sequence[str] | None = None, finish_a: str | None = None,
            finish_b: str | None = None, thresholds: Thresholds = Thresholds()) -> Comparison:
    """Compare a candidate answer ``b`` with the baseline answer ``a``."""
    finish = (finish_a, finish_b)
    first_token = (first_difference(tokens_a, tokens_b)
                   if tokens_a is not None and tokens_b is not None else None)
    length_ratio = len(b) / len(a) if a else None
    if a == b:
        return Comparison(Outcome.IDENTICAL, 1.0, 1.0, None, first_token, length_ratio, finish)
    score = similarity(a, b)
    ratio = difflib_ratio(a, b) if max(len(a), len(b)) <= thresholds.difflib_limit else None
    if normalize(a) == normalize(b):
        outcome = Outcome.EQUIVALENT
    elif score >= thresholds.near:
        outcome = Outcome.NEAR
    else:
        outcome = Outcome.DIVERGENT
    return Comparison(outcome, score, ratio, first_difference(a, b), first_token, length_ratio, finish)


def render(choices: Sequence[Choice]) -> str:
    """The whole answer as one text: per choice, its reasoning as ``<think>…</think>`` (as
    reasoning models write it inline), its text, each tool call as
    ``<tool_call>NAME ARGUMENTS</tool_call>``, a refusal as ``<refusal>…</refusal>``; the
    choices after the first follow a line ``--- choice N ---``. A one-choice answer with
    nothing but text renders as that text."""
    out = []
    for choice in choices:
        parts = [] if choice.index == 0 else [f"--- choice {choice.index} ---"]
        if choice.reasoning is not None:
            parts.append(f"<think>{choice.reasoning}</think>")
        if choice.text or not parts:
            parts.append(choice.text)
        parts += [f"<tool_call>{name} {arguments}</tool_call>" for name, arguments in _calls(choice.tool_calls)]
        if choice.refusal is not None:
            parts.append(f"<refusal>{choice.refusal}</refusal>")
        out.append("\n".join(parts))
    return "\n".join(out)


def _calls(tool_calls: Sequence[Any] | None) -> list[tuple[Any, Any]]:
    """(name, arguments) of each call: what the call is, without its random id."""
    out = []
    for call in tool_calls or ():
        function = (call.get("function") if isinstance(call, dict) else None) or {}
        out.append((function.get("name"), function.get("arguments")))
    return out


def _canonical(arguments: Any) -> Any:
    """Tool-call arguments as a value: JSON parsed (key order and spacing do not count)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return normalize(arguments)
    return arguments


def _same_parts(a: Sequence[Choice], b: Sequence[Choice], *, normalized: bool) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        calls_x, calls_y = _calls(x.tool_calls), _calls(y.tool_calls)
        if normalized:
            texts = [(normalize(t), normalize(u)) if t is not None and u is not None else (t, u)
                     for t, u in ((x.text, y.text), (x.reasoning, y.reasoning), (x.refusal, y.refusal))]
            calls_x = [(name, _canonical(args)) for name, args in calls_x]
            calls_y = [(name, _canonical(args)) for name, args in calls_y]
        else:
            texts = [(x.text, y.text), (x.reasoning, y.reasoning), (x.refusal, y.refusal)]
        if any(t != u for t, u in texts) or calls_x != calls_y:
            return False
    return True


def compare_answers(a: Answer, b: Answer, thresholds: Thresholds = Thresholds()) -> Comparison:
    """Compare a candidate answer ``b`` with the baseline answer ``a``, whole."""
    choices_a, choices_b = a.choices, b.choices
    ra, rb = render(choices_a), render(choices_b)
    measured = compare(ra, rb, tokens_a=a.tokens, tokens_b=b.tokens, finish_a=a.finish_reason,
                       finish_b=b.finish_reason, thresholds=thresholds)
    if _same_parts(choices_a, choices_b, normalized=False):
        outcome = Outcome.IDENTICAL
    elif _same_parts(choices_a, choices_b, normalized=True):
        outcome = Outcome.EQUIVALENT
    elif measured.outcome in (Outcome.IDENTICAL, Outcome.EQUIVALENT):
        # the renderings agree but the parts do not (text in one, reasoning in the other): a change
        outcome = Outcome.NEAR
    else:
        outcome = measured.outcome
    if outcome is measured.outcome:
        return measured
    first_char = measured.first_char if ra != rb else 0
    return Comparison(outcome, measured.similarity if ra != rb else 1.0, measured.difflib_ratio, first_char,
                      measured.first_token, measured.length_ratio, measured.finish_reasons)


# Comparing answers longer than this (all parts together) runs in a thread, so that the
# event loop of the proxy or the replay never waits on it (bench/compare_cost.py).
OFF_LOOP_CHARS = 8000


async def compare_off_loop(a: Answer, b: Answer, thresholds: Thresholds = Thresholds()) -> Comparison:
    """``compare_answers`` for callers on an event loop (an error comparison if a side failed)."""
    if not (a.ok and b.ok):
        return error_comparison(a.finish_reason, b.finish_reason)
    size = max(sum(len(c.text) + len(c.reasoning or "") for c in answer.choices) for answer in (a, b))
    if size > OFF_LOOP_CHARS:
        return await asyncio.to_thread(compare_answers, a, b, thresholds)
    return compare_answers(a, b, thresholds)


def error_comparison(finish_a: str | None = None, finish_b: str | None = None) -> Comparison:
    """The comparison of a pair where a side failed."""
    return Comparison(Outcome.ERROR, None, None, None, None, None, (finish_a, finish_b))


def is_comparable(request: dict[str, Any]) -> bool:
    """Deterministic decoding: greedy (temperature 0 or top_k 1), or a fixed seed.

    A request without ``temperature`` samples at the server's default, so it is not.
    """
    return request.get("temperature") == 0 or request.get("top_k") == 1 or request.get("seed") is not None

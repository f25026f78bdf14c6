"""Comparing two answers to the same request: the core shared by the proxy and replay.

The steps follow the manual check shadowdiff automates:
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
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from rapidfuzz.distance import Indel, Postfix, Prefix

from shadowdiff.errors import ConfigError

if TYPE_CHECKING:   # records import this module (a Pair holds a Comparison)
    from shadowdiff.records import Answer, Choice

# Character-level Indel is bit-parallel but still O(n*m/64): two unrelated
# 32,000-character answers take ~45 ms. Past this length the same formula is applied
# to words and punctuation marks instead (~5x fewer units), which keeps any pair under
# 10 ms (bench/compare_cost.py) at the price of judging long answers a little more
# strictly (a changed digit costs a whole word).
WORD_LEVEL_FROM = 8000
# Indel costs about n*m/64 steps. Past this many cells in the differing middle of two
# answers the distance is sought within a band of the same cost (``_indel_similarity``):
# tens of milliseconds at most (bench/compare_cost.py).
MAX_CELLS = 50_000_000
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
        return _indel_similarity(_UNITS.findall(a), _UNITS.findall(b))
    return _indel_similarity(a, b)


def _indel_similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """``1 - indel distance / (len(a) + len(b))``, exact while the differing middle (what
    is left once the common head and tail are set aside, which changes nothing) is within
    ``MAX_CELLS``. Past it, the distance is sought only up to a budget of the same cost
    (rapidfuzz's banded search); a middle that differs more counts as wholly changed: a
    lower bound, so a huge answer rewritten throughout is divergent in bounded time."""
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    head, tail = common_ends(a, b)
    middle_a, middle_b = a[head:len(a) - tail], b[head:len(b) - tail]
    if len(middle_a) * len(middle_b) <= MAX_CELLS:
        return 1 - Indel.distance(middle_a, middle_b) / total
    budget = MAX_CELLS // max(len(middle_a), len(middle_b))
    distance = Indel.distance(middle_a, middle_b, score_cutoff=budget)
    return 1 - (distance if distance <= budget else len(middle_a) + len(middle_b)) / total


def common_ends(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """The lengths of the common head and, after it, the common tail of two sequences."""
    head = int(Prefix.similarity(a, b))
    return head, int(Postfix.similarity(a[head:], b[head:]))


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
        if choice.reasoning:
            parts.append(f"<think>{choice.reasoning}</think>")
        if choice.text or not parts:
            parts.append(choice.text)
        parts += tool_call_lines(choice.tool_calls)
        if choice.refusal is not None:
            parts.append(f"<refusal>{choice.refusal}</refusal>")
        out.append("\n".join(parts))
    return "\n".join(out)


def tool_call_parts(tool_calls: Sequence[Any] | None) -> list[tuple[Any, Any]]:
    """(name, arguments) of each call: what the call is, without its random id. The one
    reading of a call for the comparison, the signals, the diffs and the request view;
    a call without the ``function`` wrapper is read as its own function, and anything but
    a list (a stored request's odd value) as no calls."""
    out = []
    for call in tool_calls if isinstance(tool_calls, list) else ():
        function = call.get("function", call) if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        out.append((function.get("name"), function.get("arguments")))
    return out


def tool_call_lines(tool_calls: Sequence[Any] | None) -> list[str]:
    """Each call as the rendering writes it: ``<tool_call>NAME ARGUMENTS</tool_call>``."""
    return [f"<tool_call>{name} {arguments}</tool_call>" for name, arguments in tool_call_parts(tool_calls)]


def call_keys(tool_calls: Sequence[Any] | None) -> list[tuple[Any, tuple[str, str]]]:
    """Each call as equivalence sees it: its name and canonical arguments."""
    return [(name, canonical_json(arguments)) for name, arguments in tool_call_parts(tool_calls)]


def canonical_json(arguments: Any) -> tuple[str, str]:
    """Tool-call arguments in one canonical form: ("json", the value re-serialized with
    sorted keys and no spaces) or, for text that is not JSON, ("text", it as sent: a tool
    reads every character of it). Types count (``true`` is not ``1``, ``1`` is not
    ``1.0``), decimals are compared as written (``1e400`` is not ``1e500``, though both
    overflow a float) and a repeated key is kept, so only key order and spacing are
    forgiven; JSON too deeply nested to parse is text."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    try:
        value = json.loads(arguments, object_pairs_hook=_sorted_pairs, parse_float=_decimal, parse_constant=_decimal)
        return "json", json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError, ArithmeticError):
        return "text", arguments


def _decimal(literal: str) -> dict[str, str]:
    """A JSON number with a fraction or exponent (or NaN, Infinity), by its exact value."""
    try:
        return {"\u0000number": str(Decimal(literal).normalize())}
    except ArithmeticError:
        return {"\u0000number": literal}


def _sorted_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object with its keys sorted; with a repeated key, its pairs as a list (which
    a plain ``dict`` would silently collapse to the last)."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) == len(keys):
        return dict(sorted(pairs))
    return {"\u0000duplicate keys": sorted(pairs, key=lambda kv: kv[0])}


def _parts(choice: Choice, *, normalized: bool) -> tuple[Any, ...]:
    """What a choice is, for equality: its index, text, reasoning (empty is none: servers
    differ on null and ""), refusal, tool calls (name and arguments, not the id) and
    finish reason; ``normalized``: texts normalized and arguments canonical."""
    texts = [choice.text, choice.reasoning or None, choice.refusal]
    calls: list[Any] = call_keys(choice.tool_calls) if normalized else tool_call_parts(choice.tool_calls)
    if normalized:
        texts = [None if t is None else normalize(t) for t in texts]
    return choice.index, *texts, calls, choice.finish_reason


def _same_parts(a: Sequence[Choice], b: Sequence[Choice], *, normalized: bool) -> bool:
    return [_parts(x, normalized=normalized) for x in a] == [_parts(y, normalized=normalized) for y in b]


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
    if off_loop(a, b):
        return await asyncio.to_thread(compare_answers, a, b, thresholds)
    return compare_answers(a, b, thresholds)


def off_loop(a: Answer, b: Answer) -> bool:
    """Whether work on these two answers (comparing them, their signals) is long enough to
    go to a thread: every part of every choice counts."""
    return max(sum(len(c.text) + len(c.reasoning or "") + len(c.refusal or "")
                   + sum(len(str(arguments)) for _, arguments in tool_call_parts(c.tool_calls)) for c in answer.choices)
               for answer in (a, b)) > OFF_LOOP_CHARS


def error_comparison(finish_a: str | None = None, finish_b: str | None = None) -> Comparison:
    """The comparison of a pair where a side failed."""
    return Comparison(Outcome.ERROR, None, None, None, None, None, (finish_a, finish_b))


_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})


def wants_stream(request: dict[str, Any]) -> bool:
    """Whether the server will stream its answer: ``stream`` read as vLLM's pydantic
    request model reads a boolean (lax mode), so ``"false"`` and ``0`` are not a stream."""
    stream = request.get("stream")
    if isinstance(stream, str):
        return stream.strip().lower() in _TRUE
    return bool(stream) if isinstance(stream, bool | int | float) else False


def is_greedy(request: dict[str, Any]) -> bool:
    """Greedy decoding (temperature 0 or top_k 1): each token the model's own top choice,
    which teacher-forced scoring measures. A seed alone makes sampling repeatable, not greedy."""
    return request.get("temperature") == 0 or request.get("top_k") == 1


def is_comparable(request: dict[str, Any]) -> bool:
    """Deterministic decoding: greedy (temperature 0 or top_k 1), or a fixed seed.

    A request without ``temperature`` samples at the server's default, so it is not.
    """
    return request.get("temperature") == 0 or request.get("top_k") == 1 or request.get("seed") is not None

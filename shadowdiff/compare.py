"""Comparing two answers to the same request: the core shared by the proxy and replay.

The steps follow the manual check shadowdiff automates (../shared/DESIGN.md):
byte equality settles identical pairs; equality after normalization (Unicode NFC,
whitespace runs collapsed) settles formatting-only ones; the rest are graded by a
normalized Indel similarity (rapidfuzz: ``1 - indel_distance / (len(a) + len(b))``,
i.e. twice the longest common subsequence over the total length), over characters, or
over words for answers longer than ``WORD_LEVEL_FROM`` characters.

``difflib.SequenceMatcher(None, a, b).ratio()`` - what the manual check used - turns
on ``autojunk`` for texts of 200+ characters and then reports nonsense (0.17 for two
272-character answers that differ in one digit), and it is quadratic. It is kept only
as a compatibility column, with ``autojunk=False``, for texts up to ``difflib_limit``
characters.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rapidfuzz.distance import Indel, Prefix

from shadowdiff.errors import ConfigError

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


def error_comparison(finish_a: str | None = None, finish_b: str | None = None) -> Comparison:
    """The comparison of a pair where a side failed."""
    return Comparison(Outcome.ERROR, None, None, None, None, None, (finish_a, finish_b))


def is_comparable(request: dict[str, Any]) -> bool:
    """Deterministic decoding: greedy (temperature 0 or top_k 1), or a fixed seed.

    A request without ``temperature`` samples at the server's default, so it is not.
    """
    return request.get("temperature") == 0 or request.get("top_k") == 1 or request.get("seed") is not None

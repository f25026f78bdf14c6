"""The normalized Indel similarity of two answers, at a cost set by what differs.

``1 - indel_distance / (len(a) + len(b))`` (rapidfuzz's Indel: twice the longest common
subsequence over the total length), over characters, or over words and punctuation marks
(``UNITS``) for answers longer than ``WORD_LEVEL_FROM`` characters.

The common start and end of the two texts are set aside before anything else (they change
no distance): only the differing middle is split into words and aligned. The words of the
common parts still count in the total, and are counted by ``unit_count`` without being
split out. Past a budget, the distance is sought within a band, and past that estimated
(``Similarity.estimated``): every figure is exact or a lower bound.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

from rapidfuzz.distance import Indel, Postfix, Prefix

# Character-level Indel is bit-parallel but still O(n*m/64): two unrelated
# 32,000-character answers take ~17 ms. Past this length the same formula is applied
# to words and punctuation marks instead (~5x fewer units), which keeps any pair under
# 10 ms (bench/compare_cost.py) at the price of judging long answers a little more
# strictly (a changed digit costs a whole word).
WORD_LEVEL_FROM = 8000
# Indel costs about n*m/64 steps. Up to this many cells (n*m) in the differing middle of two
# answers the distance is computed whole (a few milliseconds at most).
MAX_CELLS = 50_000_000
# Past MAX_CELLS the distance is sought within a band (rapidfuzz's score_cutoff), widened
# while the band's cells (its width times the middle's length) stay within this: ~70 ms for
# a megabyte answer's words, enough for a wording drift over half of it (bench/compare_cost.py).
BAND_CELLS = 1_000_000_000
# A distance past the widest band is estimated over pieces of this many units of each middle,
# aligned piece by piece (n*CHUNK cells: ~30 ms for a megabyte of unrelated words).
CHUNK = 4096
UNITS = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"\w")
_SPACE = re.compile(r"\s")
_WORD_RUN = re.compile(r"\w*")


@dataclass(frozen=True)
class Similarity:
    """A similarity, and whether it is an estimate: then a lower bound, never above the
    exact figure (the distance of one alignment of the two texts, not of the best)."""

    score: float
    estimated: bool = False


def common_ends(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """The lengths of the common head and, after it, the common tail of two sequences."""
    head = int(Prefix.similarity(a, b))
    return head, int(Postfix.similarity(a[head:], b[head:]))


def similarity(a: str, b: str, ends: tuple[int, int] | None = None) -> Similarity:
    """The normalized Indel similarity of two texts: over characters, or over words
    (``UNITS``) when either is longer than ``WORD_LEVEL_FROM``. ``ends``: their common
    character head and tail, when the caller has them."""
    total = len(a) + len(b)
    if total == 0:
        return Similarity(1.0)
    head, tail = ends if ends is not None else common_ends(a, b)
    if max(len(a), len(b)) <= WORD_LEVEL_FROM:
        distance, estimated = _distance(a[head:len(a) - tail], b[head:len(b) - tail])
        return Similarity(1 - distance / total, estimated)
    head, tail = _unit_ends(a, b, head, tail)
    words_a = UNITS.findall(a, head, len(a) - tail)
    words_b = UNITS.findall(b, head, len(b) - tail)
    common = unit_count(a[:head]) + unit_count(a[len(a) - tail:])
    distance, estimated = _distance(words_a, words_b)
    return Similarity(1 - distance / (2 * common + len(words_a) + len(words_b)), estimated)


def _unit_ends(a: str, b: str, head: int, tail: int) -> tuple[int, int]:
    """A common head and tail (in characters) cut back to where both texts split into the
    same units: never inside a word, so that the units of each text are those of its
    head, its middle and its tail, split apart."""
    if head and _word_at(a, head - 1) and (_word_at(a, head) or _word_at(b, head)):
        head = _run_start(a, head)   # a[head-1] is then no word character (or head 0), in both
    start_a, start_b = len(a) - tail, len(b) - tail
    if tail and _word_at(a, start_a) and (_word_at(a, start_a - 1) or _word_at(b, start_b - 1)):
        tail = len(a) - _run_end(a, start_a)
    return head, tail


def _word_at(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a word character (as ``UNITS`` reads one); an end is not."""
    return 0 <= i < len(text) and _WORD.match(text, i) is not None


def _run_end(text: str, start: int) -> int:
    """Where the run of word characters from ``start`` on ends."""
    return _WORD_RUN.match(text, start).end()   # type: ignore[union-attr]  # \w* always matches


def _run_start(text: str, end: int) -> int:
    """Where the run of word characters that ends at ``end`` starts: read backwards in
    windows that grow, so that the cost is the run's length, not the text's."""
    window = 64
    while True:
        low = max(0, end - window)
        backwards = text[low:end][::-1]
        run = _WORD_RUN.match(backwards).end()   # type: ignore[union-attr]
        if run < len(backwards) or low == 0:
            return end - run
        window *= 8


# Each byte of a text's UTF-8 form as the class of its character, for ``unit_count``: "w" a
# word character, "s" whitespace, "p" anything else (a unit of its own); the first byte of
# a character outside ASCII "x" (classed apart), its other bytes dropped.
def _class_of(ch: str) -> bytes:
    """The class of a character, as ``_CLASSES`` writes one."""
    return b"w" if _WORD.match(ch) else b"s" if _SPACE.match(ch) else b"p"


_CLASSES = b"".join(_class_of(chr(i)) for i in range(128)) + b"." * 64 + b"x" * 64
_CONTINUATION = bytes(range(0x80, 0xC0))
_WORD_OR_NOT = bytes.maketrans(b"sp", b"nn")
_ASCII = bytes(range(0x80))
# Past this share of characters outside ASCII, splitting with UNITS is the cheaper count.
_OUTSIDE_ASCII = 1 / 8


def unit_count(text: str) -> int:
    """``len(UNITS.findall(text))``, without making a string of each unit: the text's
    characters classed by C-level byte translations (~6x faster on an English answer), then
    each unit is one character that is neither a word character nor whitespace, or a run of
    word characters (counted where one follows a character of another class)."""
    raw = text.encode("utf-8", "surrogatepass")   # a lone surrogate (JSON allows one) is a unit
    classes = raw.translate(_CLASSES, _CONTINUATION)
    if not text.isascii():
        outside = raw.translate(None, _ASCII).decode("utf-8", "surrogatepass")
        if len(outside) > len(text) * _OUTSIDE_ASCII:
            return len(UNITS.findall(text))
        pieces = classes.split(b"x")
        classes = b"".join(chain.from_iterable(zip(pieces, map(_class_outside, outside), strict=False))) + pieces[-1]
    words = classes.translate(_WORD_OR_NOT)
    return classes.count(b"p") + words.count(b"nw") + words.startswith(b"w")


# (the classes of the characters outside ASCII, remembered: an answer repeats its few)
_class_outside = functools.lru_cache(maxsize=4096)(_class_of)


def _distance(a: Sequence[str], b: Sequence[str]) -> tuple[int, bool]:
    """The Indel distance of two middles, and whether it is estimated (then an upper
    bound): whole up to ``MAX_CELLS``, else within bands widened eightfold while they stay
    within ``BAND_CELLS`` (a small distance is found by the first, cheap one), else over
    ``CHUNK``-sized pieces aligned in order."""
    if len(a) * len(b) <= MAX_CELLS:
        return int(Indel.distance(a, b)), False
    longest = max(len(a), len(b))
    widest = max(1, BAND_CELLS // longest)
    band = min(max(1, MAX_CELLS // longest), widest)
    while True:
        distance = int(Indel.distance(a, b, score_cutoff=band))
        if distance <= band:
            return distance, False
        if band == widest:
            break
        band = min(band * 8, widest)
    pieces = -(-longest // CHUNK)
    return sum(int(Indel.distance(a[i * len(a) // pieces:(i + 1) * len(a) // pieces],
                                  b[i * len(b) // pieces:(i + 1) * len(b) // pieces]))
               for i in range(pieces)), True

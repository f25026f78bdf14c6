"""The Indel similarity with its common ends set aside: the same figure as aligning the whole
texts, over characters or over words, on random and Unicode texts; the words of the common
ends counted without being split out; megabyte answers exact for a drift, estimated (and
saying so) past the budgets.

The full computation each test checks against is rapidfuzz's normalized Indel similarity
over the whole texts (or their whole unit lists), with no cut-off: the definition.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from shadowdiff.answers import indel
from shadowdiff.answers.compare import compare
from shadowdiff.answers.indel import UNITS, WORD_LEVEL_FROM, unit_count
from tests.support.longtexts import drifted, long_answer


def full(a: str, b: str) -> float:
    """The similarity by its definition: the whole texts (or unit lists) aligned."""
    if max(len(a), len(b)) > WORD_LEVEL_FROM:
        return Indel.normalized_similarity(UNITS.findall(a), UNITS.findall(b))
    return Indel.normalized_similarity(a, b)


# characters of every class the units tell apart, ASCII and not: word characters (letters,
# digits, "_", accented and CJK letters, a combining mark), whitespace (a no-break space, an
# ideographic space, U+001C), and others (punctuation, an em dash, an emoji, a lone surrogate)
MIXED = "ab_7 \n\t.,-é漢字\u0301\u00a0\u3000\u001c—😀\ud800"
# any character, lone surrogates included (a JSON string may hold one; st.text leaves them out)
ANY_TEXT = st.lists(st.one_of(st.characters(), st.sampled_from(["\ud800", "\udc00", "\ud83d", "\udfff"])),
                    max_size=60).map("".join)


@st.composite
def edited(draw: st.DrawFn, base: str) -> str:
    """``base`` with a few characters replaced, inserted or deleted anywhere."""
    text = list(base)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["replace", "insert", "delete"]))
        if kind == "insert" or at == len(text):
            text.insert(at, draw(st.sampled_from(MIXED)))
        elif kind == "replace":
            text[at] = draw(st.sampled_from(MIXED))
        else:
            del text[at]
    return "".join(text)


@st.composite
def long_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """Two texts past WORD_LEVEL_FROM, one an edit of the other (changes inside words, at
    word edges, at either end), in a text of long and short words."""
    seed = draw(st.text(st.sampled_from(MIXED), min_size=1, max_size=40))
    base = (seed + " " + draw(st.sampled_from(["word", "x" * 300, "ü", "a_b"])) + " ") * (WORD_LEVEL_FROM // 30)
    return base, draw(edited(base))


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT, ANY_TEXT)
@example("abc", "abd")
@example("", "x")
@example("a b", "a b ")
def test_any_short_texts_measure_as_the_whole_alignment(a: str, b: str) -> None:
    assert indel.similarity(a, b).score == full(a, b)
    assert not indel.similarity(a, b).estimated


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_edited_short_texts_measure_as_the_whole_alignment(data: st.DataObject) -> None:
    a = data.draw(st.text(st.sampled_from(MIXED), max_size=300))
    b = data.draw(edited(a))
    assert indel.similarity(a, b).score == full(a, b)


@settings(max_examples=150, deadline=None)
@given(long_pairs())
@example(("x" * 9000 + " end", "x" * 4500 + "y" + "x" * 4499 + " end"))   # inside a 9,000-letter word
@example(("a " * 5000, "a " * 2500 + "b" + "a " * 2500))                   # a word glued to the next
@example(("word. " * 2000, "word " * 2000))                                # a mark dropped at every word
def test_long_texts_set_their_ends_aside_and_measure_as_the_whole_alignment(pair: tuple[str, str]) -> None:
    """Past WORD_LEVEL_FROM the common ends are cut back to where both texts split into the
    same words, and counted: the figure is the one of the whole unit lists."""
    a, b = pair
    for x, y in ((a, b), (b, a)):
        measured = indel.similarity(x, y)
        assert measured.score == full(x, y)
        assert not measured.estimated


@settings(max_examples=300, deadline=None)
@given(st.one_of(ANY_TEXT, st.text(st.sampled_from(MIXED), max_size=400),
                 st.text(st.characters(codec="ascii"), max_size=400)))
@example("")
@example("_a1 b\t—c")
@example("\ud83d\ude00 x")   # a surrogate pair as two lone surrogates
@example("é" * 50)           # past the share of characters outside ASCII the count splits instead
def test_unit_count_is_the_number_of_units(text: str) -> None:
    assert unit_count(text) == len(UNITS.findall(text))


@pytest.mark.slow   # the exact character-level ratio of a megabyte pair alone takes 1-2 s
def test_a_megabyte_drift_is_measured_exactly() -> None:
    """A wording drift over half a megabyte answer: found within the band, not read as a
    rewrite (it read 0.72 once, against 0.99)."""
    a = long_answer(1_000_000, 1)
    b = drifted(a)
    result = compare(a, b)
    assert result.similarity is not None and not result.similarity_estimated
    assert result.similarity == full(a, b)
    assert abs(result.similarity - Indel.normalized_similarity(a, b)) < 0.02   # the characters' figure too


def test_past_the_budgets_the_figure_is_an_estimate_and_a_lower_bound() -> None:
    """Two unrelated answers of 300,000 characters: their distance lies past the widest band,
    so it is estimated over pieces, marked so, and never above the exact figure."""
    a, b = long_answer(300_000, 1), long_answer(300_000, 2)
    result = compare(a, b)
    exact = full(a, b)
    assert result.similarity is not None and result.similarity_estimated
    assert exact - 0.05 < result.similarity <= exact
    assert not compare(a, a[:150_000] + "changed" + a[150_000:]).similarity_estimated

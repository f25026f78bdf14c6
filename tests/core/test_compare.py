"""The comparison shared by the proxy and replay."""

from __future__ import annotations

import pytest

from shadowdiff.compare import Outcome, Thresholds, compare, error_comparison, first_difference, normalize
from shadowdiff.errors import ConfigError

# Two 272-character answers that differ in one digit.
ANSWER = (
    "The population of the city grew from 2.1 million in 2010 to about 2.6 million in 2020, an increase of "
    "roughly 24 percent. Most of the growth came from migration, while the birth rate stayed flat. Housing "
    "prices rose faster than wages over the same decade, by 41.5 percent."
)
FLIPPED = ANSWER.replace("2.1 million", "2.2 million")


def test_one_digit_in_272_characters() -> None:
    assert len(ANSWER) == len(FLIPPED) == 272
    result = compare(ANSWER, FLIPPED)
    assert result.outcome is Outcome.NEAR
    assert result.similarity is not None and result.similarity > 0.95
    assert result.difflib_ratio is None  # the compatibility column is opt-in
    with_difflib = compare(ANSWER, FLIPPED, thresholds=Thresholds(difflib_limit=1000))
    assert with_difflib.difflib_ratio is not None and with_difflib.difflib_ratio > 0.95
    assert result.first_char == ANSWER.index("2.1 million") + 2


def test_identical_and_equivalent() -> None:
    same = compare(ANSWER, ANSWER, finish_a="stop", finish_b="stop")
    assert same.outcome is Outcome.IDENTICAL
    assert same.first_char is None and same.similarity == 1.0 and same.length_ratio == 1.0
    assert not same.finish_differs
    reflowed = ANSWER.replace(". ", ".\n\n")
    assert compare(ANSWER, reflowed).outcome is Outcome.EQUIVALENT
    decomposed = "Cafe\u0301 au lait"
    assert compare("Café au lait", decomposed).outcome is Outcome.EQUIVALENT
    assert normalize("  a\t b\n\nc  ") == "a b c"


def test_divergent_and_thresholds() -> None:
    other = "Bananas are a good source of potassium and ripen faster in a paper bag."
    assert compare(ANSWER, other).outcome is Outcome.DIVERGENT
    assert compare(ANSWER, FLIPPED, thresholds=Thresholds(near=0.9999)).outcome is Outcome.DIVERGENT
    with pytest.raises(ConfigError):
        Thresholds(near=1.5)


def test_tokens_lengths_and_finish_reasons() -> None:
    result = compare("a b c", "a b", tokens_a=["a", " b", " c"], tokens_b=["a", " b"],
                     finish_a="stop", finish_b="length")
    assert result.first_token == 2
    assert result.first_char == 3
    assert result.length_ratio == pytest.approx(3 / 5)
    assert result.finish_differs
    assert compare("", "x").length_ratio is None
    assert first_difference(["a", "b"], ["a", "b"]) is None
    assert first_difference("abc", "abd") == 2


def test_difflib_column_stops_at_the_limit() -> None:
    long_a = ANSWER * 10
    long_b = FLIPPED * 10
    assert compare(long_a, long_b, thresholds=Thresholds(difflib_limit=2000)).difflib_ratio is None
    assert compare(long_a, long_b, thresholds=Thresholds(difflib_limit=10_000)).difflib_ratio is not None


def test_error_comparison() -> None:
    result = error_comparison("stop", None)
    assert result.outcome is Outcome.ERROR
    assert result.similarity is None


def test_long_answers_are_compared_over_words() -> None:
    from shadowdiff.compare import WORD_LEVEL_FROM, similarity

    long_a = (ANSWER + " ") * (WORD_LEVEL_FROM // len(ANSWER) + 1)
    long_b = long_a.replace("2.1 million", "2.2 million", 1)
    words = len(__import__("re").findall(r"\w+|[^\w\s]", long_a))
    assert similarity(long_a, long_b) == pytest.approx(1 - 2 / (2 * words))
    assert compare(long_a, long_b).outcome is Outcome.NEAR

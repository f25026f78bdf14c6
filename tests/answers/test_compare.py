"""The comparison shared by the proxy and replay."""

from __future__ import annotations

import pytest

from shadowdiff.answers.compare import Thresholds, compare, error_comparison, first_difference, normalize
from shadowdiff.errors import ConfigError
from shadowdiff.vocabulary import Outcome

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
    paragraphs = ANSWER.replace(". ", ".\n")
    spaced = ANSWER.replace(". ", ".   \r\n\n \n").replace(" in ", "  in   ") + "\n\n"
    assert compare(paragraphs, spaced).outcome is Outcome.EQUIVALENT
    decomposed = "Cafe\u0301 au lait"
    assert compare("Café au lait", decomposed).outcome is Outcome.EQUIVALENT
    assert normalize("  a\t b\n\nc  ") == "  a\t b\nc"


def test_a_line_break_is_not_a_space() -> None:
    """Lines keep their breaks: a YAML mapping or a list written on one line is another text."""
    assert compare(ANSWER, ANSWER.replace(". ", ".\n")).outcome is Outcome.NEAR
    assert compare("a: 1\nb: 2", "a: 1 b: 2").outcome is not Outcome.EQUIVALENT
    assert compare("- eggs\n- milk", "- eggs - milk").outcome is not Outcome.EQUIVALENT


def test_what_equivalent_forgives_and_keeps() -> None:
    """The rule, case by case: prose layout is forgiven; indentation, code blocks, quoted
    strings and the spaces after a list marker are kept."""
    forgiven = [
        ("a  b   c", "a b c"),                                 # a run of spaces between words
        ("Done.   \nNext.", "Done.\nNext."),                   # trailing spaces
        ("One.\r\nTwo.\r\n", "One.\nTwo."),                    # CRLF, a trailing newline
        ("One.\n\n\nTwo.", "One.\nTwo."),                      # blank lines between prose lines
        ("x:\n\n  y: 1", "x:\n  y: 1"),                         # a blank line before a block
        ("- a\n\n- b", "- a\n- b"),                             # a loose list and a tight one
        ("```\ncode\n```\n\nAfter  it.", "```\ncode\n```\nAfter it."),
    ]
    kept = [
        ("x:\n  y: 1", "x:\n    y: 1"),                         # indentation
        ("x:\n  y: 1", "x:\n\ty: 1"),                           # a tab is not two spaces
        ("a\tb", "a b"),                                        # nor one: a TSV row is not a sentence
        ("  a  b", "  a b"),                                    # inside an indented line
        ("k: |\n  a\n\n  b", "k: |\n  a\n  b"),                   # a blank line inside a block
        ("```\nx  = 1\n```", "```\nx = 1\n```"),                # inside a fenced block
        ("```\na\n\nb\n```", "```\na\nb\n```"),                  # a blank line inside one
        ("~~~\na \n~~~", "~~~\na\n~~~"),                          # trailing spaces inside one
        ('say "a  b" now', 'say "a b" now'),                    # a double-quoted string
        ("x = 'a  b'", "x = 'a b'"),                            # a single-quoted one
        ("run `ls  -l`", "run `ls -l`"),                        # inline code
        ("-   a\n  - b", "- a\n  - b"),                          # after a list marker: nesting
        (" Indented", "Indented"),                              # a first line's indentation
    ]
    for a, b in forgiven:
        assert compare(a, b).outcome is Outcome.EQUIVALENT, (a, b)
    for a, b in kept:
        assert compare(a, b).outcome not in (Outcome.IDENTICAL, Outcome.EQUIVALENT), (a, b)


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
    from shadowdiff.answers.compare import WORD_LEVEL_FROM, similarity

    long_a = (ANSWER + " ") * (WORD_LEVEL_FROM // len(ANSWER) + 1)
    long_b = long_a.replace("2.1 million", "2.2 million", 1)
    words = len(__import__("re").findall(r"\w+|[^\w\s]", long_a))
    assert similarity(long_a, long_b) == pytest.approx(1 - 2 / (2 * words))
    assert compare(long_a, long_b).outcome is Outcome.NEAR

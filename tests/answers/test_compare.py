"""The comparison shared by the proxy and replay."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from shadowdiff.answers import compare as compare_module
from shadowdiff.answers.compare import (
    Thresholds,
    compare,
    compare_answers,
    equivalent_texts,
    error_comparison,
    first_difference,
    normalize,
)
from shadowdiff.answers.records import Answer
from shadowdiff.errors import ConfigError
from shadowdiff.vocabulary import Outcome, Side

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


# Texts made of what normalize reads: words, runs of every kind of whitespace, quotes and
# fences, a decomposed accent (not NFC), CRLF.
_PIECES = ["word", "é", "e\u0301", " ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0", '"', "`", "```", "    ", "- ", "x"]
_LAYOUTS = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@st.composite
def _relaid(draw: st.DrawFn, text: str) -> str:
    """``text`` with a few pieces inserted, deleted or replaced: its layout changed, or a
    character that is not whitespace."""
    out = list(text)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(out)))
        if at < len(out) and draw(st.booleans()):
            del out[at]
        else:
            out.insert(at, draw(st.sampled_from(_PIECES)))
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(st.data())
@example(None)
def test_equivalent_is_equality_after_normalizing(data: st.DataObject | None) -> None:
    """Equivalence skips normalizing where a character that is not whitespace differs,
    and is still exactly ``normalize(a) == normalize(b)``."""
    pairs = [("Cafe\u0301  au lait", "Café au lait"), ("a  b\r\n", "a b"), ("a b", "a c")]
    if data is not None:
        a = data.draw(_LAYOUTS)
        pairs = [(a, data.draw(_relaid(a)))]
    for a, b in pairs:
        same = normalize(a) == normalize(b)
        assert equivalent_texts(a, b) is same, (a, b)
        assert (compare(a, b).outcome in (Outcome.IDENTICAL, Outcome.EQUIVALENT)) is same, (a, b)


def test_a_changed_word_is_never_normalized_and_a_layout_change_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Normalizing a whole answer costs more than everything else together: a text is
    normalized at most once per comparison, and not at all where a word changed."""
    normalized: list[str] = []

    def counted(text: str) -> str:
        normalized.append(text)
        return normalize(text)

    monkeypatch.setattr(compare_module, "normalize", counted)
    long_a = (ANSWER + "\n\n") * 40
    compare(long_a, long_a.replace("2.1 million", "2.2 million", 1))
    compare_answers(_answer(Side.BASELINE, long_a), _answer(Side.CANDIDATE, long_a.replace("2010", "2011")))
    assert normalized == []
    relaid = long_a.replace(". ", ".  ")
    assert compare(long_a, relaid).outcome is Outcome.EQUIVALENT
    assert sorted(normalized) == sorted([long_a, relaid])
    normalized.clear()
    # a one-choice answer is its own rendering: text and rendering share one normalization
    assert compare_answers(_answer(Side.BASELINE, long_a), _answer(Side.CANDIDATE, relaid)).outcome \
        is Outcome.EQUIVALENT
    assert sorted(normalized) == sorted([long_a, relaid])
    normalized.clear()
    # spaces changed inside code: not equivalent, and still each text normalized once
    code_a, code_b = "```\nx = 1\n```\n" + long_a, "```\nx =  1\n```\n" + long_a
    assert compare_answers(_answer(Side.BASELINE, code_a), _answer(Side.CANDIDATE, code_b)).outcome is Outcome.NEAR
    assert sorted(normalized) == sorted([code_a, code_b])


def _answer(side: Side, text: str) -> Answer:
    return Answer(side=side, model="m", text=text, finish_reason="stop")


def test_long_answers_with_one_change_keep_their_figures() -> None:
    """Setting the common ends aside changes no figure: the similarity, the first divergence
    and the outcome are those of the whole texts, and exact."""
    long_a = (ANSWER + "\n\n") * 120
    for long_b in (long_a.replace("2.1 million", "2.2 million", 1), long_a[:-40], "Prefix. " + long_a,
                   long_a.replace("percent", "per cent")):
        result = compare(long_a, long_b)
        units_a, units_b = re.findall(r"\w+|[^\w\s]", long_a), re.findall(r"\w+|[^\w\s]", long_b)
        assert result.similarity == Indel.normalized_similarity(units_a, units_b)
        assert result.first_char == first_difference(long_a, long_b)
        assert not result.similarity_estimated

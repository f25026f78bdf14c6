"""The side-by-side view of two whole answers: each part against the same part, line by line."""

from __future__ import annotations

import html
import json
import re
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, PackageLoader

from shadowdiff.answers.invisible import add_filters, is_invisible, visible
from shadowdiff.answers.records import Answer, Choice
from shadowdiff.report import diffview
from shadowdiff.report.diffview import (
    CallPair,
    ChoicePair,
    PairView,
    Part,
    Row,
    Segments,
    pair_view,
    sides_view,
    text_rows,
    word_diff,
)
from shadowdiff.vocabulary import Side
from tests.support.answercells import cells


def call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "random", "type": "function", "function": {"name": name, "arguments": arguments}}


def same(line: str) -> Row:
    return Row([("same", line)], [("same", line)])


def changed_line(head: str, deleted: str, inserted: str, tail: str) -> Row:
    """A line changed in one place: what it keeps before and after, what each side has there."""
    return Row([("same", head), ("del", deleted)] + ([("same", tail)] if tail else []),
               [("same", head), ("ins", inserted)] + ([("same", tail)] if tail else []))


def test_each_part_is_marked_against_the_same_part_of_the_same_choice() -> None:
    a = [Choice(0, "", reasoning="17 * 23 = 391", tool_calls=[call("get_weather", '{"unit": "celsius"}')])]
    b = [Choice(0, "", reasoning="17 * 23 = 381", tool_calls=[call("get_time", '{"unit": "celsius"}')])]
    [c] = pair_view(a, b).choices
    assert c.reasoning == Part([changed_line("17 * 23 = ", "391", "381", "")])
    assert c.reasoning.changed and c.reasoning.chars == (13, 13)
    assert c.text is None   # null content beside tool calls: no empty box
    assert c.tool_calls[0].name == Part([Row([("del", "get_weather")], [("ins", "get_time")])])
    assert c.tool_calls[0].arguments == Part([same('{"unit": "celsius"}')])


def test_a_choice_or_a_call_only_one_side_has_is_marked_whole_beside_a_note() -> None:
    a = [Choice(0, "Paris", tool_calls=[call("f", "{}")])]
    b = [Choice(0, "Paris", tool_calls=[call("f", "{}"), call("g", "{}")]), Choice(1, "Lyon")]
    first, second = pair_view(a, b).choices
    assert (first.missing, second.missing) == ((False, False), (True, False))
    assert first.tool_calls[1].name == Part([Row(None, [("ins", "g")])], absent=(True, False))
    assert not first.tool_calls[0].name.changed and not first.tool_calls[0].arguments.changed
    assert second.text == Part([Row(None, [("ins", "Lyon")])], absent=(True, False))


def test_identical_answers_have_nothing_marked_and_an_empty_answer_shows_its_empty_text() -> None:
    a = [Choice(0, "same", reasoning="same thought")]
    [c] = pair_view(a, a).choices
    assert c.reasoning and not c.reasoning.changed and c.text == Part([same("same")])
    [empty] = pair_view([Choice(0, "")], [Choice(0, "")]).choices
    assert empty.text == Part([Row([], [])])   # an answer of nothing: an (empty) text row, not no text at all
    [one] = pair_view([Choice(0, "")], [Choice(0, "x")]).choices
    assert one.text == Part([Row(None, [("ins", "x")])])


def test_a_failed_side_shows_nothing_and_the_other_side_unmarked() -> None:
    ok = Answer(Side.BASELINE, "m", text="Paris\nFrance", reasoning="hm")
    failed = Answer(Side.CANDIDATE, "m", error="HTTP 500")
    view = sides_view(ok, failed)
    assert view.failed == (False, True) and view.choices[0].missing == (False, True)
    assert view.choices[0].text == Part([Row([("same", "Paris\n")], None), Row([("same", "France")], None)],
                                        absent=(False, True))
    assert sides_view(None, None) == PairView([], (True, True))
    assert sides_view(failed, ok) == _mirrored_view(view)


def test_lines_after_an_insertion_stay_side_by_side() -> None:
    """The sides used to drift apart after an inserted line; now the inserted lines
    stand beside gaps and every line after them beside its counterpart."""
    a = "Intro.\nAlpha line.\nBeta line.\nGamma line.\nEnd."
    b = "Intro.\nNew line one.\nNew line two.\nAlpha line.\nBeta line!\nGamma line.\nEnd."
    assert text_rows(a, b) == [
        same("Intro.\n"), Row(None, [("ins", "New line one.\n")]), Row(None, [("ins", "New line two.\n")]),
        same("Alpha line.\n"),
        changed_line("Beta line", ".", "!", "\n"),
        same("Gamma line.\n"), same("End.")]


def test_a_line_inserted_inside_a_changed_run_is_put_beside_a_gap() -> None:
    """In a run of lines that differ, a line goes beside the other side's line that keeps
    its words, not simply the next one."""
    rows = text_rows("The cat sat.\nEnd\n", "Note this.\nThe cat sat down.\nEnd\n")
    assert rows == [Row(None, [("ins", "Note this.\n")]),
                    Row([("same", "The cat sat.\n")], [("same", "The cat sat"), ("ins", " down"), ("same", ".\n")]),
                    same("End\n")]


def test_an_inserted_blank_line_is_a_change_of_its_own() -> None:
    assert text_rows("Line one.\nLine two.", "Line one.\n\nLine two.") == [
        same("Line one.\n"), Row(None, [("ins", "\n")]), same("Line two.")]


def test_indentation_is_marked_as_whitespace_not_as_words() -> None:
    a = "def f(x):\n    if x:\n        return 1\n"
    b = "def f(x):\n  if x:\n    return 1\n"
    rows = text_rows(a, b)
    assert rows[1:] == [Row([("del", "    "), ("same", "if x:\n")], [("ins", "  "), ("same", "if x:\n")]),
                        Row([("del", "        "), ("same", "return 1\n")], [("ins", "    "), ("same", "return 1\n")])]
    # and a line break where a space was: the two lines of one side beside the one line of the other
    assert text_rows("Line one. Line two.", "Line one.\nLine two.") == [
        Row([("same", "Line one."), ("del", " "), ("same", "Line two.")], [("same", "Line one."), ("ins", "\n")]),
        Row(None, [("same", "Line two.")])]


def test_tool_call_arguments_are_aligned_line_by_line() -> None:
    args = {"city": "Oslo", "unit": "celsius", "days": 3}
    more = {"city": "Oslo", "country": "NO", "unit": "celsius", "days": 4}
    [c] = pair_view([Choice(0, "", tool_calls=[call("get_weather", json.dumps(args, indent=2))])],
                    [Choice(0, "", tool_calls=[call("get_weather", json.dumps(more, indent=2))])]).choices
    [weather] = c.tool_calls
    assert not weather.name.changed
    assert weather.arguments.rows == [
        same("{\n"), same('  "city": "Oslo",\n'), Row(None, [("ins", '  "country": "NO",\n')]),
        same('  "unit": "celsius",\n'),
        changed_line('  "days": ', "3", "4", "\n"),
        same("}")]


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The cells (items times items) of each alignment Indel is asked for, in order."""
    sizes: list[int] = []
    opcodes = diffview.Indel.opcodes

    def counted(a: Any, b: Any) -> Any:
        sizes.append(len(a) * len(b))
        return opcodes(a, b)

    monkeypatch.setattr(diffview.Indel, "opcodes", counted)
    return sizes


def test_huge_answers_are_diffed_within_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """No alignment is asked for more than its bound: MAX_LINE_CELLS lines times lines,
    MAX_DIFF_CELLS words times words; past it a run is marked whole and its lines are
    paired in order."""
    sizes = _spied(monkeypatch)
    monkeypatch.setattr(diffview, "MAX_DIFF_CELLS", 400)
    monkeypatch.setattr(diffview, "MAX_LINE_CELLS", 400)
    a = "".join(f"left {i} " + "word " * 8 + "\n" for i in range(30))
    b = "".join(f"right {i} " + "word " * 8 + "\n" for i in range(25))
    rows = text_rows("Head.\n" + a + "Tail.", "Head.\n" + b + "Tail.")
    assert max(sizes, default=0) <= 400
    assert rows[0] == same("Head.\n") and rows[-1] == same("Tail.") and len(rows) == 32
    middle = rows[1:-1]
    assert [row.left for row in middle] == [[("del", line)] for line in a.splitlines(True)]
    assert [row.right for row in middle] == [[("ins", line)] for line in b.splitlines(True)] + [None] * 5
    # many runs, each within the bound: together they have no more
    sizes.clear()
    rows = text_rows("".join(f"{i}\nalpha {i} one two three\n" for i in range(10)),
                     "".join(f"{i}\n{i} alpha one two three\n" for i in range(10)))
    assert len(sizes) == 1 + 4   # the lines, then the runs of 10 by 10 words while the bound lasts
    assert rows[1].left == [("del", "alpha "), ("same", "0 one two three\n")]
    assert rows[-1] == Row([("del", "alpha 9 one two three\n")], [("ins", "9 alpha one two three\n")])
    # within the bound the same texts are aligned word by word
    monkeypatch.setattr(diffview, "MAX_DIFF_CELLS", 25_000_000)
    assert any(kind == "same" for row in text_rows(a, b) for kind, _ in row.left or ())


def test_lines_are_aligned_far_past_the_bound_on_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two one-word changes 15,000 lines apart in a 50,000-line answer: the lines between
    them stand beside themselves, unmarked (the words' bound, applied to the lines, marked
    all 15,001 as deleted and inserted); each changed line is word-diffed within its bound."""
    sizes = _spied(monkeypatch)
    lines = [f"line {i} of a long answer\n" for i in range(50_000)]
    changed = list(lines)
    changed[20_000], changed[35_000] = "line 20000 of a short answer\n", "line 35000 of a long reply\n"
    rows = text_rows("".join(lines), "".join(changed))
    assert len(rows) == 50_000
    assert [i for i, row in enumerate(rows) if any(row.changed)] == [20_000, 35_000]
    assert rows[20_000] == changed_line("line 20000 of a ", "long", "short", " answer\n")
    assert sizes[0] == 15_001 ** 2 > diffview.MAX_DIFF_CELLS       # the lines, in one alignment
    assert sizes[0] <= diffview.MAX_LINE_CELLS
    assert max(sizes[1:]) <= diffview.MAX_DIFF_CELLS and len(sizes) == 3   # then each changed line's words
    # past the lines' bound the middle is one run, marked whole: no alignment of its lines
    sizes.clear()
    monkeypatch.setattr(diffview, "MAX_LINE_CELLS", 15_001 ** 2 - 1)
    rows = text_rows("".join(lines), "".join(changed))
    assert sizes == [] and sum(any(row.changed) for row in rows) == 15_001


_TEXTS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "42", " ", "  ", ", ", "\n", "\n\n", "\t", ".",
                                   "alpha\n", "beta\n"]), max_size=14).map("".join)


def _mirror(segments: Segments | None) -> Segments | None:
    swap = {"del": "ins", "ins": "del", "same": "same"}
    return None if segments is None else [(swap[kind], text) for kind, text in segments]


def _mirrored_part(part: Part | None) -> Part | None:
    return None if part is None else Part([row.mirrored() for row in part.rows], part.absent[::-1])


def _mirrored_view(view: PairView) -> PairView:
    def choice(c: ChoicePair) -> ChoicePair:
        calls = [CallPair(_mirrored_part(k.name), _mirrored_part(k.arguments)) for k in c.tool_calls]  # type: ignore[arg-type]
        return ChoicePair(c.index, c.finish[::-1], c.missing[::-1], _mirrored_part(c.reasoning),
                          _mirrored_part(c.text), calls, _mirrored_part(c.refusal))
    return PairView([choice(c) for c in view.choices], view.failed[::-1])


def _side(rows: list[Row], side: int) -> str:
    return "".join(text for row in rows for _, text in (row.left, row.right)[side] or ())

def test_the_request_view_takes_odd_stored_requests() -> None:
    """A stored request is whatever a client sent: an odd ``tool_calls`` is no calls, not a 500."""
    from shadowdiff.report.requestview import request_view

    view = request_view({"messages": [{"role": "assistant", "content": "hi", "tool_calls": 5},
                                      {"role": "assistant", "content": None, "tool_calls": [
                                          {"function": {"name": "f", "arguments": "{}"}}]},
                                      {"role": "user", "content": "x"}]})
    assert view.messages == [("assistant", "hi"), ("assistant", "<tool_call>f {}</tool_call>"), ("user", "x")]


@settings(max_examples=300, deadline=None)
@given(_TEXTS, _TEXTS)
def test_swapped_texts_are_marked_as_the_mirror_image(a: str, b: str) -> None:
    """Ties in the diff are broken alike whichever text comes first: a text's marks do not
    say which side it is on (one pair's highlighting once changed when swapped)."""
    left, right = word_diff(a, b)
    assert word_diff(b, a) == (_mirror(right), _mirror(left))
    assert "".join(t for _, t in left) == a and "".join(t for _, t in right) == b


_CHOICES = st.lists(st.builds(
    Choice, st.integers(0, 2), _TEXTS, st.none() | _TEXTS, st.none() | _TEXTS,
    st.none() | st.lists(st.builds(call, st.sampled_from(["f", "g"]), _TEXTS), max_size=2)), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.none() | _CHOICES, st.none() | _CHOICES)
def test_swapped_answers_are_marked_as_the_mirror_image(a: list[Choice] | None, b: list[Choice] | None) -> None:
    assert pair_view(b, a) == _mirrored_view(pair_view(a, b))


@settings(max_examples=300, deadline=None)
@given(_TEXTS, _TEXTS)
def test_swapped_texts_are_laid_out_as_the_mirror_image(a: str, b: str) -> None:
    """The line alignment breaks its ties alike whichever text comes first too, and keeps
    every character of both texts in order."""
    rows = text_rows(a, b)
    assert text_rows(b, a) == [row.mirrored() for row in rows]
    assert (_side(rows, 0), _side(rows, 1)) == (a, b)
    for row in rows:   # a line is a line: one newline, at its end
        for cell in (row.left, row.right):
            assert "\n" not in "".join(text for _, text in cell or ())[:-1]


_LINE_WORDS = st.lists(st.sampled_from(["alpha", "beta", "42", " ", "."]), min_size=1, max_size=5).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE_WORDS, max_size=8), st.lists(st.tuples(st.integers(0, 8), _LINE_WORDS), max_size=4))
def test_inserted_lines_never_push_the_other_lines_out_of_line(lines: list[str],
                                                               inserted: list[tuple[int, str]]) -> None:
    """Whatever lines are inserted (of words the others lack), every other line stands
    beside itself, unmarked, and each inserted line beside a gap."""
    a = [line + "\n" for line in lines]
    b = list(a)
    for at, line in sorted(inserted, reverse=True):
        b.insert(min(at, len(b)), "NEW " + line + "\n")
    for row in text_rows("".join(a), "".join(b)):
        if row.left is None:
            assert row.right and row.right[0] == ("ins", row.right[0][1]) and row.right[0][1].startswith("NEW ")
        else:
            assert row.left == row.right and not any(row.changed)


def test_two_swapped_words_keep_the_same_word_on_either_side() -> None:
    left, right = word_diff("alpha beta", "beta alpha")
    assert word_diff("beta alpha", "alpha beta") == (_mirror(right), _mirror(left))
    kept = {text for segments in (left, right) for kind, text in segments if kind == "same" and text.strip()}
    assert len(kept) == 1   # one word kept, the same one in both texts


def test_two_swapped_lines_keep_the_same_line_on_either_side() -> None:
    rows = text_rows("alpha\nbeta\n", "beta\nalpha\n")
    assert text_rows("beta\nalpha\n", "alpha\nbeta\n") == [row.mirrored() for row in rows]
    assert len([row for row in rows if row.left and row.right]) == 1   # one line kept, beside itself


# Issue: invisible and bidi characters spoofed the diff (U+202E showed "24" as "42").
_CF = "\u00ad\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff\U000e0041"
_CONTROLS = "\x00\x07\r\x1b\x7f\x85\u2028\u2029"


def _marker(ch: str) -> str:
    return f">U+{ord(ch):04X}</span>"


def test_invisible_characters_are_shown_as_their_code_points() -> None:
    assert visible("total \u202e24\u202c units") == (
        'total <span class="cf" title="right-to-left override">U+202E</span>24'
        '<span class="cf" title="pop directional formatting">U+202C</span> units')
    for ch in _CF + _CONTROLS:
        shown = visible(f"4{ch}2")
        assert _marker(ch) in shown and ch not in shown, repr(ch)
    # the newline and the tab have markers of their own; accents, letters of any script and
    # markup are text (escaped)
    for text in ("a\nb\tc", "é", "e\u0301", "שלום 42", "\u00a0", "👍🏽"):
        assert visible(text) == text
    assert visible("<b>&\u200b") == '&lt;b&gt;&amp;<span class="cf" title="zero width space">U+200B</span>'


def test_the_pattern_matches_every_invisible_character_and_nothing_else() -> None:
    """Over every code point: the compiled class (written as ranges) is the category test."""
    from shadowdiff.answers.invisible import _pattern
    pattern, lines = _pattern(), _pattern("\n")
    wrong = [code for code in range(sys.maxunicode + 1)
             if bool(pattern.fullmatch(chr(code))) is not is_invisible(chr(code))]
    assert wrong == []
    assert lines.fullmatch("\n") and not pattern.fullmatch("\n") and lines.fullmatch("\u202e")


_UNICODE = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_UNICODE)
def test_no_invisible_character_is_written_and_none_is_lost(text: str) -> None:
    shown = str(visible(text))
    assert not [ch for ch in shown if is_invisible(ch)]
    back = re.sub(r'<span class="cf" title="[^"]*">U\+([0-9A-F]{4,6})</span>', lambda m: chr(int(m[1], 16)), shown)
    assert html.unescape(back) == text


def _rendered(view: PairView, blind: bool) -> str:
    env = Environment(loader=PackageLoader("shadowdiff.report", "templates"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    add_filters(env)
    template = env.from_string('{% from "_answer.html" import pair_view %}'
                               '{% call(at) pair_view(view, blind) %}{{ at }}{% endcall %}')
    return template.render(view=view, blind=blind)


@pytest.mark.parametrize("blind", [False, True])
def test_the_answer_cells_show_markers_changed_or_not(blind: bool) -> None:
    """An RLO reverses the digits after it, in changed text or not: every one is a marker,
    and none is written live; the same for a control character in changed whitespace."""
    page = _rendered(pair_view([Choice(0, "total 42 units\nkept \u202e12\u202c\na b\n")],
                               [Choice(0, "total \u202e24\u202c units\nkept \u202e12\u202c\na\x0cb\n")]), blind)
    left, right = cells(page, "text", "l"), cells(page, "text", "r")
    rlo, pdf = _marker("\u202e"), _marker("\u202c")
    assert rlo not in (left[0] or "") and f"{rlo}24<span" in (right[0] or "")
    assert left[1] == right[1] and f"{rlo}12<span" in (left[1] or "") and pdf in (left[1] or "")
    assert _marker("\x0c") in (right[2] or "") and "ws-other" not in page
    assert not [ch for ch in page if is_invisible(ch)]


def test_lines_that_differ_only_in_their_normalization_say_so() -> None:
    """é as one character and as e with a combining accent look alike: the row is marked
    changed (they are different strings) and says they are the same once normalized (NFC)."""
    [row] = text_rows("café 42\n", "cafe\u0301 42\n")
    assert row.changed == (True, True) and row.normalized_alike and row.mirrored().normalized_alike
    assert not text_rows("café\n", "cafe\n")[0].normalized_alike
    assert not same("café\n").normalized_alike and not Row(None, [("ins", "é")]).normalized_alike
    page = _rendered(pair_view([Choice(0, "café 42\nsame\n")], [Choice(0, "cafe\u0301 42\nsame\n")]), True)
    assert page.count('class="l changed nfc" title="the same text once Unicode-normalized (NFC)') == 1
    assert page.count('class="r changed nfc" title="the same text once Unicode-normalized (NFC)') == 1
    assert page.count("nfc") == 2

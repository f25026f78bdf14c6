"""The side-by-side view of two whole answers: each part against the same part."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shadowdiff.diffview import CallView, ChoiceView, Segments, answer_diff, sides_diff, word_diff
from shadowdiff.records import Answer, Choice, Side


def call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "random", "type": "function", "function": {"name": name, "arguments": arguments}}


def test_each_part_is_marked_against_the_same_part_of_the_same_choice() -> None:
    a = [Choice(0, "", reasoning="17 * 23 = 391", tool_calls=[call("get_weather", '{"unit": "celsius"}')])]
    b = [Choice(0, "", reasoning="17 * 23 = 381", tool_calls=[call("get_time", '{"unit": "celsius"}')])]
    [left], [right] = answer_diff(a, b)
    assert left.reasoning == [("same", "17 * 23 = "), ("del", "391")] and left.reasoning_changed
    assert right.reasoning == [("same", "17 * 23 = "), ("ins", "381")]
    assert left.text is None and right.text is None   # null content beside tool calls: no empty box
    assert left.tool_calls[0].name == [("del", "get_weather")] and left.tool_calls[0].changed
    assert right.tool_calls[0].arguments == [("same", '{"unit": "celsius"}')]


def test_a_choice_or_a_call_only_one_side_has_is_marked_whole() -> None:
    a = [Choice(0, "Paris", tool_calls=[call("f", "{}")])]
    b = [Choice(0, "Paris", tool_calls=[call("f", "{}"), call("g", "{}")]), Choice(1, "Lyon")]
    left, right = answer_diff(a, b)
    assert [c.missing for c in left] == [False, True] and [c.missing for c in right] == [False, False]
    assert right[0].tool_calls[1].name == [("ins", "g")] and not right[0].tool_calls[0].changed
    assert right[1].text == [("ins", "Lyon")]


def test_identical_answers_have_nothing_marked_and_an_empty_answer_shows_its_empty_text() -> None:
    a = [Choice(0, "same", reasoning="same thought")]
    [left], [right] = answer_diff(a, a)
    assert not left.reasoning_changed and left.text == right.text == [("same", "same")]
    [empty], _ = answer_diff([Choice(0, "")], [Choice(0, "x")])
    assert empty.text == []   # an answer of nothing: an (empty) text box, not no box at all


def test_a_failed_side_shows_nothing_and_the_other_side_unmarked() -> None:
    ok = Answer(Side.BASELINE, "m", text="Paris")
    failed = Answer(Side.CANDIDATE, "m", error="HTTP 500")
    left, right = sides_diff(ok, failed)
    assert right == [] and left[0].text == [("same", "Paris")]
    assert sides_diff(None, None) == ([], [])


def test_the_request_view_takes_odd_stored_requests() -> None:
    """A stored request is whatever a client sent: an odd ``tool_calls`` is no calls, not a 500."""
    from shadowdiff.requestview import request_view

    view = request_view({"messages": [{"role": "assistant", "content": "hi", "tool_calls": 5},
                                      {"role": "assistant", "content": None, "tool_calls": [
                                          {"function": {"name": "f", "arguments": "{}"}}]},
                                      {"role": "user", "content": "x"}]})
    assert view.messages == [("assistant", "hi"), ("assistant", "<tool_call>f {}</tool_call>"), ("user", "x")]


_TEXTS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "42", " ", ", ", "\n", "."]), max_size=12).map("".join)


def _mirror(segments: Segments | None) -> Segments | None:
    swap = {"del": "ins", "ins": "del", "same": "same"}
    return None if segments is None else [(swap[kind], text) for kind, text in segments]


def _mirrored(views: list[ChoiceView]) -> list[ChoiceView]:
    return [replace(v, reasoning=_mirror(v.reasoning), text=_mirror(v.text), refusal=_mirror(v.refusal),
                    tool_calls=[CallView(_mirror(c.name) or [], _mirror(c.arguments) or []) for c in v.tool_calls])
            for v in views]


@settings(max_examples=300, deadline=None)
@given(_TEXTS, _TEXTS)
def test_swapped_texts_are_marked_as_the_mirror_image(a: str, b: str) -> None:
    """Ties in the diff are broken alike whichever text comes first: a text's marks do not
    say which side it is on (issue 18: one pair's highlighting changed when swapped)."""
    left, right = word_diff(a, b)
    assert word_diff(b, a) == (_mirror(right), _mirror(left))
    assert "".join(t for _, t in left) == a and "".join(t for _, t in right) == b


_CHOICES = st.lists(st.builds(
    Choice, st.integers(0, 2), _TEXTS, st.none() | _TEXTS, st.none() | _TEXTS,
    st.none() | st.lists(st.builds(call, st.sampled_from(["f", "g"]), _TEXTS), max_size=2)), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.none() | _CHOICES, st.none() | _CHOICES)
def test_swapped_answers_are_marked_as_the_mirror_image(a: list[Choice] | None, b: list[Choice] | None) -> None:
    left, right = answer_diff(a, b)
    assert answer_diff(b, a) == (_mirrored(right), _mirrored(left))


def test_two_swapped_words_keep_the_same_word_on_either_side() -> None:
    left, right = word_diff("alpha beta", "beta alpha")
    assert word_diff("beta alpha", "alpha beta") == (_mirror(right), _mirror(left))
    kept = {text for segments in (left, right) for kind, text in segments if kind == "same" and text.strip()}
    assert len(kept) == 1   # one word kept, the same one in both texts

"""The graders (shadowdiff/triage/grading.py) on the answers models really write, and odd ones."""

from __future__ import annotations

import pytest

from shadowdiff.answers.records import Answer
from shadowdiff.errors import InputError
from shadowdiff.triage.grading import (
    Grader,
    answer_text,
    check_reference,
    default_grader,
    grade_answer,
    grade_text,
    grader_named,
)
from shadowdiff.vocabulary import Side


def right(text: str, reference: str | float, grader: Grader) -> bool | None:
    return grade_text(text, reference, grader).correct


@pytest.mark.parametrize(("text", "reference", "expected"), [
    ("Paris", "Paris", True),
    ("  paris.  ", "Paris", True),                         # trimmed, case-folded, a final period ignored
    ("New   York\nCity", "new york city", True),           # whitespace collapsed
    ("ＰＡＲＩＳ", "paris", True),                          # full-width letters are the same letters (NFKC)
    ("Straße", "STRASSE", True),                           # case-folding, not lower()
    ("Paris, France", "Paris", False),                     # the whole answer, not a part of it
    ("Paris..", "Paris", False),                           # one final period, not any number of them
    ("", "Paris", False),
    ("Counting from the 9th, it is a Sunday.\n\nAnswer: Sunday", "Sunday", True),   # the explicit final answer
    ("**Answer: 2000-09-08**", "2000-09-08", True),          # markdown emphasis around it
    ("Answer: Monday.\nNo wait, the answer is Sunday", "Sunday", True),   # the last one
    ("It is Sunday, I think.\nAnswer: Monday", "Sunday", False),        # the marked answer, not a word in the text
    ("The answer is \\boxed{Paris}", "Paris", True),
    # emphasis around the answer and one final period, inside or outside it, are ignored
    ("Answer: **Tuesday**.", "Tuesday", True),
    ("The answer is *Tuesday*.", "Tuesday", True),
    ("Answer: `Tuesday`.", "Tuesday", True),
    ("**Answer:** Tuesday", "Tuesday", True),
    ("Answer: **Tuesday.**", "Tuesday", True),
    ("Answer: __Tuesday__", "Tuesday", True),
    ("**Tuesday**", "Tuesday", True),                        # the whole answer, no marker
    ("Answer: Tuesday", "**Tuesday**.", True),                # a reference read the same way
    ("Answer: **Monday**.", "Tuesday", False),
    ("Answer: **Tuesday**..", "Tuesday", False),               # still one period, not two
    ("Answer: Tuesday..", "Tuesday", False),
    ("", ".", False), ("", "*", False), ("**", "*", False),  # nothing but emphasis or a period stays itself
])
def test_exact(text: str, reference: str, expected: bool) -> None:
    assert right(text, reference, Grader.EXACT) is expected


@pytest.mark.parametrize(("text", "reference", "expected"), [
    ("The answer is 42.", 42, True),
    ("The answer is 42.", "42", True),
    ("6 * 7 = 42", 42, True),                                         # the last number
    ("We have 3 boxes of 14, so 42 in all.", 42, True),
    ("Answer: 42\nI checked it in 3 steps.", 42, True),               # an explicit answer beats the last number
    ("The answer is 41. Wait, 6*7 is 42.", 42, False),                # ... even a wrong one (it is the answer)
    ("#### 1,234", 1234, True),                                       # GSM8K's marker, thousands separator
    ("So x = -3.5", -3.5, True),
    ("So x = 3.5", -3.5, False),                                      # the sign counts
    ("Pages 5-3 are gone, leaving 2", 2, True),                       # a hyphen after a digit is no minus
    ("Half of it: 1/2", 0.5, True),                                   # a fraction
    ("Half of it: 1/2", "0.5", True),
    (r"$\boxed{\frac{3}{4}}$, i.e. about 0.7 of it", 0.75, True),     # boxed wins, LaTeX fraction read
    (r"\boxed{12} apples, from 3 trees", 12, True),
    ("About 2.5e3 metres", 2500, True),
    ("It costs $1,000,001.", 1000000, False),                         # whole numbers: exactly equal
    ("pi is 3.1415927", 3.14159265, True),                            # others: within a relative 1e-6
    ("pi is 3.14", 3.14159265, False),
    ("42.0", 42, True),
    ("0.1", 0.1, True),                                               # a JSON float is its decimal, not its binary
    ("No number here.", 42, False),
    ("", 0, False),
    ("1/0 is undefined", 1, False),                                   # no division by zero, no crash
    ("1e999999 is big", 1, False),                                    # an absurd exponent: no number, no hang
    ("The total is 72.", "The total comes to 72 dollars.", True),     # a prose reference: its final number
    ("There are 7 apples. Answer: 1e500", "7", False),                # an unreadable final answer is no number:
    ("There are 7 apples. Answer: 1/0", "7", False),                  # ... an earlier one does not stand in
    ("Answer: see the working above. 7", "7", True),
    ("Answer: 1.0000001", "1", False),                                # a whole reference: exactly equal
])
def test_number(text: str, reference: str | float, expected: bool) -> None:
    assert right(text, reference, Grader.NUMBER) is expected


def test_number_says_what_it_read() -> None:
    assert grade_text("So we get 1,234 apples", 1234, Grader.NUMBER).found == "1,234"
    assert grade_text("nothing", 1, Grader.NUMBER).found is None


@pytest.mark.parametrize(("text", "reference", "expected"), [
    ("Answer: B", "B", True),
    ("The answer is (c).", "C", True),
    ("**Answer: D**", "D", True),                                     # markdown bold
    (r"So the answer is $\boxed{A}$", "A", True),
    ("(A) is tempting, but the answer is (D).", "D", True),           # the explicit one, not the first letter
    ("Option (A) fails. Option (C) holds.", "C", True),               # no marker: the last parenthesised letter
    ("B. Because it is blue.", "B", True),                            # a line that opens with the letter
    ("b", "B", True),                                                 # the letter alone
    ("The answer is a bit unclear", "A", False),                      # "a" the article is no choice
    ("I am not sure.", "A", False),
    ("Answer: K", "K", False),                                        # options run from A to J
    ("Answer: B", "(B)", True),                                       # a reference read the way answers are
    ("Answer: I am fairly sure it is (B)", "B", True),               # the pronoun I is no option I
    ("Answer: I", "I", True), ("Answer: I.", "I", True),
    ("Answer: B", "Answer: C", False),
    # a bare letter after the marker, in either case, reads as "(b)" does
    ("Answer: b", "B", True), ("answer: b.", "B", True), ("The answer is c", "C", True),
    ("Answer: B)", "B", True), ("Answer: b) 42", "B", True), ("Answer: (B).", "B", True),
    ("**Answer:** b", "B", True), ("**Answer:** B", "B", True), ("Answer: *b*", "B", True),
    ("Answer: `B`", "B", True), ("Answer: __b__.", "B", True),
    ("Answer: b, since (a) fails", "B", True),
    ("Answer: b", "C", False),
    ("Answer: beta", "B", False),                                     # a word, not a letter
    ("Answer: beta\nOption (C) is out", "B", False),
    ("The answer is a number", "A", False),                           # "a" the article is no choice
    ("Answer: a.k.a. the second one", "A", False),
])
def test_choice(text: str, reference: str, expected: bool) -> None:
    assert right(text, reference, Grader.CHOICE) is expected


@pytest.mark.parametrize(("text", "reference", "expected"), [
    ("The capital is PARIS.", r"\bparis\b", True),                    # case-insensitive
    ("Comparison", r"\bparis\b", False),
    ("The capital is PARIS.", r"(?-i:Paris)", False),                 # unless the user says otherwise
    ("The capital is Paris.", r"(?-i:Paris)", True),
    ("line one\nanswer: 7", r"^answer: \d+$", False),                # no multiline unless asked
    ("line one\nanswer: 7", r"(?m)^answer: \d+$", True),
])
def test_regex(text: str, reference: str, expected: bool) -> None:
    assert right(text, reference, Grader.REGEX) is expected


def test_regex_says_what_matched_and_stops_a_runaway_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    assert grade_text("The capital is Paris.", r"capital is \w+", Grader.REGEX).found == "capital is Paris"
    import shadowdiff.triage.grading as grading

    monkeypatch.setattr(grading, "REGEX_TIMEOUT", 0.05)
    # nested quantifiers on a long near-match: exponential backtracking, which re could not stop
    graded = grade_text("a" * 5000 + "!", r"^(\w+\s?)*$", Grader.REGEX)
    assert graded.correct is None and graded.problem and "not graded" in graded.problem


@pytest.mark.parametrize(("reference", "expected"), [
    (42, Grader.NUMBER), (-3.5, Grader.NUMBER), ("1,234", Grader.NUMBER), ("1/2", Grader.NUMBER),
    ("$5", Grader.NUMBER), ("3.5.", Grader.NUMBER),
    ("B", Grader.CHOICE), ("(C)", Grader.CHOICE),
    # one option letter in either case, bare or "(b)", "b)", "b.": graded as exact, "Answer: B" was wrong
    ("(b)", Grader.CHOICE), ("b", Grader.CHOICE), ("b)", Grader.CHOICE), ("b.", Grader.CHOICE),
    (" (c). ", Grader.CHOICE), ("a", Grader.CHOICE),
    ("K", Grader.EXACT), ("(k)", Grader.EXACT), ("ab", Grader.EXACT), ("(b) Paris", Grader.EXACT),
    ("Paris", Grader.EXACT), ("42 apples", Grader.EXACT), ("1, 2, 3", Grader.EXACT),
])
def test_default_grader(reference: str | float, expected: Grader) -> None:
    assert default_grader(reference) is expected


@pytest.mark.parametrize(("text", "reference", "expected"), [
    ("Answer: b", "(b)", True), ("Answer: B", "(b)", True), ("Answer: (b)", "b", True), ("b", "b)", True),
    ("Answer: B", "b.", True), ("The answer is (B).", "b", True),
    ("Answer: (c)", "(b)", False), ("Answer: c", "b", False),
])
def test_a_lower_case_option_reference_is_graded_by_its_letter(text: str, reference: str, expected: bool) -> None:
    """Graded by the grader a lower-case letter gets when none is named: the choice grader,
    and the letters compared whatever their case."""
    assert right(text, reference, default_grader(reference)) is expected


@pytest.mark.parametrize(("text", "reference", "expected"), [
    # more than one different number in the final answer: a hedge or a correction, not right
    ("Answer: 42 or 43", 42, False), ("Answer: 42 or 43", 43, False),
    ("Answer: 42 is not right; it is 41", 42, False), ("Answer: 42 is not right; it is 41", 41, False),
    ("Answer: 42, 43", 42, False), ("#### 42 or 43", 42, False), (r"\boxed{42 \text{ or } 43}", 42, False),
    # ... unless it is an equation: the one number after its last "="
    ("Answer: 42 + 1 = 43", 42, False), ("Answer: 42 + 1 = 43", 43, True),
    ("The answer is 42 because 6*7=42", 42, True), ("Answer: 6 * 7 = 40 + 2 = 42", 42, True),
    ("Answer: 1,234 + 1 = 1,235", 1235, True),
    ("Answer: 41 or 6*7 = 42", 42, False), ("Answer: x = 3, y = 4", 4, False),   # alternatives before it
    ("Answer: 6*7 = 42 or 43", 42, False),
    # what follows "because", "since", "which" or "given" is the reasoning, not the answer
    ("The answer is 42 because there are 6 boxes of 7.", 42, True),
    ("Answer: 43, since 42 is wrong", 43, True), ("Answer: 43, since 42 is wrong", 42, False),
    ("The final answer is 42, which is 6 times 7.", 42, True),
    # one number, however often and however written
    ("Answer: 42.", 42, True), ("Answer: $42", 42, True), ("Answer: 42 (forty-two)", 42, True),
    ("Answer: 1,234", 1234, True), ("Answer: 42 apples, 42 in all", 42, True), ("Answer: 42.0, i.e. 42", 42, True),
    ("Answer: -3.5", -3.5, True), (r"Answer: \frac{1}{2}", 0.5, True),
    # without an explicit final answer the last number is read, as before
    ("6 * 7 = 42, not 43 or 41, so 42", 42, True),
])
def test_a_final_answer_naming_several_numbers_is_not_right(text: str, reference: float, expected: bool) -> None:
    assert right(text, reference, Grader.NUMBER) is expected


def test_a_hedged_number_says_what_it_read() -> None:
    graded = grade_text("Working...\nAnswer: 42 or 43", 42, Grader.NUMBER)
    assert (graded.correct, graded.found, graded.problem) == (False, "42 or 43", None)


@pytest.mark.parametrize(("text", "reference", "expected"), [
    ("Answer: B or C", "B", False), ("Answer: B or C", "C", False), ("Answer: B or (C)", "B", False),
    ("Answer: (b) or (c)", "B", False), ("Answer: b) or c)", "B", False), ("Answer: (b) or c", "B", False),
    ("Answer: B, not A", "B", False), ("Answer: B/C", "B", False), ("**Answer:** B or C", "B", False),
    ("The answer is C. Option B is out", "C", False),
    # the same letter again, the article "A", the pronoun "I", words: one letter named
    ("Answer: B, that is (B)", "B", True), ("Answer: B. A dog would agree.", "B", True),
    ("Answer: B. I think so", "B", True), ("Answer: B (Jupiter)", "B", True), ("Answer: B (the 2nd one)", "B", True),
    ("Answer: B, e.g. the blue one", "B", True), ("Answer: B, I'm sure", "B", True),
    # what follows "because", "since", "which" or "given" is the reasoning
    ("Answer: b, since (a) fails", "B", True), ("Answer: B because C is too small", "B", True),
    ("Answer: B\nC was tempting", "B", True),                          # the answer's line only
])
def test_a_final_answer_naming_several_letters_is_not_right(text: str, reference: str, expected: bool) -> None:
    assert right(text, reference, Grader.CHOICE) is expected


def test_a_hedged_choice_says_what_it_read() -> None:
    graded = grade_text("Answer: B or C", "B", Grader.CHOICE)
    assert (graded.correct, graded.found) == (False, "B or C")
    assert grade_text("Answer: (c).", "C", Grader.CHOICE).found == "C"
    assert grade_text("Answer: (I) or (J)", "I", Grader.CHOICE).found == "(I) or (J)"


def test_a_reference_naming_several_answers_is_refused() -> None:
    with pytest.raises(InputError, match=r"the reference 'Answer: 3 or 4' reads as no one number \('3 or 4'\)"):
        check_reference("Answer: 3 or 4", Grader.NUMBER)
    with pytest.raises(InputError, match=r"the reference 'Answer: B or C' names more than one option letter"):
        check_reference("Answer: B or C", Grader.CHOICE)
    check_reference("so the answer is 4 because 2 + 2 = 4.", Grader.NUMBER)


def test_references_a_grader_cannot_grade_by_are_refused() -> None:
    with pytest.raises(InputError, match=r"not a valid regular expression .*missing \)"):
        check_reference("(unclosed", Grader.REGEX)
    with pytest.raises(InputError, match="no number"):
        check_reference("Paris", Grader.NUMBER)
    with pytest.raises(InputError, match="no option letter"):
        check_reference("Paris is lovely", Grader.CHOICE)
    for bad in ("", "   ", True, None, [1], {"a": 1}, float("nan")):
        with pytest.raises(InputError):
            check_reference(bad, Grader.EXACT)   # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown grader 'fuzzy': one of exact, number, choice, regex"):
        grader_named("fuzzy")
    check_reference("(B)", Grader.CHOICE)
    check_reference(r"\d+", Grader.REGEX)


def test_what_is_graded_is_the_answers_text() -> None:
    """The content: not the reasoning, not a thinking block left in the content; an error is not graded."""
    thinking = Answer(Side.BASELINE, "m", "42", reasoning="I first thought 41.")
    assert grade_answer(thinking, 41, Grader.NUMBER) == grade_text("42", 41, Grader.NUMBER)
    assert answer_text(Answer(Side.BASELINE, "m", "<think>maybe 41</think>\nIt is 42.")) == "\nIt is 42."
    assert answer_text(Answer(Side.BASELINE, "m", "<think>still thinking about 41")) == ""
    assert grade_answer(Answer(Side.BASELINE, "m", "", error="timed out"), 42, Grader.NUMBER) is None
    assert grade_answer(None, 42, Grader.NUMBER) is None
    calls = Answer(Side.BASELINE, "m", "", tool_calls=[{"id": "1", "type": "function",
                                                        "function": {"name": "add", "arguments": '{"x": 42}'}}])
    graded = grade_answer(calls, 42, Grader.NUMBER)
    assert graded is not None and graded.correct is False   # tool calls are no answer


@pytest.mark.parametrize(("text", "reference", "expected"), [
    # a final answer that negates the number it names says that number is not the answer
    ("The answer is not 42.", 42, False), ("Answer: isn't 42", 42, False), ("Answer: never 42", 42, False),
    ("The answer is definitely not 42.", 42, False), ("The answer cannot be 42.", 42, False),
    ("Answer: it is not equal to 42", 42, False), ("The answer isn’t $42.", 42, False),
    # without an explicit final answer: the last number, negated, is not the answer either
    ("The total is not 42.", 42, False), ("It isn't 42.", 42, False),
    # a negation elsewhere is no negation of the number
    ("The answer is 42, not 43.", 43, False), ("It is not 41: the total is 42.", 42, True),
    ("Answer: 42, no doubt", 42, True), ("I am not sure, but the answer is 42.", 42, True),
    ("6 * 7 = 42, not 43 or 41, so 42", 42, True),
])
def test_a_final_answer_that_negates_its_number_is_not_right(text: str, reference: float, expected: bool) -> None:
    assert right(text, reference, Grader.NUMBER) is expected

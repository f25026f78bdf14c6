"""Grading an answer against a reference answer: is it right?

A prompt may come with a ``reference`` answer and the name of a ``grader``.
Each side's answer is graded, so that a pair can show a *flip*: the baseline right and
the candidate wrong (``correct_to_wrong``), or the other way round. Four graders, each
returning whether the answer is right and what it read as the answer (``Graded``):

==========  ==============================================================================
``exact``   the answer's explicit final answer ("Answer: X", "the answer is X", "#### X",
            ``\\boxed{X}``; the last), else the whole answer, equals the reference read the
            same way, once both are normalised: Unicode NFKC, trimmed, case-folded,
            whitespace collapsed, markdown emphasis around it (``*``, ``_``, backticks)
            and one final period, inside it or after it, ignored: "**Tuesday**." is Tuesday
``number``  the answer's final number equals the reference's: an explicit final answer if
            there is one ("Answer: X", "the answer is X", "#### X", ``\\boxed{X}``), else the
            last number; ``1,234``, ``-3.5``, ``1/2``, ``\\frac{1}{2}``, ``2.5e3`` are read;
            where either is whole they must be equal, others within a relative 1e-6; an
            explicit final answer whose digits read as no number is wrong. The explicit
            answer is read up to "because", "since", "which" or "given" (its reasoning);
            naming more than one different number it is wrong ("42 or 43", "42 is not
            right; it is 41"), unless it is an equation: the number after its last "=",
            when that is the only one there and no ",", ";", "or" or "and" before it lists
            alternatives ("42 + 1 = 43" reads 43). A number negated just before it ("not 42",
            "isn't 42", "cannot be 42") is denied, not given: such a final answer, or such a
            last number, is wrong
``choice``  the chosen option letter (A–J) equals the reference's: an explicit "Answer: B"
            or ``\\boxed{B}`` if there is one (the last), else the last "(B)", else the last
            line that starts "B." or "B)", else an answer that is the letter alone. After
            "Answer:" the letter may be "(b)", "B", "B)", or a lower-case "b" that ends the
            line or is followed by ")", ",", ";", ":" or a period ("Answer: a number" is
            the article, "Answer: beta" no letter); ``*``, ``_`` and backticks are
            skipped, so "**Answer:** b" reads B. The rest of an "Answer: B" line, up to
            "because", "since", "which" or "given", may name no other option ("(c)", "c)",
            "C" alone, or "c" alone but "a" and "i"; not the article "A" or the pronoun "I"
            before a lower-case word): "Answer: B or C" is wrong. Letters of either case
            are the same letter
``regex``   the reference is a pattern found anywhere in the answer (``search``),
            case-insensitive (write ``(?-i:...)`` for a part where case counts)
==========  ==============================================================================

The reference of ``number`` and ``choice`` is read the way an answer is, so an MT-Bench
reference answer in prose ("... so the answer is 4.") grades by its final number.
Without a grader named, a reference that is a number (``42``, ``"1,234"``, ``"1/2"``)
is graded by ``number``, a single option letter of either case, bare or in parentheses,
with a ")" or "." after it (``"B"``, ``"(b)"``, ``"b)"``, ``"c."``) by ``choice``,
anything else by ``exact`` (``default_grader``).

What is graded: the first choice's text (the content). A reasoning model's thinking is
not graded, nor is a ``<think>...</think>`` block a server without a reasoning parser
leaves at the start of the content; tool calls and a refusal are not read either, so an
answer made only of them has no text and is graded wrong. An answer that failed (an
error) is not graded: None, neither right nor wrong.

User patterns are searched with the ``regex`` module under a timeout: the standard
``re`` holds the interpreter lock while it backtracks, so one pattern that backtracks
catastrophically on a long answer would freeze the whole replay.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

import regex

from shadowdiff.answers.records import Answer
from shadowdiff.errors import InputError

Reference = str | int | float
REGEX_TIMEOUT = 2.0        # seconds one pattern may search one answer
RELATIVE_TOLERANCE = 1e-6  # for numbers that are not whole: 3.14159 is 3.1415926, 3.14 is not
FOUND_MOST = 200           # characters of what a grader read, kept with the grade


class Grader(StrEnum):
    EXACT = "exact"
    NUMBER = "number"
    CHOICE = "choice"
    REGEX = "regex"


@dataclass(frozen=True)
class Graded:
    """One answer's grade: right or not (None: not graded, ``problem`` says why) and what
    the grader read as the answer (the number, the letter, the text the pattern matched)."""

    correct: bool | None
    found: str | None = None
    problem: str | None = None


def grader_named(name: str) -> Grader:
    """The grader called ``name``; ``InputError`` naming the graders for another."""
    try:
        return Grader(name)
    except ValueError:
        raise InputError(f"unknown grader {name!r}: one of {', '.join(g.value for g in Grader)}") from None


def check_type(reference: Any) -> Reference:
    """``reference`` if it can be one (a non-empty string or a finite number), else ``InputError``."""
    if isinstance(reference, bool) or not isinstance(reference, str | int | float):
        raise InputError(f"a reference is a string or a number, not {type(reference).__name__}")
    if isinstance(reference, str) and not reference.strip():
        raise InputError("the reference is empty")
    if isinstance(reference, float) and not math.isfinite(reference):
        raise InputError(f"the reference {reference} is not a finite number")
    return reference


def default_grader(reference: Reference) -> Grader:
    """``number`` for a number, ``choice`` for a single option letter, else ``exact``."""
    if isinstance(reference, int | float):
        return Grader.NUMBER
    text = reference.strip()
    if _whole_number(text) is not None:
        return Grader.NUMBER
    # either case: "(b)" is as much an option as "(B)", and graded exactly "Answer: B" was wrong
    letter = text.rstrip(".").removeprefix("(").removesuffix(")")
    if _LONE_LETTER.fullmatch(letter):
        return Grader.CHOICE
    return Grader.EXACT


def check_reference(reference: Reference, grader: Grader) -> None:
    """``InputError`` for a reference ``grader`` cannot grade by: a pattern that does not
    compile, a ``number`` reference without a number, a ``choice`` one without a letter."""
    check_type(reference)
    if grader is Grader.REGEX:
        _pattern(str(reference))
    elif grader is Grader.NUMBER and _reference_number(reference) is None:
        found = None if isinstance(reference, int | float) else _final_number(reference)[0]
        if found is None:
            raise InputError(f"the reference {_shown(reference)} holds no number for the number grader")
        raise InputError(f"the reference {_shown(reference)} reads as no one number ({found!r}) for the number "
                         "grader: give the one right answer")
    elif grader is Grader.CHOICE:
        found, letter = _choice(str(reference), reference=True)
        if letter is None and found is not None:
            raise InputError(f"the reference {_shown(reference)} names more than one option letter ({found!r}) "
                             "for the choice grader: give the one right option")
        if letter is None:
            raise InputError(f"the reference {_shown(reference)} names no option letter (A–J) for the choice grader")


def grade_text(text: str, reference: Reference, grader: Grader) -> Graded:
    """Whether ``text`` is right by ``reference`` under ``grader``."""
    if grader is Grader.EXACT:
        final = _final_text(text)
        return Graded(_normal(final) == _normal(_final_text(str(reference))), final[:FOUND_MOST])
    if grader is Grader.NUMBER:
        found, value = _final_number(text)
        expected = _reference_number(reference)
        return Graded(value is not None and expected is not None and _same_number(value, expected), found)
    if grader is Grader.CHOICE:
        found, letter = _choice(text)
        return Graded(letter is not None and letter == _letter(str(reference), reference=True), found)
    try:
        match = _pattern(str(reference)).search(text, timeout=REGEX_TIMEOUT, concurrent=True)
    except TimeoutError:
        return Graded(None, problem=f"the pattern searched for more than {REGEX_TIMEOUT:g} s: not graded")
    return Graded(match is not None, None if match is None else match.group(0)[:FOUND_MOST])


def answer_text(answer: Answer) -> str | None:
    """The text an answer is graded on: its first choice's content, without a thinking
    block at its start; None for an answer that failed."""
    if not answer.ok:
        return None
    text = answer.text
    if text.lstrip().startswith("<think>"):
        _, closed, after = text.partition("</think>")
        text = after if closed else ""   # cut off inside its thinking: no answer yet
    return text


def grade_answer(answer: Answer | None, reference: Reference, grader: Grader) -> Graded | None:
    """``answer``'s grade, or None when there is no answer to grade (it failed, or none)."""
    text = None if answer is None else answer_text(answer)
    return None if text is None else grade_text(text, reference, grader)


# -- exact ------------------------------------------------------------------------------

_SPACES = regex.compile(r"\s+")
_EMPHASIS = "*_`"   # markdown emphasis and code, as models wrap a final answer in them


def _normal(text: str) -> str:
    """Trimmed, case-folded, whitespace collapsed, NFKC; without the emphasis around it and
    one final period, inside the emphasis or after it ("**Tuesday**." and "*Tuesday.*").
    What is nothing but emphasis or a period stays as it is: an empty answer is no "*"."""
    text = _unwrapped(_SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold())
    return (_unwrapped(text[:-1]) or text) if text.endswith(".") else text


def _unwrapped(text: str) -> str:
    return text.strip(_EMPHASIS + " ") or text


def _explicit(text: str) -> tuple[list[str], list[str]]:
    """The explicit final answers a text gives, in order: its boxed ones, then what follows
    each "Answer:" (or "the answer is", "####") on its line. Boxed ones are read first."""
    return [m.group(1) for m in _BOXED.finditer(text)], [m.group("tail") for m in _MARKED.finditer(text)]


def _final_text(text: str) -> str:
    """The explicit final answer (the last boxed one, else the last marked one), else the text."""
    for explicit in _explicit(text):
        tails = [tail.strip().strip(_EMPHASIS).strip() for tail in explicit]
        if tails := [tail for tail in tails if tail]:
            return tails[-1]
    return text


# -- number -----------------------------------------------------------------------------

# A number not glued to a word before it: 1,234 (thousands), 3.5, .5, 1/2, 2.5e3, a sign
# (a hyphen after a digit or a letter is a range or a dash: "5-3" is 5 and 3).
_NUMBER = regex.compile(
    r"(?<![\w.])(?P<sign>[-+−])?(?P<int>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s*/\s*(?P<den>\d+(?:\.\d+)?)(?![\d.]))?(?:[eE](?P<exp>[-+]?\d+))?(?!\w)")
_FRAC = regex.compile(r"\\[dt]?frac\s*\{\s*([^{}]*?)\s*\}\s*\{\s*([^{}]*?)\s*\}")
_BOXED = regex.compile(r"\\boxed\s*\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}")
# an explicit final answer: what follows it on its line
_MARKED = regex.compile(r"(?i:(?:final\s+)?answer(?:\s+is|\s+was|\s+would\s+be)?\s*[:=]?|####)\s*(?P<tail>[^\n]*)")
_DIGIT = regex.compile(r"\d")
# What follows one of these in a final answer is its reasoning ("42 because 6*7 = 42"), not
# another answer; the answer segment ends there.
_REASONING = regex.compile(r"(?i)\b(?:because|since|which|given)\b")
# Before an equation's last "=", these list alternatives ("41 or 6*7 = 42", "x = 3, y = 4"):
# then the number after it is not the one answer.
_ALTERNATIVES = regex.compile(r"(?i)[,;]|\b(?:or|and)\b")
_LATEX_NOISE = regex.compile(r"\\[,;! ]|\$|\\text\{[^{}]*\}")
# A negation just before a number ("not 42", "isn't 42", "cannot be 42", "not equal to 42"):
# the text says the number is not the answer, so reading it as the answer would grade a
# denial right.
_NEGATED = regex.compile(r"(?i)(?:\bnot|\bnever|n['’]t|\bcannot)\s+"
                         r"(?:(?:be|equal|equals|to|exactly|quite|just|really|actually|simply)\s+)*[$€£]?$")
_NEGATION_REACH = 60   # characters before a number searched for its negation


def _numbers(text: str) -> list[tuple[str, Fraction]]:
    text = _FRAC.sub(r"\1/\2", text)
    found = []
    for m in _NUMBER.finditer(text):
        try:
            value = Fraction(m.group("int").replace(",", ""))
            if m.group("den") is not None:
                den = Fraction(m.group("den"))
                if not den:
                    continue
                value /= den
            if m.group("exp") is not None:
                exponent = int(m.group("exp"))
                if abs(exponent) > 400:   # beyond what any answer means; Fraction would take ages
                    continue
                value *= Fraction(10) ** exponent
        except (ValueError, ZeroDivisionError):
            continue
        found.append((m.group(0).strip(), -value if m.group("sign") in ("-", "−") else value))
    return found


def _final_number(text: str) -> tuple[str | None, Fraction | None]:
    """The answer's final number (as written, and its value): the last boxed or explicitly
    marked final answer that holds a number (``_segment_number``), else the last number.
    A final answer that names several numbers is read as no number (what it says, None)."""
    cleaned = _LATEX_NOISE.sub("", text)
    for explicit in _explicit(cleaned):
        for tail in reversed(explicit):
            segment = _answer_segment(tail)
            if numbers := _numbers(segment):
                if any(_negated(segment, m.start()) for m in _NUMBER.finditer(_FRAC.sub(r"\1/\2", segment))):
                    return segment.strip()[:FOUND_MOST], None
                return _segment_number(segment, numbers)
            if _DIGIT.search(segment):
                # a final answer written with digits that read as no number ("1e500", "1/0"):
                # that is the answer, and it is no number; an earlier one must not stand in
                return tail.strip()[:FOUND_MOST], None
    numbers = _numbers(cleaned)
    plain = _FRAC.sub(r"\1/\2", cleaned)
    last = next(reversed(list(_NUMBER.finditer(plain))), None)
    if last is not None and _negated(plain, last.start()):
        return last.group(0).strip(), None   # "It is not 42.": the last number, denied
    return numbers[-1] if numbers else (None, None)


def _negated(text: str, start: int) -> bool:
    """Whether the number at ``start`` is negated by the words just before it ("not 42")."""
    return bool(_NEGATED.search(text[max(0, start - _NEGATION_REACH):start]))


def _answer_segment(tail: str) -> str:
    """A final answer without the reasoning after it."""
    return _REASONING.split(tail, maxsplit=1)[0]


def _segment_number(segment: str, numbers: list[tuple[str, Fraction]]) -> tuple[str, Fraction | None]:
    """The one number a final answer gives: its number if it names one value (however often
    and however written), else the one number after the last "=" of an equation with no
    alternatives before it ("6*7 = 42", "42 + 1 = 43"); else it names several ("42 or 43",
    "42 is not right; it is 41"), and reading any one of them would pass a hedge: None."""
    if len({value for _, value in numbers}) == 1:
        return numbers[0]
    before, equals, after = segment.rpartition("=")
    stated = _numbers(after) if equals else []
    if len({value for _, value in stated}) == 1 and not _ALTERNATIVES.search(_NUMBER.sub("", before)):
        return stated[0]
    return segment.strip()[:FOUND_MOST], None


def _whole_number(text: str) -> Fraction | None:
    """The value of a text that is one number and nothing else ("1,234", "-3.5", "1/2")."""
    bare = text.strip().rstrip(".").strip("$€£% ")
    numbers = _numbers(bare)
    return numbers[0][1] if len(numbers) == 1 and numbers[0][0] == bare else None


def _reference_number(reference: Reference) -> Fraction | None:
    if isinstance(reference, int | float):
        return Fraction(reference) if isinstance(reference, int) else Fraction(repr(reference))
    return _final_number(reference)[1]


def _same_number(a: Fraction, b: Fraction) -> bool:
    if a == b:
        return True
    if a.denominator == 1 or b.denominator == 1:   # a whole number: 1,000,001 is not 1,000,000, nor 1.0000001 1
        return False
    return math.isclose(float(a), float(b), rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)


# -- choice -----------------------------------------------------------------------------

_LONE_LETTER = regex.compile(r"[A-Ja-j]")
# After the marker: "(b)", "B", or a lower-case "b" that ends the line or is followed by
# ")", ",", ";", ":" or a period ending the word: "The answer is a number" is the article,
# and reads none.
_CHOICE_MARKED = regex.compile(
    r"(?i:answer(?:\s+is|\s+was|\s+would\s+be)?\s*[:=]?\s*(?:option\s+|choice\s+)?)"
    r"(?:\((?P<any>[A-Ja-j])\)|(?P<upper>[A-J])(?!\w)|(?P<lower>[a-j])(?=[),;:]|\.(?!\w)|[ \t]*(?:\n|$)))")
_CHOICE_BOXED = regex.compile(r"\\boxed\s*\{\s*\(?\s*(?:\\text\{)?\s*([A-Ja-j])\s*\}?\s*\)?\s*\}")
# "Answer: I am sure it is (B)": the pronoun, not option I (a word follows it)
_PRONOUN = regex.compile(r"['’]|\s+[a-z]")
_PARENTHESISED = regex.compile(r"\(([A-Ja-j])\)")
_NO_EMPHASIS = regex.compile(r"[*_`]")
_LINE_START = regex.compile(r"^[ \t>#-]*([A-J])[.):](?=\s|$)", regex.M)
# Another option a final answer names after its letter: "(c)", "c)", an upper-case letter
# standing alone, or a lower-case one other than "a" and "i" (the article, a sloppy "I");
# "A" and "I" before a lower-case word are the article and the pronoun ("B. I think so"),
# and a letter in ".x." an abbreviation ("e.g.").
_OTHER_LETTER = regex.compile(
    r"\(([A-Ja-j])\)|(?<![\w'’.-])(?:([a-j])\)|(?!(?:A|I)\s+[a-z])([A-J])|([b-hj]))(?![\w'’-])(?!\.\w)")


def _letter(text: str, *, reference: bool = False) -> str | None:
    """The chosen option letter, upper case (``_choice``), or None."""
    return _choice(text, reference=reference)[1]


def _choice(text: str, *, reference: bool = False) -> tuple[str | None, str | None]:
    """What was read and the chosen option letter, upper case: explicit markers first (the
    last of them), then the last parenthesised letter, then the last line opening with one,
    then a text that is the letter alone. An "Answer: B" whose line names another option
    ("B or C") chose none (what it says, None)."""
    text = _NO_EMPHASIS.sub("", text)   # "**Answer:** b", "Answer: `B`"
    boxed = [(m.start(), m.group(1), -1, -1) for m in _CHOICE_BOXED.finditer(text)]
    marked = [(m.start(), m.group(group), m.start(group) - (group == "any"), m.end())   # "(b)" from its "("
              for m in _CHOICE_MARKED.finditer(text) for group in ("any", "upper", "lower") if m.group(group)]
    explicit = [found for found in boxed + marked if not _pronoun(text, found)]
    if explicit:
        _, letter, start, end = max(explicit)
        if end >= 0:   # marked: the rest of its line may name another option
            rest = _answer_segment(text[end:].partition("\n")[0])
            named = {next(filter(None, m.groups())).upper() for m in _OTHER_LETTER.finditer(rest)}
            if named - {letter.upper()}:
                return (text[start:end] + rest).strip()[:FOUND_MOST], None
        return letter.upper(), letter.upper()
    for found in (_PARENTHESISED.findall(text), _LINE_START.findall(text)):
        if found:
            return str(found[-1]).upper(), str(found[-1]).upper()
    alone = text.strip().rstrip(".):").lstrip("(").strip()
    if _LONE_LETTER.fullmatch(alone) and (reference or alone.isupper() or len(text.strip()) <= 2):
        return alone.upper(), alone.upper()
    return None, None


def _pronoun(text: str, found: tuple[int, str, int, int]) -> bool:
    """Whether a marked "I" is the pronoun ("Answer: I am sure it is (B)"), not option I."""
    _, letter, start, end = found
    return end >= 0 and letter == "I" and text[start] == "I" and bool(_PRONOUN.match(text, start + 1))


# -- regex ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1024)
def _pattern(pattern: str) -> Any:
    try:
        return regex.compile(pattern, regex.IGNORECASE | regex.V0)
    except regex.error as exc:
        raise InputError(f"the reference {_shown(pattern)} is not a valid regular expression ({exc})") from None


def _shown(reference: Reference) -> str:
    text = repr(reference)
    return text if len(text) <= 80 else text[:77] + "..."

"""Grading an answer against a reference answer: is it right?

A prompt may come with a ``reference`` answer and the name of a ``grader``.
Each side's answer is graded, so that a pair can show a *flip*: the baseline right and
the candidate wrong (``correct_to_wrong``), or the other way round. Four graders, each
returning whether the answer is right and what it read as the answer (``Graded``):

==========  ==============================================================================
``exact``   the answer's explicit final answer ("Answer: X", "the answer is X", "#### X",
            ``\\boxed{X}``; the last), else the whole answer, equals the reference read the
            same way, once both are normalised: Unicode NFKC, trimmed, case-folded,
            whitespace collapsed, markdown emphasis and one final period ignored
``number``  the answer's final number equals the reference's: an explicit final answer if
            there is one ("Answer: X", "the answer is X", "#### X", ``\\boxed{X}``), else the
            last number; ``1,234``, ``-3.5``, ``1/2``, ``\\frac{1}{2}``, ``2.5e3`` are read;
            where either is whole they must be equal, others within a relative 1e-6; an
            explicit final answer whose digits read as no number is wrong
``choice``  the chosen option letter (A–J) equals the reference's: an explicit "Answer: B"
            or ``\\boxed{B}`` if there is one (the last), else the last "(B)", else the last
            line that starts "B." or "B)", else an answer that is the letter alone
``regex``   the reference is a pattern found anywhere in the answer (``search``),
            case-insensitive (write ``(?-i:...)`` for a part where case counts)
==========  ==============================================================================

The reference of ``number`` and ``choice`` is read the way an answer is, so an MT-Bench
reference answer in prose ("... so the answer is 4.") grades by its final number.
Without a grader named, a reference that is a number (``42``, ``"1,234"``, ``"1/2"``)
is graded by ``number``, a single option letter (``"B"``) by ``choice``, anything else
by ``exact`` (``default_grader``).

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

from shadowdiff.errors import InputError
from shadowdiff.records import Answer

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
    letter = text.rstrip(".").removeprefix("(").removesuffix(")")
    if _LONE_LETTER.fullmatch(letter) and letter.isupper():
        return Grader.CHOICE
    return Grader.EXACT


def check_reference(reference: Reference, grader: Grader) -> None:
    """``InputError`` for a reference ``grader`` cannot grade by: a pattern that does not
    compile, a ``number`` reference without a number, a ``choice`` one without a letter."""
    check_type(reference)
    if grader is Grader.REGEX:
        _pattern(str(reference))
    elif grader is Grader.NUMBER and _reference_number(reference) is None:
        raise InputError(f"the reference {_shown(reference)} holds no number for the number grader")
    elif grader is Grader.CHOICE and _letter(str(reference), reference=True) is None:
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
        letter = _letter(text)
        return Graded(letter is not None and letter == _letter(str(reference), reference=True), letter)
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


def _normal(text: str) -> str:
    text = _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()
    return text[:-1].rstrip() if text.endswith(".") else text


def _explicit(text: str) -> tuple[list[str], list[str]]:
    """The explicit final answers a text gives, in order: its boxed ones, then what follows
    each "Answer:" (or "the answer is", "####") on its line. Boxed ones are read first."""
    return [m.group(1) for m in _BOXED.finditer(text)], [m.group("tail") for m in _MARKED.finditer(text)]


def _final_text(text: str) -> str:
    """The explicit final answer (the last boxed one, else the last marked one), else the text."""
    for explicit in _explicit(text):
        tails = [tail.strip().strip("*_`").strip() for tail in explicit]
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
_LATEX_NOISE = regex.compile(r"\\[,;! ]|\$|\\text\{[^{}]*\}")


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
    marked final answer that holds a number (its first number), else the last number."""
    cleaned = _LATEX_NOISE.sub("", text)
    for explicit in _explicit(cleaned):
        for tail in reversed(explicit):
            if numbers := _numbers(tail):
                return numbers[0]
            if _DIGIT.search(tail):
                # a final answer written with digits that read as no number ("1e500", "1/0"):
                # that is the answer, and it is no number; an earlier one must not stand in
                return tail.strip()[:FOUND_MOST], None
    numbers = _numbers(cleaned)
    return numbers[-1] if numbers else (None, None)


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
_CHOICE_MARKED = regex.compile(
    r"(?i:answer(?:\s+is|\s+was|\s+would\s+be)?\s*[:=]?\s*(?:option\s+|choice\s+)?)"
    r"(?:\((?P<any>[A-Ja-j])\)|(?P<upper>[A-J]))(?![\w])")
_CHOICE_BOXED = regex.compile(r"\\boxed\s*\{\s*\(?\s*(?:\\text\{)?\s*([A-Ja-j])\s*\}?\s*\)?\s*\}")
# "Answer: I am sure it is (B)": the pronoun, not option I (a word follows it)
_PRONOUN = regex.compile(r"['’]|\s+[a-z]")
_PARENTHESISED = regex.compile(r"\(([A-Ja-j])\)")
_LINE_START = regex.compile(r"^[ \t>#-]*([A-J])[.):](?=\s|$)", regex.M)


def _letter(text: str, *, reference: bool = False) -> str | None:
    """The chosen option letter, upper case: explicit markers first (the last of them),
    then the last parenthesised letter, then the last line opening with one, then a text
    that is the letter alone."""
    text = text.replace("*", "")   # markdown bold: "**Answer: B**"
    explicit = [(m.start(), m.group(1)) for m in _CHOICE_BOXED.finditer(text)] + \
               [(m.start(), m.group("any") or m.group("upper")) for m in _CHOICE_MARKED.finditer(text)
                if not _PRONOUN.match(text, m.end("upper")) or m.group("upper") != "I"]
    if explicit:
        return str(max(explicit)[1]).upper()
    for found in (_PARENTHESISED.findall(text), _LINE_START.findall(text)):
        if found:
            return str(found[-1]).upper()
    alone = text.strip().rstrip(".):").lstrip("(").strip()
    if _LONE_LETTER.fullmatch(alone) and (reference or alone.isupper() or len(text.strip()) <= 2):
        return alone.upper()
    return None


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

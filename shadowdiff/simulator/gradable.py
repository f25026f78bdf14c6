"""What a gradable question is: a prompt with one exact answer, asked for in a fixed form.

The gradable workload (``replay/workloads/gradable.jsonl``) is written from the templates
of ``questions`` and ``passages``, and the simulator reads the same prompts back with
``questions.solve`` to answer them right or wrong on purpose (``accuracy``). This module
holds what those share: the kinds, the answer forms, the ``Template`` that both renders
a prompt and reads it (its regex is built from the same text, so a template and its
parser cannot drift apart), and the ``Solution`` a recognised prompt gets.

Why under simulator/ and not replay/: the simulator answers these prompts at run time and
may not import a mode, while the workload generator is a tool run by hand to rewrite a
data file (replay reads the file and never imports the generator). These modules need
only the standard library, so the generator loads nothing else of the simulator.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction


class Kind(StrEnum):
    """The kinds of gradable question: the workload's categories."""

    ARITHMETIC = "arithmetic"
    DATES = "dates"
    UNITS = "units"
    COUNTING = "counting"
    CHOICE = "choice"


class Form(StrEnum):
    """What the final answer is, as the prompt asks for it."""

    NUMBER = "number"       # an integer or a terminating decimal
    WEEKDAY = "weekday"     # Monday ... Sunday
    DATE = "date"           # YYYY-MM-DD
    LETTER = "letter"       # A, B, C or D

    @property
    def grader(self) -> str:
        """The workload's ``grader`` for an answer of this form."""
        return {Form.NUMBER: "number", Form.LETTER: "choice"}.get(self, "exact")


ANSWER_PREFIX = "Answer: "
_PLACEHOLDER = {Form.NUMBER: "<number>", Form.WEEKDAY: "<weekday>", Form.DATE: "<YYYY-MM-DD>",
                Form.LETTER: "<letter>"}


def ask(form: Form) -> str:
    """The sentence that ends every templated prompt: how to give the final answer."""
    return f"End your reply with '{ANSWER_PREFIX}{_PLACEHOLDER[form]}'."


@dataclass(frozen=True)
class Template:
    """A prompt with ``str.format`` fields, and the regex (one per field) that reads it."""

    text: str
    fields: dict[str, str]
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = []
        for literal, name, _, _ in string.Formatter().parse(self.text):
            parts.append(re.escape(literal))
            if name is not None:
                parts.append(f"(?P<{name}>{self.fields[name]})")
        object.__setattr__(self, "pattern", re.compile("".join(parts)))

    def render(self, **values: object) -> str:
        return self.text.format(**values)

    def read(self, text: str) -> dict[str, str] | None:
        """The fields of ``text`` if it is this template filled in, else None."""
        match = self.pattern.fullmatch(text)
        return None if match is None else match.groupdict()


@dataclass(frozen=True)
class Solution:
    """A recognised question: its exact answer, and how a model would show its work."""

    kind: Kind
    form: Form
    answer: str
    working: str            # a sentence or two, with {value} where the answer goes
    labels: tuple[tuple[str, str], ...] = ()   # multiple choice: (letter, option text)

    def explain(self, value: str) -> str:
        """The working as written by a model whose answer is ``value`` (right or not);
        ``{label}`` in it becomes the text of option ``value``."""
        label = dict(self.labels).get(value, value)
        return self.working.replace("{label}", label).replace("{value}", value)


def number_text(value: Fraction) -> str | None:
    """``value`` written out exactly in decimal (``2500``, ``0.75``, ``-3``), or None when
    its decimal expansion does not terminate (a third)."""
    denominator, places = value.denominator, 0
    while denominator % 10 == 0:
        denominator, places = denominator // 10, places + 1
    while denominator % 2 == 0 or denominator % 5 == 0:
        step = 2 if denominator % 2 == 0 else 5
        denominator, places = denominator // step, places + 1
    if denominator != 1:
        return None
    scaled = abs(value.numerator) * 10**places // value.denominator
    whole, fraction = divmod(scaled, 10**places)
    digits = f"{fraction:0{places}d}".rstrip("0") if places else ""
    return ("-" if value < 0 else "") + str(whole) + (f".{digits}" if digits else "")

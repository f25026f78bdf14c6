"""Multiple choice over facts stated in the prompt: a short passage about an invented
town, a question about one of its facts, and options A to D.

The passage states every fact of ``FACTS`` once, in any order; the question asks for one
of them; exactly one option is the fact's value. The towns, rivers and people are made
up, so the answer is in the passage and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shadowdiff.simulator.gradable import Form, Kind, Solution, Template, ask

LETTERS = ("A", "B", "C", "D")
_PLACE = "[A-Z][a-z]+"
_VALUE = "[A-Za-z0-9][A-Za-z0-9 ]*"


@dataclass(frozen=True)
class Fact:
    """One thing a passage can say about a town, and the question that asks for it."""

    name: str
    sentence: Template     # fields: place, value
    question: Template     # field: place


def _fact(name: str, sentence: str, question: str) -> Fact:
    return Fact(name, Template(sentence, {"place": _PLACE, "value": _VALUE}), Template(question, {"place": _PLACE}))


FACTS = (
    _fact("bakeries", "{place} has {value} bakeries.", "How many bakeries does {place} have?"),
    _fact("river", "The river through {place} is called the {value}.", "What is the river through {place} called?"),
    _fact("mayor", "The mayor of {place} is {value}.", "Who is the mayor of {place}?"),
    _fact("founded", "{place} was founded in {value}.", "In which year was {place} founded?"),
    _fact("festival", "{place} holds its festival every {value}.", "In which month does {place} hold its festival?"),
    _fact("export", "The main export of {place} is {value}.", "What is the main export of {place}?"),
)

CHOICE = Template(
    "Read the passage, then answer the question.\n\nPassage: {passage}\n\nQuestion: {question}\n{options}\n\n"
    + ask(Form.LETTER),
    {"passage": "[^\n]+", "question": "[^\n]+", "options": r"A\) [^\n]+\nB\) [^\n]+\nC\) [^\n]+\nD\) [^\n]+"},
)
_SENTENCE = re.compile(r"[^.]+\.")


def options_text(options: tuple[str, ...]) -> str:
    """The option lines: ``A) ...`` to ``D) ...``."""
    return "\n".join(f"{letter}) {text}" for letter, text in zip(LETTERS, options, strict=True))


def solve(text: str) -> Solution | None:
    """The letter of the option the passage supports, or None (not this template, or not
    exactly one option matching the fact asked for)."""
    fields = CHOICE.read(text)
    if fields is None:
        return None
    asked = next(((fact, found["place"]) for fact in FACTS
                  if (found := fact.question.read(fields["question"])) is not None), None)
    if asked is None:
        return None
    fact, place = asked
    stated = [(sentence.strip(), found["value"]) for sentence in _SENTENCE.findall(fields["passage"])
              if (found := fact.sentence.read(sentence.strip())) is not None and found["place"] == place]
    labels = tuple((line[0], line[3:]) for line in fields["options"].split("\n"))
    if len(stated) != 1:
        return None
    sentence, value = stated[0]
    right = [letter for letter, option in labels if option == value]
    if len(right) != 1:
        return None
    return Solution(Kind.CHOICE, Form.LETTER, right[0],
                    f'The passage says: "{sentence}" The option that matches is {{value}}, {{label}}.', labels)

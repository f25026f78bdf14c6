"""The baseline answer: synthetic, template-built text shaped by the prompt.

The answer is a pure function of the prompt text (and of whether JSON output was
requested): the same prompt always gives the same answer, whatever the served model
name, so a baseline and a candidate server answer the same prompt from the same
starting point. The text reads like an assistant's answer - sentences, numbers,
lists, code or JSON where the prompt asks for them - but it is assembled from
templates and the prompt's own words. It is not a model's output and never claims to
be one.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from shadowdiff.simulator import lexicon


class Intent(StrEnum):
    """What kind of answer the prompt asks for."""

    CODE = "code"
    MATH = "math"
    LIST = "list"
    CLASSIFY = "classify"
    EXTRACT = "extract"
    TRANSLATE = "translate"
    SUMMARIZE = "summarize"
    PROSE = "prose"


_INTENT_PATTERNS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    (Intent.EXTRACT, re.compile(r"\bjson\b|\bextract\b", re.I)),
    (Intent.CODE, re.compile(
        r"\b(code|function|python|javascript|program|script|sql|implement|algorithm|regex|class)\b",
        re.I)),
    (Intent.CLASSIFY, re.compile(
        r"\b(classify|sentiment|categor(y|ize)|label|yes or no|true or false|which of)\b", re.I)),
    (Intent.TRANSLATE, re.compile(r"\btranslat", re.I)),
    (Intent.SUMMARIZE, re.compile(r"\b(summari[sz]e|summary|tl;?dr|condense)\b", re.I)),
    (Intent.MATH, re.compile(
        r"\b(calculate|compute|solve|how many|how much|sum|product|percent|probability|equation|area)\b|%"
        r"|\d+\s*[-+*/x×]\s*\d+", re.I)),
    (Intent.LIST, re.compile(
        r"\b(list|steps|tips|ways|ideas|outline|reasons|examples|name \d+|top \d+)\b", re.I)),
)

T = TypeVar("T")

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
# Bounded digit runs: a prompt may hold a 5,000-digit number, and int() or float() of
# it would fail; the synthetic arithmetic only needs a plausible figure.
_NUMBER = re.compile(r"-?\d{1,12}(?:\.\d{1,6})?")


def detect_intent(prompt: str, *, json_output: bool = False) -> Intent:
    if json_output:
        return Intent.EXTRACT
    for intent, pattern in _INTENT_PATTERNS:
        if pattern.search(prompt):
            return intent
    return Intent.PROSE


def prompt_key(prompt: str) -> int:
    """A stable 64-bit key for a prompt (Python's ``hash`` is salted per process)."""
    return int.from_bytes(hashlib.blake2b(prompt.encode(), digest_size=8).digest(), "big")


def topic_words(prompt: str, limit: int = 3) -> list[str]:
    """The prompt's first few content words, used to make the answer about something."""
    seen: list[str] = []
    for match in _WORD.finditer(prompt):
        word = match.group().lower().strip("'-")
        if len(word) >= 4 and word not in lexicon.STOPWORDS and word not in seen:
            seen.append(word)
            if len(seen) == limit:
                break
    return seen or ["the question"]


@dataclass(frozen=True, slots=True)
class Answer:
    """A generated answer: its text and what produced it."""

    text: str
    intent: Intent


class Writer:
    """Fills sentence templates from a seeded random generator."""

    def __init__(self, rng: random.Random, topics: list[str]) -> None:
        self.rng = rng
        self.topics = topics

    def pick(self, options: tuple[T, ...] | list[T]) -> T:
        return self.rng.choice(options)

    def topic(self) -> str:
        return self.pick(self.topics)

    def sentence(self) -> str:
        r = self.rng
        verb, verb_s = self.pick(lexicon.VERBS)
        unit, when = self.pick(lexicon.UNITS), self.pick(lexicon.TIME_UNITS)
        adj, noun, noun2 = self.pick(lexicon.ADJECTIVES), self.pick(lexicon.NOUNS), self.pick(lexicon.NOUNS)
        templates = (
            f"The {adj} part of {self.topic()} is how it {verb_s} the {noun}.",
            f"In practice, roughly {r.randint(10, 90)} percent of cases depend on the {noun} and the {noun2}.",
            f"A useful way to think about {self.topic()} is as a {noun} with {r.randint(2, 9)} parts.",
            f"This also shows why the {noun} is usually more important than the {noun2}.",
            f"Most estimates put the figure at about {r.randint(2, 950)} {unit}, although sources vary.",
            f"When the {noun} changes, the {noun2} typically {verb_s} within {r.randint(2, 30)} {when}.",
            f"It is often helpful to {verb} the {noun} before looking at the {noun2}.",
            f"For example, a {noun} of {r.randint(1, 99)}.{r.randint(1, 9)} {unit} {verb_s} a {adj} {noun2}.",
            f"{self.pick(lexicon.CONNECTORS)} the {adj} {noun} helps to {verb} the {noun2}.",
            f"The main risk is a {adj} {noun} that nobody checks.",
        )
        return self.pick(templates)

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.sentence() for _ in range(sentences))

    def list_items(self, count: int) -> str:
        items = []
        for i in range(1, count + 1):
            noun = self.pick(lexicon.NOUNS)
            verb, _ = self.pick(lexicon.VERBS)
            items.append(
                f"{i}. **{noun.capitalize()}**: {verb.capitalize()} the {self.pick(lexicon.ADJECTIVES)} "
                f"{self.pick(lexicon.NOUNS)} first, then check the {noun} again."
            )
        return "\n".join(items)


def _intro(w: Writer) -> str:
    return w.pick((
        f"Here is a short answer about {w.topic()} — with the key points first.",
        f"Short version — {w.topic()} comes down to a few clear factors.",
        f"Let us look at {w.topic()} step by step — starting with the basics.",
    ))


def _code(w: Writer, prompt: str) -> str:
    name = re.sub(r"\W", "_", w.topic())[:24] or "task"
    n = w.rng.randint(3, 64)
    if re.search(r"\bsql\b|\bquery\b|\btable\b", prompt, re.I):
        block = (
            "```sql\n"
            f"SELECT category, COUNT(*) AS total\nFROM {name}\nWHERE value > {n}\n"
            "GROUP BY category\nORDER BY total DESC;\n```"
        )
    elif re.search(r"javascript|\bjs\b|node", prompt, re.I):
        block = (
            "```javascript\n"
            f"function {name}(items) {{\n  let total = 0;\n"
            f"  for (const item of items.slice(0, {n})) {{\n    total += String(item).length;\n  }}\n"
            "  return total;\n}\n```"
        )
    else:
        block = (
            "```python\n"
            f"def {name}(items):\n    \"\"\"Sum the lengths of the first {n} items.\"\"\"\n"
            f"    total = 0\n    for item in items[:{n}]:\n        total += len(str(item))\n"
            "    return total\n```"
        )
    return "\n\n".join((_intro(w), block, w.paragraph(2)))


def _math(w: Writer, prompt: str) -> str:
    numbers = [float(n) for n in _NUMBER.findall(prompt)][:4]
    while len(numbers) < 2:
        numbers.append(float(w.rng.randint(2, 99)))
    a, b = numbers[0], numbers[1]
    if re.search(r"product|multipl|times|\*|×|area", prompt, re.I):
        op, result = "×", a * b
    elif re.search(r"differen|minus|subtract|-", prompt, re.I):
        op, result = "-", a - b
    else:
        op, result = "+", a + b

    def fmt(x: float) -> str:
        if not math.isfinite(x):
            return "too large to write out"
        return str(int(x)) if x == int(x) else f"{x:.2f}"

    steps = (
        f"1. Start with the two quantities: {fmt(a)} and {fmt(b)}.\n"
        f"2. Combine them: {fmt(a)} {op} {fmt(b)} = {fmt(result)}.\n"
        f"3. Check the result: it is consistent with the {w.pick(lexicon.NOUNS)} in the question."
    )
    return "\n\n".join((_intro(w), steps, f"The answer is {fmt(result)}."))


def _classify(w: Writer, prompt: str) -> str:
    lowered = prompt.lower()
    if "yes or no" in lowered:
        labels: tuple[str, ...] = ("Yes", "No")
    elif "true or false" in lowered:
        labels = ("True", "False")
    elif "sentiment" in lowered or "positive" in lowered:
        labels = ("Positive", "Negative", "Neutral")
    else:
        labels = tuple(n.capitalize() for n in lexicon.NOUNS[:6])
    label = w.pick(labels)
    return f"Label: {label}\n\nConfidence: 0.{w.rng.randint(55, 98)}. {w.sentence()}"


def _extract(w: Writer, prompt: str, *, fenced: bool) -> str:
    data = {
        "topic": w.topic(),
        "count": w.rng.randint(2, 40),
        "year": w.rng.randint(1950, 2024),
        "score": round(w.rng.uniform(0.1, 9.9), 1),
        "items": [w.pick(lexicon.NOUNS) for _ in range(3)],
    }
    body = json.dumps(data, indent=2)
    return f"```json\n{body}\n```" if fenced else body


def _translate(w: Writer, prompt: str) -> str:
    source = prompt.split(":", 1)[-1]
    words = _WORD.findall(source)[:24] or w.topics
    translated = " ".join(_pseudo(word) for word in words)
    return f"Translation — «{translated.capitalize()}.» ({len(words)} words)\n\n{w.sentence()}"


def _pseudo(word: str) -> str:
    """A deterministic made-up word, so 'translations' look foreign and are clearly fake."""
    vowels = str.maketrans("aeiou", "eioua")
    out = word.lower().translate(vowels)
    return out + ("é" if len(out) % 3 == 0 else "")


def _summarize(w: Writer, prompt: str) -> str:
    numbers = _NUMBER.findall(prompt)
    figure = numbers[0] if numbers else str(w.rng.randint(2, 90))
    return (
        f"Summary — the text is about {', '.join(w.topics)}. "
        f"It gives a figure of {figure} and argues that the {w.pick(lexicon.NOUNS)} matters. "
        + w.paragraph(2)
    )


def _prose(w: Writer, prompt: str, intent: Intent) -> str:
    parts = [_intro(w), w.paragraph(w.rng.randint(2, 4))]
    if intent is Intent.LIST:
        match = re.search(r"\b(\d{1,3})\b", prompt)
        count = int(match.group(1)) if match and 2 <= int(match.group(1)) <= 10 else w.rng.randint(3, 6)
        parts.append(w.list_items(count))
    elif w.rng.random() < 0.4:
        parts.append(w.list_items(w.rng.randint(3, 5)))
    parts.append(w.paragraph(w.rng.randint(1, 3)))
    text = "\n\n".join(parts)
    if not _NUMBER.search(text):
        # Every answer carries a figure, so a "flipped fact" always has one to change.
        text += f" Most estimates put the figure at about {w.rng.randint(2, 950)} {w.pick(lexicon.UNITS)}."
    return text


_LAST_USER = re.compile(r"<\|im_start\|>user\n(.*?)(?:<\|im_end\|>|$)", re.S)


def subject(prompt: str) -> str:
    """What the answer is about: the last user message of a chat prompt, else the prompt."""
    turns = _LAST_USER.findall(prompt)
    return turns[-1] if turns else prompt


def generate(prompt: str, *, json_output: bool = False) -> Answer:
    """The baseline answer to ``prompt``: a pure function of its arguments.

    The whole prompt (template, system message, earlier turns) seeds the answer; the
    last user message decides what it is about.
    """
    about = subject(prompt)
    intent = detect_intent(about, json_output=json_output)
    w = Writer(random.Random(prompt_key(prompt)), topic_words(about))
    match intent:
        case Intent.CODE:
            text = _code(w, about)
        case Intent.MATH:
            text = _math(w, about)
        case Intent.CLASSIFY:
            text = _classify(w, about)
        case Intent.EXTRACT:
            text = _extract(w, about, fenced=not json_output)
        case Intent.TRANSLATE:
            text = _translate(w, about)
        case Intent.SUMMARIZE:
            text = _summarize(w, about)
        case _:
            text = _prose(w, about, intent)
    return Answer(text=text, intent=intent)


def continuation(key: int) -> Iterator[str]:
    """Endless filler for requests that ignore the end of sequence (``ignore_eos``)."""
    rng = random.Random(key)
    while True:
        yield " " + rng.choice(lexicon.CONTINUATION)

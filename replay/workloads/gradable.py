"""The gradable workload: prompts with one exact answer each, to measure accuracy.

``python -m shadowdiff.replay.workloads.gradable > replay/workloads/gradable.jsonl`` rewrites the
bundled file; the same seed always gives the same bytes (a test checks the committed
file against a fresh run). Five kinds, in turn: arithmetic (several integer operations),
dates (weekday of a date, days between two dates, the date N days later), unit
conversions with exact results, counting (letters in a word, items in a list, even
numbers) and multiple choice over facts a short passage states.

Each line is a ``bodies`` log line with two more fields: ``reference``, the exact
answer, and ``grader``, how an answer is compared with it (``number``, ``exact`` or
``choice``); the prompt asks for the final answer as ``Answer: <value>``. The prompts
come from the simulator's templates (``shadowdiff.simulator.gradable``, which says why), and each
reference is what ``shadowdiff.simulator.questions.solve`` reads back from its prompt: a prompt it
cannot read, or reads as another kind, stops the generator.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from shadowdiff.errors import ShadowdiffError
from shadowdiff.simulator import arithmetic, passages, questions
from shadowdiff.simulator.gradable import Kind, number_text

SEED = 20240607
PER_KIND = 60
MAX_TOKENS = 256

_WORDS = (
    "banana", "strawberry", "mississippi", "bookkeeper", "committee", "parallel", "occurrence",
    "necessary", "assessment", "possession", "referee", "balloon", "coffee", "letter", "success",
    "address", "tomorrow", "pepper", "giraffe", "millennium", "embarrass", "accommodate",
    "programming", "engineering", "independence", "excellence", "cinnamon", "broccoli",
    "raspberry", "pineapple", "umbrella", "volleyball", "sleepless", "keyboard", "hippopotamus",
    "abracadabra", "onomatopoeia", "lollipop", "peppermint", "grasshopper",
)
_THINGS = (
    "apple", "pear", "plum", "fig", "kiwi", "lemon", "mango", "cherry", "grape", "melon", "hammer",
    "chisel", "wrench", "saw", "drill", "ladder", "bucket", "rope", "lantern", "compass", "kettle",
    "teapot", "spoon", "ladle", "whisk", "blanket", "pillow", "candle", "mirror", "clock", "violin",
    "flute", "drum", "harp", "trumpet", "red pen", "blue mug", "paper clip", "tin can", "glass jar",
)
_SYLLABLES = ("vel", "mor", "ka", "dri", "sen", "tal", "bro", "nim", "os", "ar", "lun", "quen", "hal", "pe", "zor")
_FIRST = ("Ida", "Tomas", "Mira", "Jonas", "Elin", "Pavel", "Rosa", "Anders", "Lena", "Oskar", "Nadia", "Hugo")
_LAST = ("Renn", "Falk", "Orsel", "Brandt", "Kesse", "Lomar", "Vint", "Haber", "Dusk", "Morrow", "Tallis", "Pike")
_EXPORTS = ("wool", "olive oil", "glass", "timber", "cheese", "salt", "copper", "paper", "honey", "linen", "wine",
            "pottery")
_CONVERSIONS = (
    ("kilometers", "meters"), ("meters", "centimeters"), ("meters", "millimeters"), ("centimeters", "millimeters"),
    ("meters", "kilometers"), ("millimeters", "centimeters"), ("kilograms", "grams"), ("grams", "kilograms"),
    ("grams", "milligrams"), ("liters", "milliliters"), ("milliliters", "liters"), ("hours", "minutes"),
    ("minutes", "hours"), ("minutes", "seconds"), ("hours", "seconds"), ("days", "hours"), ("weeks", "days"),
    ("days", "weeks"), ("feet", "inches"), ("inches", "feet"), ("yards", "feet"), ("miles", "yards"),
    ("inches", "centimeters"), ("pounds", "ounces"), ("ounces", "pounds"),
)


def _arithmetic(rng: random.Random, index: int) -> str:
    n = rng.randint
    shapes: tuple[Callable[[], str], ...] = (
        lambda: f"{n(10, 99)} + {n(2, 30)} * {n(2, 12)}",
        lambda: f"({n(10, 99)} + {n(10, 99)}) * {n(2, 9)} - {n(1, 60)}",
        lambda: f"{n(10, 40)} * {n(2, 12)} - {n(2, 9)} * {n(2, 9)}",
        lambda: f"({n(40, 99)} - {n(2, 39)}) * ({n(2, 9)} + {n(2, 9)})",
        lambda: f"{n(2, 60)} * ({n(2, 20)} + {n(2, 20)}) - {n(1, 40)}",
        lambda: f"{n(100, 999)} - {n(10, 99)} + {n(10, 99)} * {n(2, 9)}",
        _exact_division(rng),
    )
    while True:     # a positive answer: a negative one would test the sign, not the sums
        expr = shapes[index % len(shapes)]()
        worked = arithmetic.evaluate(expr)
        if worked is not None and worked[0] > 0:
            return questions.ARITHMETIC.render(expr=expr)


def _exact_division(rng: random.Random) -> Callable[[], str]:
    def shape() -> str:
        a, b, d = rng.randint(2, 30), rng.randint(2, 12), rng.randint(2, 9)
        c = rng.randint(1, 40)
        c += -(a * b + c) % d       # the division comes out even
        return f"({a} * {b} + {c}) / {d}"
    return shape


def _day(rng: random.Random) -> datetime.date:
    first, last = datetime.date(1990, 1, 1).toordinal(), datetime.date(2030, 12, 31).toordinal()
    return datetime.date.fromordinal(rng.randint(first, last))


def _dates(rng: random.Random, index: int) -> str:
    start, days = _day(rng), rng.randint(1, 1000)
    text = questions.date_text
    questions_of_the_kind = (
        lambda: questions.WEEKDAY.render(date=text(start)),
        lambda: questions.DAYS_BETWEEN.render(start=text(start), end=text(start + datetime.timedelta(days=days))),
        lambda: questions.DATE_AFTER.render(days=days, start=text(start)),
    )
    return questions_of_the_kind[index % 3]()


def _units(rng: random.Random, index: int) -> str:
    """A conversion whose amount and result both have at most three decimals."""
    while True:
        source, target = rng.choice(_CONVERSIONS)
        times = questions.factor(source, target)
        assert times is not None
        result = Fraction(rng.randint(1, 400), rng.choice((1, 1, 2, 4, 5, 10)))
        amount = number_text(result / times)
        shown = None if amount is None else number_text(result)
        if amount is not None and shown is not None and len(amount.partition(".")[2]) <= 3 \
                and len(shown.partition(".")[2]) <= 3:
            return questions.CONVERT.render(amount=amount, source=source, target=target)


def _counting(rng: random.Random, index: int) -> str:
    word = rng.choice(_WORDS)
    # mostly a repeated letter (the classic trap), sometimes one that occurs once or not at all
    repeated = sorted({c for c in word if word.count(c) > 1})
    letter = rng.choice(repeated) if repeated and rng.random() < 0.7 else rng.choice("abcdefghijklmnopqrstuvwxyz")
    questions_of_the_kind = (
        lambda: questions.LETTERS.render(letter=letter, word=word),
        lambda: questions.ITEMS.render(items=", ".join(rng.sample(_THINGS, rng.randint(3, 15)))),
        lambda: questions.EVENS.render(numbers=", ".join(str(rng.randint(1, 99)) for _ in range(rng.randint(5, 15)))),
    )
    return questions_of_the_kind[index % 3]()


def _choice(rng: random.Random, index: int) -> str:
    """A passage and a question; the right option is A, B, C and D in turn."""
    place = "".join(rng.sample(_SYLLABLES, rng.randint(2, 3))).capitalize()
    pools: dict[str, Sequence[str]] = {
        "bakeries": [str(i) for i in range(2, 20)],
        "river": sorted({"".join(rng.sample(_SYLLABLES, 2)).capitalize() for _ in range(12)}),
        "mayor": [f"{f} {last}" for f in _FIRST for last in _LAST],
        "founded": [str(y) for y in range(1100, 1900)],
        "festival": questions.MONTHS,
        "export": _EXPORTS,
    }
    picked = {name: rng.sample(pool, 4) for name, pool in pools.items()}
    stated = [fact.sentence.render(place=place, value=picked[fact.name][0]) for fact in passages.FACTS]
    rng.shuffle(stated)
    fact = rng.choice(passages.FACTS)
    right, *options = picked[fact.name]
    rng.shuffle(options)
    options.insert(index % len(passages.LETTERS), right)
    return passages.CHOICE.render(passage=" ".join(stated), question=fact.question.render(place=place),
                                  options=passages.options_text(tuple(options)))


_MAKERS: dict[Kind, Callable[[random.Random, int], str]] = {
    Kind.ARITHMETIC: _arithmetic, Kind.DATES: _dates, Kind.UNITS: _units, Kind.COUNTING: _counting,
    Kind.CHOICE: _choice,
}


def items(seed: int = SEED, per_kind: int = PER_KIND) -> list[dict[str, Any]]:
    """The workload's lines as objects: the kinds in turn, ``per_kind`` of each, no
    prompt twice."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out = []
    for index in range(1, per_kind + 1):
        for kind, make in _MAKERS.items():
            prompt = make(rng, index)
            while prompt in seen:
                prompt = make(rng, index)
            seen.add(prompt)
            solution = questions.solve(prompt)
            if solution is None or solution.kind is not kind:
                raise ShadowdiffError(f"the {kind} template no longer reads back: {prompt!r}")
            out.append({"id": f"{kind}-{index:03d}", "category": str(kind),
                        "messages": [{"role": "user", "content": prompt}], "max_tokens": MAX_TOKENS,
                        "reference": solution.answer, "grader": solution.form.grader})
    return out


def render(seed: int = SEED, per_kind: int = PER_KIND) -> str:
    """The workload file's text: one JSON object a line."""
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items(seed, per_kind))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shadowdiff.replay.workloads.gradable",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--per-kind", type=int, default=PER_KIND)
    args = parser.parse_args(argv)
    sys.stdout.write(render(args.seed, args.per_kind))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

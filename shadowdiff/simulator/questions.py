"""The templates of the gradable workload's questions, and ``solve``, which reads them back.

Arithmetic, dates, unit conversions and counting are here; multiple choice over a short
passage is in ``passages``. ``solve`` also reads plain arithmetic questions as users ask
them ("What is 17 + 25?"). See ``gradable`` for why these live in the simulator.
"""

from __future__ import annotations

import datetime
import re
from fractions import Fraction

from shadowdiff.simulator import arithmetic, passages
from shadowdiff.simulator.gradable import Form, Kind, Solution, Template, ask, number_text

# --- arithmetic ---------------------------------------------------------------------

_EXPRESSION = r"[0-9()+\-*/ ]+"
ARITHMETIC = Template("What is {expr}? Work it out step by step. " + ask(Form.NUMBER), {"expr": _EXPRESSION})
# Plain questions as users write them: "What is 17 + 25?", "Calculate (3 + 4) * 5."
_PLAIN = re.compile(r"(?:what is|what's|compute|calculate|evaluate) (?P<expr>[0-9()+\-*/×÷ ]+?) ?[?.]?", re.I)


def _arithmetic(text: str) -> Solution | None:
    fields = ARITHMETIC.read(text)
    if fields is None and (match := _PLAIN.fullmatch(text)) is not None:
        fields = match.groupdict()
    worked = None if fields is None else arithmetic.evaluate(fields["expr"])
    if worked is None:
        return None
    value, steps = worked
    shown = ", then ".join([*steps[:-1], steps[-1].rpartition("= ")[0] + "= {value}"])
    return Solution(Kind.ARITHMETIC, Form.NUMBER, str(value), f"Working it out: {shown}.")


# --- dates --------------------------------------------------------------------------

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DATE = rf"(?:{'|'.join(MONTHS)}) [0-9]{{1,2}}, [0-9]{{4}}"

WEEKDAY = Template("On which day of the week does {date} fall? " + ask(Form.WEEKDAY), {"date": _DATE})
DAYS_BETWEEN = Template("How many days after {start} is {end}? " + ask(Form.NUMBER),
                        {"start": _DATE, "end": _DATE})
DATE_AFTER = Template("What is the date {days} days after {start}? " + ask(Form.DATE),
                      {"days": "[0-9]{1,5}", "start": _DATE})


def date_text(day: datetime.date) -> str:
    """A date as the prompts write it: ``March 5, 2024``."""
    return f"{MONTHS[day.month - 1]} {day.day}, {day.year}"


def _date(text: str) -> datetime.date | None:
    month, day, year = text.replace(",", "").split()
    try:
        return datetime.date(int(year), MONTHS.index(month) + 1, int(day))
    except ValueError:      # February 30
        return None


def _dates(text: str) -> Solution | None:
    if (fields := WEEKDAY.read(text)) is not None:
        day = _date(fields["date"])
        return None if day is None else Solution(
            Kind.DATES, Form.WEEKDAY, WEEKDAYS[day.weekday()],
            f"Counting the days from a date whose weekday I know, {fields['date']} falls on a {{value}}.")
    if (fields := DAYS_BETWEEN.read(text)) is not None:
        start, end = _date(fields["start"]), _date(fields["end"])
        return None if start is None or end is None else Solution(
            Kind.DATES, Form.NUMBER, str((end - start).days),
            f"Counting the days month by month, {fields['end']} is {{value}} days after {fields['start']}.")
    if (fields := DATE_AFTER.read(text)) is not None:
        start = _date(fields["start"])
        try:
            later = None if start is None else start + datetime.timedelta(days=int(fields["days"]))
        except OverflowError:
            later = None
        return None if later is None else Solution(
            Kind.DATES, Form.DATE, later.isoformat(),
            f"Adding {fields['days']} days to {fields['start']} month by month gives {{value}}.")
    return None


# --- unit conversion ----------------------------------------------------------------

# The size of each unit in its dimension's base unit (meter, gram, liter, second); the
# imperial units by their exact definitions (1 inch = 2.54 cm, 1 pound = 453.59237 g).
UNITS: dict[str, tuple[str, Fraction]] = {
    "kilometers": ("length", Fraction(1000)), "meters": ("length", Fraction(1)),
    "centimeters": ("length", Fraction(1, 100)), "millimeters": ("length", Fraction(1, 1000)),
    "miles": ("length", Fraction("1609.344")), "yards": ("length", Fraction("0.9144")),
    "feet": ("length", Fraction("0.3048")), "inches": ("length", Fraction("0.0254")),
    "kilograms": ("mass", Fraction(1000)), "grams": ("mass", Fraction(1)),
    "milligrams": ("mass", Fraction(1, 1000)), "pounds": ("mass", Fraction("453.59237")),
    "ounces": ("mass", Fraction("28.349523125")),
    "liters": ("volume", Fraction(1)), "milliliters": ("volume", Fraction(1, 1000)),
    "weeks": ("time", Fraction(604800)), "days": ("time", Fraction(86400)), "hours": ("time", Fraction(3600)),
    "minutes": ("time", Fraction(60)), "seconds": ("time", Fraction(1)),
}
_SINGULAR = {"feet": "foot", "inches": "inch"}
CONVERT = Template("Convert {amount} {source} to {target}. " + ask(Form.NUMBER),
                   {"amount": r"[0-9]{1,7}(?:\.[0-9]{1,4})?", "source": "[a-z]+", "target": "[a-z]+"})


def factor(source: str, target: str) -> Fraction | None:
    """How many ``target`` units make one ``source`` unit (None: not convertible)."""
    if source not in UNITS or target not in UNITS or source == target:
        return None
    (dimension, size), (other, unit) = UNITS[source], UNITS[target]
    return size / unit if dimension == other else None


def _singular(unit: str) -> str:
    return _SINGULAR.get(unit, unit.removesuffix("s"))


def _units(text: str) -> Solution | None:
    fields = CONVERT.read(text)
    times = None if fields is None else factor(fields["source"], fields["target"])
    if fields is None or times is None:
        return None
    amount, source, target = fields["amount"], fields["source"], fields["target"]
    value = number_text(Fraction(amount) * times)
    if value is None:
        return None
    if (shown := number_text(times)) is not None and times >= 1:
        how = f"One {_singular(source)} is {shown} {target}, so {amount} * {shown}"
    elif (shown := number_text(1 / times)) is not None:
        how = f"One {_singular(target)} is {shown} {source}, so {amount} / {shown}"
    else:
        return None
    return Solution(Kind.UNITS, Form.NUMBER, value, how + f" = {{value}} {target}.")


# --- counting -----------------------------------------------------------------------

LETTERS = Template("How many times does the letter '{letter}' appear in the word '{word}'? " + ask(Form.NUMBER),
                   {"letter": "[a-z]", "word": "[a-z]+"})
ITEMS = Template("How many items are in this list: {items}? " + ask(Form.NUMBER), {"items": "[a-z ]+(?:, [a-z ]+)*"})
EVENS = Template("How many of these numbers are even: {numbers}? " + ask(Form.NUMBER),
                 {"numbers": "[0-9]{1,6}(?:, [0-9]{1,6})*"})


def _counting(text: str) -> Solution | None:
    if (fields := LETTERS.read(text)) is not None:
        letter, word = fields["letter"], fields["word"]
        return Solution(Kind.COUNTING, Form.NUMBER, str(word.count(letter)),
                        f"Spelling out '{word}' letter by letter, the letter '{letter}' appears {{value}} times.")
    if (fields := ITEMS.read(text)) is not None:
        items = fields["items"].split(", ")
        return Solution(Kind.COUNTING, Form.NUMBER, str(len(items)),
                        f"Counting them one by one, from {items[0]} to {items[-1]}, the list has {{value}} items.")
    if (fields := EVENS.read(text)) is not None:
        evens = [n for n in fields["numbers"].split(", ") if int(n) % 2 == 0]
        which = f"The even ones are {', '.join(evens)}" if evens else "None of them is even"
        return Solution(Kind.COUNTING, Form.NUMBER, str(len(evens)), which + ", so the count is {value}.")
    return None


def solve(prompt: str) -> Solution | None:
    """The exact answer to ``prompt`` if it is a gradable question (one of the templates
    here, or a plain arithmetic question), else None. Questions whose answer would be
    ambiguous (a division with a remainder, a date that does not exist) are not gradable."""
    text = prompt.strip()
    for reader in (_arithmetic, _dates, _units, _counting, passages.solve):
        solution = reader(text)
        if solution is not None:
            return solution
    return None

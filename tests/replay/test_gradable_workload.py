"""The gradable workload: the committed file is what its generator writes, and every
reference is right by a computation of the test's own (not the simulator's solver the
generator took it from)."""

from __future__ import annotations

import ast
import datetime
import json
import re
import subprocess
import sys
from collections import Counter
from decimal import Decimal, localcontext
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.replay import logs
from shadowdiff.replay.workloads import gradable
from shadowdiff.simulator import questions
from shadowdiff.simulator.gradable import number_text

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = Path(str(resources.files("replay") / "workloads" / "gradable.jsonl"))
KINDS = ("arithmetic", "dates", "units", "counting", "choice")


def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in WORKLOAD.read_text().splitlines()]


def test_the_committed_file_is_what_the_generator_writes() -> None:
    assert WORKLOAD.read_bytes() == gradable.render().encode()
    # the command that rewrites it, as a person runs it
    run = subprocess.run([sys.executable, "-m", "shadowdiff.replay.workloads.gradable"], cwd=ROOT, capture_output=True,
                         check=True, timeout=60)
    assert run.stdout == WORKLOAD.read_bytes()
    assert gradable.render(seed=7, per_kind=3) == gradable.render(seed=7, per_kind=3) != gradable.render(per_kind=3)


def test_the_lines_are_bodies_lines_with_a_reference_and_a_grader() -> None:
    found = rows()
    assert len(found) == 300
    assert all(list(row) == ["id", "category", "messages", "max_tokens", "reference", "grader"] for row in found)
    assert len({row["id"] for row in found}) == len(found)
    assert len({row["messages"][0]["content"] for row in found}) == len(found)
    assert Counter(row["category"] for row in found) == dict.fromkeys(KINDS, 60)
    assert {(row["category"], row["grader"]) for row in found} == {
        ("arithmetic", "number"), ("dates", "exact"), ("dates", "number"), ("units", "number"),
        ("counting", "number"), ("choice", "choice")}
    for row in found:
        assert row["id"].startswith(row["category"] + "-")
        [message] = row["messages"]
        assert message["role"] == "user" and "'Answer: <" in message["content"]
    # the right option is spread over the letters, so answering "A" everywhere scores a quarter
    assert Counter(row["reference"] for row in found if row["grader"] == "choice") == dict.fromkeys("ABCD", 15)
    assert logs.detect(WORKLOAD) is logs.LogFormat.BODIES
    assert logs.count(WORKLOAD) == 300


def _arithmetic(prompt: str) -> str:
    expr = re.fullmatch(r"What is (.+)\? Work it out step by step\. .*", prompt)
    assert expr is not None

    def value(node: ast.expr) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return Fraction(node.value)
        assert isinstance(node, ast.BinOp), ast.dump(node)
        a, b = value(node.left), value(node.right)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        return ops[type(node.op)] if type(node.op) in ops else a / b

    result = value(ast.parse(expr.group(1), mode="eval").body)
    assert result.denominator == 1 and result > 0
    return str(result)


def _day(text: str) -> datetime.date:
    return datetime.datetime.strptime(text, "%B %d, %Y").date()


def _dates(prompt: str) -> str:
    date = r"([A-Z][a-z]+ \d+, \d{4})"
    if m := re.match(rf"On which day of the week does {date} fall\?", prompt):
        return ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")[
            _day(m.group(1)).weekday()]
    if m := re.match(rf"How many days after {date} is {date}\?", prompt):
        return str((_day(m.group(2)) - _day(m.group(1))).days)
    m = re.match(rf"What is the date (\d+) days after {date}\?", prompt)
    assert m is not None, prompt
    return (_day(m.group(2)) + datetime.timedelta(days=int(m.group(1)))).isoformat()


# Each unit in meters, grams, liters or seconds, written out here again on purpose.
SIZES = {"kilometers": "1000", "meters": "1", "centimeters": "0.01", "millimeters": "0.001", "miles": "1609.344",
         "yards": "0.9144", "feet": "0.3048", "inches": "0.0254", "kilograms": "1000", "grams": "1",
         "milligrams": "0.001", "pounds": "453.59237", "ounces": "28.349523125", "liters": "1",
         "milliliters": "0.001", "weeks": "604800", "days": "86400", "hours": "3600", "minutes": "60",
         "seconds": "1"}


def _units(prompt: str) -> str:
    m = re.match(r"Convert ([\d.]+) ([a-z]+) to ([a-z]+)\.", prompt)
    assert m is not None, prompt
    with localcontext() as context:
        context.prec = 60
        result = Decimal(m.group(1)) * Decimal(SIZES[m.group(2)]) / Decimal(SIZES[m.group(3)])
    assert result == result.quantize(Decimal("0.001")), prompt    # exact, at most three decimals
    return str(result)


def _counting(prompt: str) -> str:
    if m := re.match(r"How many times does the letter '(.)' appear in the word '(\w+)'\?", prompt):
        return str(m.group(2).count(m.group(1)))
    if m := re.match(r"How many items are in this list: ([^?]+)\?", prompt):
        return str(len(m.group(1).split(",")))
    m = re.match(r"How many of these numbers are even: ([^?]+)\?", prompt)
    assert m is not None, prompt
    return str(sum(int(n) % 2 == 0 for n in m.group(1).split(",")))


TOPICS = {"bakeries": "bakeries", "river": "river", "mayor": "mayor", "year": "founded", "month": "festival",
          "export": "export"}


def _choice(prompt: str) -> str:
    passage = re.search(r"Passage: (.+)\n\nQuestion: (.+)\n", prompt)
    assert passage is not None
    options: dict[str, str] = dict(re.findall(r"^([A-D])\) (.+)$", prompt, re.M))
    assert list(options) == ["A", "B", "C", "D"] and len(set(options.values())) == 4
    [topic] = [word for cue, word in TOPICS.items() if cue in passage.group(2)]
    [sentence] = [s for s in passage.group(1).split(". ") if topic in s]
    def said(text: str, where: str) -> bool:
        return re.search(rf"\b{re.escape(text)}\b", where) is not None

    [letter] = [letter for letter, text in options.items() if said(text, sentence)]
    # no other option is anywhere in the passage, so nothing but the fact asked for can match
    assert [text for text in options.values() if said(text, passage.group(1))] == [options[letter]]
    return letter


CHECKS = {"arithmetic": _arithmetic, "dates": _dates, "units": _units, "counting": _counting, "choice": _choice}


@pytest.mark.parametrize("kind", KINDS)
def test_every_reference_is_right(kind: str) -> None:
    for row in rows():
        if row["category"] == kind:
            prompt = row["messages"][0]["content"]
            expected = CHECKS[kind](prompt)
            if row["grader"] == "number":
                assert Fraction(row["reference"]) == Fraction(expected), prompt
                assert row["reference"] == number_text(Fraction(expected)), prompt   # written canonically
            else:
                assert row["reference"] == expected, prompt
            solution = questions.solve(prompt)
            assert solution is not None and (solution.kind, solution.answer) == (kind, row["reference"])

"""Integer arithmetic read from a question, worked out one operation at a time.

A recursive-descent reader of ``+ - * /`` (also ``×`` and ``÷``) and parentheses over
non-negative integer literals, with the usual precedence, left to right. Each operation
becomes a step (``17 + 25 = 42``) in the order a person would work it out. Anything it
cannot read with one exact integer answer is refused (None): a division with a
remainder, a unary minus, a number or an expression too long to be a question.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\s*(?:([0-9]{1,9})|([-+*/×÷()]))")
_MAX_STEPS = 12
_MAX_TOKENS = 64     # also bounds the nesting, so the recursion stays shallow
_LIMIT = 10**15      # no answer longer than a question's numbers warrant


class _Unreadable(Exception):
    """Not an expression with an exact integer answer."""


class _Reader:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0
        self.steps: list[str] = []

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise _Unreadable
        self.at += 1
        return token

    def expression(self) -> int:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            value = self.apply(value, op, self.term())
        return value

    def term(self) -> int:
        value = self.factor()
        while self.peek() in ("*", "/", "×", "÷"):
            op = self.take()
            value = self.apply(value, op, self.factor())
        return value

    def factor(self) -> int:
        token = self.take()
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise _Unreadable
            return value
        if token.isdigit():
            return int(token)
        raise _Unreadable

    def apply(self, a: int, op: str, b: int) -> int:
        if op in "/÷":
            if b == 0 or a % b:
                raise _Unreadable
            result = a // b
        else:
            result = a + b if op == "+" else a - b if op == "-" else a * b
        if abs(result) >= _LIMIT or len(self.steps) == _MAX_STEPS:
            raise _Unreadable
        self.steps.append(f"{a} {op} {b} = {result}")
        return result


def evaluate(expression: str) -> tuple[int, list[str]] | None:
    """The value of ``expression`` and its steps, or None (see the module docstring)."""
    tokens, at = [], 0
    text = expression.rstrip()
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            return None
        tokens.append(match.group(1) or match.group(2))
        at = match.end()
        if len(tokens) > _MAX_TOKENS:
            return None
    reader = _Reader(tokens)
    try:
        value = reader.expression()
    except _Unreadable:
        return None
    if reader.peek() is not None or not reader.steps:
        return None
    return value, reader.steps

"""Redacting patterns (e-mail addresses, keys...) from requests before they are kept."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from shadowdiff.errors import ConfigError

MARK = "[REDACTED]"


def check_patterns(patterns: Iterable[str]) -> None:
    """``ConfigError`` for the first pattern that is not a regular expression."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"--redact {pattern!r} is not a valid regular expression: {exc}") from exc


class Redactor:
    """Replaces every match of the patterns, in every string of a JSON value."""

    def __init__(self, patterns: Iterable[str]) -> None:
        patterns = list(patterns)
        self._pattern = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None

    def text(self, value: str) -> str:
        return value if self._pattern is None else self._pattern.sub(MARK, value)

    def value(self, value: Any) -> Any:
        """A copy of ``value`` with every string in it redacted, keys too (two keys that
        become one keep one value). Without recursion: a request is read up to 1,024
        levels deep (orjson), deeper than Python recurses."""
        if self._pattern is None:
            return value
        top: list[Any] = [None]
        stack: list[tuple[Any, Any, Any]] = [(value, top, 0)]   # (a value, its copy's container, place)
        while stack:
            item, into, place = stack.pop()
            if isinstance(item, str):
                into[place] = self.text(item)
            elif isinstance(item, list):
                into[place] = copy = [None] * len(item)
                stack.extend((v, copy, i) for i, v in enumerate(item))
            elif isinstance(item, dict):
                into[place] = mapping = dict[Any, Any]()
                for k, v in item.items():
                    key = self.text(k) if isinstance(k, str) else k
                    mapping[key] = None   # the keys in their order; the values come after
                    stack.append((v, mapping, key))
            else:
                into[place] = item
        return top[0]

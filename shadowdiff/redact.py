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
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value

"""Blind review: which side a reviewer sees as A, and side names rewritten to letters.

A reviewer who knows which answer is the candidate's reads it differently; so the
sides are shown as A and B in an order that is random per pair, stable (the same on
every visit, in ``serve`` and in ``review``), and not derivable from anything a
reviewer holds: it comes from a key the store made for itself (``secrets``), not
from the shared review token.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from shadowdiff.records import Side

_SIDE_WORDS = re.compile(r"\b(?:the\s+)?(baseline|candidate)('s)?\b", re.IGNORECASE)


def blind(text: str, a_is_baseline: bool) -> str:
    """Replace the side names in a signal's reason with the letters the reviewer sees."""
    def letter(m: re.Match[str]) -> str:
        is_baseline = m.group(1).lower() == "baseline"
        return ("A" if is_baseline == a_is_baseline else "B") + (m.group(2) or "")

    return _SIDE_WORDS.sub(letter, text)


class Blinding:
    def __init__(self, key: str) -> None:
        self._key = key.encode()

    def a_is_baseline(self, pair_id: int) -> bool:
        return hmac.new(self._key, f"side:{pair_id}".encode(), hashlib.sha256).digest()[0] % 2 == 0

    def letter(self, side: Side | str, pair_id: int) -> str:
        """The letter ``side`` (baseline or candidate) has on this pair's page."""
        return "A" if (Side(side) is Side.BASELINE) == self.a_is_baseline(pair_id) else "B"

    def side(self, letter: str, pair_id: int) -> Side:
        """The side behind ``letter`` on this pair's page."""
        return Side.BASELINE if (letter == "A") == self.a_is_baseline(pair_id) else Side.CANDIDATE

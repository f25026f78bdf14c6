"""Text in lower case, character for character, for searches that would otherwise ignore case.

Python's ``re`` tries a pattern that ignores case several times slower than one that need
not; a pattern written in lower case finds in ``fold(text)`` what, ignoring case, it finds
in ``text``, at the same places. Redaction's look-ups and triage's searches both use it.
"""

from __future__ import annotations

# The characters outside ASCII that ``re`` takes for an ASCII letter when it ignores case
# (dotted and dotless i, the Kelvin sign, the long s), as that letter: "İ" lower-cased
# would be two characters, and no lower-case pattern would find the "i" in "ı".
CASE_TWINS = {0x130: "i", 0x131: "i", 0x212A: "k", 0x17F: "s"}


def fold(text: str) -> str:
    """``text`` in lower case, character for character, the ``CASE_TWINS`` as their ASCII
    letters (checked for every code point by tests/answers/test_folding.py)."""
    if not text.isascii() and any(chr(c) in text for c in CASE_TWINS):
        text = text.translate(CASE_TWINS)
    return text.lower()

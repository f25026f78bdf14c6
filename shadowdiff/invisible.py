"""Characters of an answer a browser would not draw as themselves, shown as markers.

Format characters (Unicode category Cf: zero-width spaces and joiners, the bidi marks,
embeddings, overrides and isolates, the BOM, the soft hyphen, the word joiner, …),
control characters (Cc) other than the newline and the tab, line and paragraph
separators (Zl, Zp) and lone surrogates (Cs) are drawn as nothing, or change how the
text around them is drawn: ``total \\u202e24\\u202c units`` reads "total 42 units". Two
answers that differ only by one would look the same though marked changed, so in an
answer's cells each is replaced by a small box naming its code point (``U+202E``),
never written itself: nothing is left to reorder the text.

The answer templates use ``visible`` as a filter and ``invisible`` as a test
(``add_filters``), in the report and in the review UI alike.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

from jinja2 import Environment
from markupsafe import Markup, escape

INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Cs"})
_SHOWN = "\n\t"   # controls with markers of their own (⏎ →) where they changed


def is_invisible(ch: str) -> bool:
    """Whether one character is shown as a marker."""
    return ch not in _SHOWN and unicodedata.category(ch) in INVISIBLE_CATEGORIES


@functools.cache
def _pattern() -> re.Pattern[str]:
    # built once, on first use (a fifth of a second): the categories of this Python's
    # Unicode, where a hand-written list would fall behind it
    chars = "".join(re.escape(chr(c)) for c in range(sys.maxunicode + 1) if is_invisible(chr(c)))
    return re.compile(f"[{chars}]")


@functools.cache
def marker(ch: str) -> Markup:
    """The box shown for an invisible character: its code point, its name as the tooltip."""
    name = unicodedata.name(ch, "").lower() or ("a control character" if unicodedata.category(ch) == "Cc"
                                                else "a lone surrogate")
    return Markup('<span class="cf" title="{}">U+{:04X}</span>').format(name, ord(ch))


def visible(text: str) -> Markup:
    """``text`` escaped, each invisible character in it replaced by its marker."""
    # escaping adds only ASCII, none of it invisible: the markers go in afterwards
    return Markup(_pattern().sub(lambda m: marker(m.group()), escape(text)))


def add_filters(env: Environment) -> None:
    """Give ``env`` what _answer.html needs: the ``visible`` filter and the ``invisible`` test."""
    env.filters["visible"] = visible
    env.tests["invisible"] = is_invisible

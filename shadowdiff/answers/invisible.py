"""Characters of an answer a browser would not draw as themselves, shown as markers.

Format characters (Unicode category Cf: zero-width spaces and joiners, the bidi marks,
embeddings, overrides and isolates, the BOM, the soft hyphen, the word joiner, …),
control characters (Cc) other than the newline and the tab, line and paragraph
separators (Zl, Zp) and lone surrogates (Cs) are drawn as nothing, or change how the
text around them is drawn: ``total \\u202e24\\u202c units`` reads "total 42 units". Two
answers that differ only by one would look the same though marked changed, so in an
answer's cells each is replaced by a small box naming its code point (``U+202E``),
never written itself: nothing is left to reorder the text.

The templates use ``visible`` as a filter for every text from a log, a server or a
person shown in a page's text (answers, prompts, keys, categories, reasons, errors,
notes) and ``invisible`` as a test (``add_filters``), in the report and in the review
UI alike; in an attribute or a page's title, where no box can go, ``finalize`` writes
the escape.

Everywhere else text from a model, a server or a log reaches a person - a terminal,
report.md, an HTML attribute, a CSV cell, a log line - it goes through ``safe_text``:
each such character written as its escape (``\\u202e``, ``\\x1b``, ``\\r``), which
nothing draws or obeys. A terminal obeys ESC and CR: a server's ``\\x1b[2K\\rverdict:
PASS`` in an error line would otherwise overwrite the line it is on. ``finalize`` is the
templates' choke point (every ``{{ }}`` of a string not already markup), ``json_text``
the JSON writers' (``ensure_ascii=False`` writes U+202E and the C1 controls raw), and
``VisibleLogs`` the log handlers'.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
import unicodedata
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

if TYPE_CHECKING:   # (a type only: the command line's error lines need this module, not Jinja)
    from jinja2 import Environment

INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Cs"})
_SHOWN = "\n\t"   # controls with markers of their own (⏎ →) where they changed


def is_invisible(ch: str) -> bool:
    """Whether one character is shown as a marker."""
    return ch not in _SHOWN and unicodedata.category(ch) in INVISIBLE_CATEGORIES


# The invisible characters of Unicode 14.0 (Python 3.11's), as ranges: what ``scan`` finds
# there (a test holds the two together), so that the first text with one costs no scan (a tenth
# of a second of CPU, at every replay's and report's start).
UNICODE_14 = ((0x0000, 0x0008), (0x000B, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605),
              (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
              (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
              (0xD800, 0xDFFF), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
              (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))


def scan() -> list[tuple[int, int]]:
    """The invisible characters of this Python's Unicode, as (first, last) ranges: found by
    asking every code point its category, where a hand-written list would fall behind."""
    ranges: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if is_invisible(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return [(a, b) for a, b in ranges]


@functools.cache
def _ranges() -> str:
    # Written as ranges (about 25 of them for some 2,300 characters): a class of single
    # characters made every substitution ten times slower, a third of the time a
    # 10,000-pair report took. Another Python's Unicode is scanned, once, on first use.
    ranges = UNICODE_14 if unicodedata.unidata_version == "14.0.0" else scan()
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges)


@functools.cache
def _pattern(also: str = "") -> re.Pattern[str]:
    # (every variant from the one scan above: a scan each cost 0.2 s of CPU more per variant)
    return re.compile(f"[{_ranges()}{re.escape(also)}]")


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


def _escaped(match: re.Match[str]) -> str:
    # Python's own escapes (\r, \x1b, \u202e, \U000e0001): ASCII, and familiar from repr()
    return match.group().encode("unicode_escape").decode("ascii")


def safe_text(text: str, *, lines: bool = False) -> str:
    """``text`` with every invisible character written as its escape (``\\u202e``), for
    a terminal, Markdown, a CSV cell or an HTML attribute; ``lines``: line breaks kept
    (a block of text), else written as ``\\n`` too, so that one line stays one line and
    text from elsewhere cannot start a line of its own ("verdict: PASS")."""
    if text.isprintable():     # (the common case, no regex: nothing invisible, no line break)
        return text
    return _pattern("" if lines else "\n").sub(_escaped, text)


def finalize(value: Any) -> Any:
    """The templates' ``finalize``: every string written by ``{{ }}`` that is not markup
    already (``visible``'s boxes, a macro's output) has its invisible characters written
    as escapes; its line breaks stay (prompts and answers in ``pre`` blocks)."""
    if hasattr(value, "__html__") or isinstance(value, (int, float)) or value is None:
        return value
    return safe_text(str(value), lines=True)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:   # JSON escapes only 16 bits: a character beyond as its surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` with every invisible character escaped as
    ``\\uXXXX``: the same JSON, readable in any script, and nothing raw for a terminal
    that shows the file (``ensure_ascii=False`` escapes the C0 controls but writes DEL,
    the C1 controls and the bidi ones as they are)."""
    text = json.dumps(value, ensure_ascii=False, **options)
    if text.isprintable():   # (the common case, as in safe_text: nothing to escape, no regex)
        return text
    # outside its strings JSON is ASCII punctuation, digits, letters and white space
    # (not matched): every match is inside a string, where \uXXXX means the character
    return _pattern().sub(_json_escape, text)


class VisibleLogs(logging.Filter):
    """A log handler's filter that writes each record's invisible characters as escapes:
    its message on one line, its traceback with its line breaks (a failure's text quotes
    what a server sent)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.name == "uvicorn.access":
            # (its formatter unpacks the arguments: method, path, status...)
            record.args = tuple(safe_text(a) if isinstance(a, str) else a for a in record.args)
        else:
            record.msg, record.args = safe_text(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = safe_text(record.exc_text, lines=True)
        if record.stack_info:
            record.stack_info = safe_text(record.stack_info, lines=True)
        return True


def add_filters(env: Environment) -> None:
    """Give ``env`` what _answer.html needs, the ``visible`` filter and the ``invisible``
    test, and ``finalize``: nothing else written into a page is raw either."""
    env.filters["visible"] = visible
    env.tests["invisible"] = is_invisible
    env.finalize = finalize

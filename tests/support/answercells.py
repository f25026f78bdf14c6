"""Reading the side-by-side answers (shadowdiff/report/templates/_answer.html) out of a page's HTML."""

from __future__ import annotations

import re


def cells(html: str, part: str, side: str) -> list[str]:
    """The contents of one column's cells ("l": the baseline or A, "r": the candidate or
    B) in every table of one part ("text", "reasoning", "calls", "refusal"), in order;
    a gap is ``None``."""
    tables = re.findall(rf'<table class="diff {part}">(.*?)</table>', html, re.S)
    found = re.findall(rf'<td class="{side}( changed| gap)?(?: nfc" title="[^"]*)?">(.*?)</td>', "".join(tables), re.S)
    return [None if kind == " gap" else text for kind, text in found]


def text_of(html: str, side: str) -> str:
    """One column's text part, its cells joined."""
    return "".join(cell or "" for cell in cells(html, "text", side))

"""Word-level differences between two answers, for the HTML report and the review UI."""

from __future__ import annotations

import re

from rapidfuzz.distance import Indel

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def word_diff(a: str, b: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Word-level segments of both texts: ("same"|"del", text) for a, ("same"|"ins", text) for b."""
    wa, wb = _WORDS.findall(a), _WORDS.findall(b)
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for op in Indel.opcodes(wa, wb):
        if op.tag == "equal":
            left.append(("same", "".join(wa[op.src_start:op.src_end])))
            right.append(("same", "".join(wb[op.dest_start:op.dest_end])))
        if op.tag in ("delete", "replace"):
            left.append(("del", "".join(wa[op.src_start:op.src_end])))
        if op.tag in ("insert", "replace"):
            right.append(("ins", "".join(wb[op.dest_start:op.dest_end])))
    return left, right

"""Word-level differences between two answers, for the HTML report and the review UI.

``answer_diff`` lays two whole answers side by side, part by part: for each choice (by
index) its reasoning, its text, its tool calls (by position: name and arguments) and its
refusal, each part marked word by word against the same part on the other side. A part
the other side lacks is marked whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz.distance import Indel

from shadowdiff.compare import common_ends, tool_call_parts
from shadowdiff.records import Answer, Choice

Segments = list[tuple[str, str]]   # ("same"|"del"|"ins", text)

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
MAX_DIFF_CELLS = 25_000_000


def word_diff(a: str, b: str) -> tuple[Segments, Segments]:
    """Word-level segments of both texts: ("same"|"del", text) for a, ("same"|"ins", text) for b.

    The common head and tail are set aside first; a differing middle of more than
    ``MAX_DIFF_CELLS`` words times words is marked whole, as the diff's time and memory
    grow with that product (60,000 words of reasoning each side would take seconds and
    gigabytes, in the review UI's process).

    Where several alignments are as short, the diff breaks the tie by the order of its
    arguments; so it is always run with the lesser text first and mirrored back: the
    marks are the same whichever side a text is on (a blind reviewer could otherwise
    tell the baseline by them, and the report would mark a pair differently swapped)."""
    if b < a:
        right, left = _word_diff(b, a)
        return _mirror(left), _mirror(right)
    return _word_diff(a, b)


def _mirror(segments: Segments) -> Segments:
    """The segments with deletions as insertions and insertions as deletions."""
    swap = {"del": "ins", "ins": "del", "same": "same"}
    return [(swap[kind], text) for kind, text in segments]


def _word_diff(a: str, b: str) -> tuple[Segments, Segments]:
    wa, wb = _WORDS.findall(a), _WORDS.findall(b)
    head, tail = common_ends(wa, wb)
    left: Segments = [("same", "".join(wa[:head]))] if head else []
    right: Segments = list(left)
    middle_a, middle_b = wa[head:len(wa) - tail], wb[head:len(wb) - tail]
    if len(middle_a) * len(middle_b) > MAX_DIFF_CELLS:
        left += [("del", "".join(middle_a))] if middle_a else []
        right += [("ins", "".join(middle_b))] if middle_b else []
    else:
        _mark(middle_a, middle_b, left, right)
    if tail:
        left.append(("same", "".join(wa[len(wa) - tail:])))
        right.append(("same", "".join(wb[len(wb) - tail:])))
    return left, right


def _mark(wa: list[str], wb: list[str], left: Segments, right: Segments) -> None:
    for op in Indel.opcodes(wa, wb):
        if op.tag == "equal":
            left.append(("same", "".join(wa[op.src_start:op.src_end])))
            right.append(("same", "".join(wb[op.dest_start:op.dest_end])))
        if op.tag in ("delete", "replace"):
            left.append(("del", "".join(wa[op.src_start:op.src_end])))
        if op.tag in ("insert", "replace"):
            right.append(("ins", "".join(wb[op.dest_start:op.dest_end])))


def changed(segments: Segments | None) -> bool:
    return any(kind != "same" for kind, _ in segments or ())


@dataclass(frozen=True)
class CallView:
    """One tool call, its name and arguments marked against the other side's call."""

    name: Segments
    arguments: Segments

    @property
    def changed(self) -> bool:
        return changed(self.name) or changed(self.arguments)


@dataclass(frozen=True)
class ChoiceView:
    """One choice of one side, each part marked against the other side's same part;
    a part the answer does not have is ``None`` (no reasoning, a ``null`` content)."""

    index: int
    finish_reason: str | None
    reasoning: Segments | None
    text: Segments | None
    tool_calls: list[CallView] = field(default_factory=list)
    refusal: Segments | None = None
    missing: bool = False     # the other side has this choice, this side does not

    @property
    def reasoning_changed(self) -> bool:
        return changed(self.reasoning)

    @property
    def reasoning_chars(self) -> int:
        return sum(len(piece) for _, piece in self.reasoning or ())


def sides_diff(base: Answer | None, cand: Answer | None) -> tuple[list[ChoiceView], list[ChoiceView]]:
    """Two answers side by side, the first's changes as deletions (a failed side: none)."""
    return answer_diff(base.choices if base and base.ok else None, cand.choices if cand and cand.ok else None)


def answer_diff(a: Sequence[Choice] | None, b: Sequence[Choice] | None) -> tuple[list[ChoiceView], list[ChoiceView]]:
    """Both answers' choices, by index, part by part, marked against each other (``a``
    deletes, ``b`` inserts). ``None`` is a side with no answer (it failed): the other's
    choices are then shown unmarked, as there is nothing to mark them against."""
    if a is None or b is None:
        return [_view(c, c, 0) for c in a or ()], [_view(c, c, 1) for c in b or ()]
    by_a, by_b = {c.index: c for c in a}, {c.index: c for c in b}
    left: list[ChoiceView] = []
    right: list[ChoiceView] = []
    for index in sorted(by_a.keys() | by_b.keys()):
        x, y = by_a.get(index), by_b.get(index)
        left.append(_view(x, y, 0) if x is not None else ChoiceView(index, None, None, None, missing=True))
        right.append(_view(y, x, 1) if y is not None else ChoiceView(index, None, None, None, missing=True))
    return left, right


def _view(own: Choice, other: Choice | None, side: int) -> ChoiceView:
    """``own``'s parts marked against ``other``'s (``side`` 0: deletions, 1: insertions).
    The text is left out when it is empty beside reasoning, tool calls or a refusal
    (vLLM's ``null`` content); an answer with nothing at all shows its empty text."""

    def mark(mine: str | None, theirs: str | None) -> Segments | None:
        if mine is None:
            return None
        return word_diff(mine, theirs or "")[0] if side == 0 else word_diff(theirs or "", mine)[1]

    theirs = _calls(other.tool_calls) if other is not None else []
    calls = [CallView(mark(name, theirs[at][0] if at < len(theirs) else None) or [],
                      mark(arguments, theirs[at][1] if at < len(theirs) else None) or [])
             for at, (name, arguments) in enumerate(_calls(own.tool_calls))]
    bare = not (own.tool_calls or own.reasoning or own.refusal is not None)
    return ChoiceView(own.index, own.finish_reason,   # an empty reasoning is none (servers differ on null and "")
                      mark(own.reasoning or None, other.reasoning if other else None),
                      mark(own.text if own.text or bare else None, other.text if other else None),
                      calls, mark(own.refusal, other.refusal if other else None))


def _calls(tool_calls: Sequence[object] | None) -> list[tuple[str, str]]:
    """(name, arguments) of each call as text, whatever the server sent."""
    return [("" if name is None else str(name), "" if arguments is None else str(arguments))
            for name, arguments in tool_call_parts(tool_calls)]

"""Two whole answers side by side, line by line, for the HTML report and the review UI.

``pair_view`` lays two answers out part by part: for each choice (by index) its reasoning,
its text, its tool calls (by position: name and arguments) and its refusal. Each part is a
list of rows holding one line of each side: the lines are aligned first, so a line one side
inserted stands beside a gap and the lines after it stay side by side (the two columns
used to drift apart after an insertion); the words of lines that differ are then
marked against each other. A part one side lacks is marked whole on the other.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import zip_longest

from rapidfuzz.distance import Indel

from shadowdiff.answers.compare import common_ends, tool_call_parts
from shadowdiff.answers.records import Answer, Choice

Segments = list[tuple[str, str]]   # ("same"|"del"|"ins", text)

# A newline is a word of its own, apart from the indentation after it: lines can be paired
# at it, and a changed indentation or blank line is a change of whitespace alone.
_WORDS = re.compile(r"\n|[^\S\n]+|\w+|[^\w\s]")
_LINES = re.compile(r"[^\n]*\n|[^\n]+")   # each line with its newline
MAX_DIFF_CELLS = 25_000_000
# Lines are far fewer than words and Indel aligns them as cheaply per cell (a bit each):
# 15,000 by 15,000 lines take 0.06 s and 30 MB, 31,600 by 31,600 (this bound) 0.3 s and
# 125 MB (rapidfuzz 3.14, one core; bench/compare_cost.py). The words' bound would give
# up on two changes 5,000 lines apart and mark every line between them.
MAX_LINE_CELLS = 1_000_000_000


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
class Row:
    """One line of each side (its segments, newline included); ``None`` is a gap: that
    side has no line here, the other inserted one."""

    left: Segments | None
    right: Segments | None

    @property
    def changed(self) -> tuple[bool, bool]:
        return changed(self.left), changed(self.right)

    @property
    def normalized_alike(self) -> bool:
        """Whether the two lines differ only in their Unicode normalization (NFC): é as one
        character or as e and a combining accent look the same, yet are marked changed."""
        if self.left is None or self.right is None:
            return False
        a, b = ("".join(text for _, text in side) for side in (self.left, self.right))
        return a != b and unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)

    def mirrored(self) -> Row:
        return Row(None if self.right is None else _mirror(self.right),
                   None if self.left is None else _mirror(self.left))


def text_rows(a: str, b: str) -> list[Row]:
    """``a`` and ``b`` line by line, ``a``'s changes as deletions, ``b``'s as insertions.

    Whole lines are aligned first (Indel, the common head and tail set aside), so that a
    run of lines one side inserted stands beside gaps; each run of lines that differ is
    then word-diffed as one text and laid out by the words it kept (``_run``). A differing
    middle of more than ``MAX_LINE_CELLS`` lines times lines is taken as one run; the runs'
    word diffs together take at most ``MAX_DIFF_CELLS`` words times words, the bound of
    ``word_diff`` (a thousand runs each just under it would add up); a run past what is
    left is marked whole. Symmetric like ``word_diff``, and for
    the same reason: run with the lesser text first and mirrored back."""
    if b < a:
        return [row.mirrored() for row in _text_rows(b, a)]
    return _text_rows(a, b)


def _line(kind: str, line: str) -> Segments:
    return [(kind, line)] if line else []


def _kept(lines: list[str]) -> list[Row]:
    return [Row(_line("same", line), _line("same", line)) for line in lines]


def _text_rows(a: str, b: str) -> list[Row]:
    la, lb = _LINES.findall(a) or [""], _LINES.findall(b) or [""]
    head, tail = common_ends(la, lb)
    rows = _kept(la[:head])
    middle_a, middle_b = la[head:len(la) - tail], lb[head:len(lb) - tail]
    budget = [MAX_DIFF_CELLS]   # the words times words the runs' word diffs may still take
    if len(middle_a) * len(middle_b) > MAX_LINE_CELLS:
        rows += _run(middle_a, middle_b, budget)
    else:
        at_a = at_b = 0   # Indel has no substitutions: the lines between two equal blocks are one run
        for op in Indel.opcodes(middle_a, middle_b):
            if op.tag == "equal":
                rows += _run(middle_a[at_a:op.src_start], middle_b[at_b:op.dest_start], budget)
                rows += _kept(middle_a[op.src_start:op.src_end])
                at_a, at_b = op.src_end, op.dest_end
        rows += _run(middle_a[at_a:], middle_b[at_b:], budget)
    return rows + _kept(la[len(la) - tail:])


def _run(a: list[str], b: list[str], budget: list[int]) -> list[Row]:
    """Rows for a run of lines that differ: their words marked (if the ``budget`` of cells
    left allows), and each line put beside the other side's line that keeps the same
    words (the first kept piece of each line that is not yet placed decides); the lines
    between two such rows are paired in order, the side with fewer padded with gaps."""
    if not a and not b:
        return []
    text_a, text_b = "".join(a), "".join(b)
    cells = len(_WORDS.findall(text_a)) * len(_WORDS.findall(text_b))
    if cells <= budget[0]:
        budget[0] -= cells
        left, right = word_diff(text_a, text_b)
    else:
        left, right = _line("del", text_a), _line("ins", text_b)
    lines_a, kept_a = _split(left)
    lines_b, kept_b = _split(right)
    rows: list[Row] = []
    i = j = 0
    for x, y in zip(kept_a, kept_b, strict=True):   # the same kept piece, on line x of a and line y of b
        if x >= i and y >= j:
            rows += _padded(lines_a[i:x], lines_b[j:y])
            rows.append(Row(lines_a[x], lines_b[y]))
            i, j = x + 1, y + 1
    return rows + _padded(lines_a[i:], lines_b[j:])


def _split(segments: Segments) -> tuple[list[Segments], list[int]]:
    """The segments cut into lines (each keeps its newline), and the line of each piece of
    the kept ("same") segments, in order: both sides have the same kept pieces."""
    lines: list[Segments] = [[]]
    kept: list[int] = []
    for kind, text in segments:
        for piece in _LINES.findall(text):
            if kind == "same":
                kept.append(len(lines) - 1)
            line = lines[-1]
            if line and line[-1][0] == kind:   # two kept segments on one line read as one
                line[-1] = (kind, line[-1][1] + piece)
            else:
                line.append((kind, piece))
            if piece.endswith("\n"):
                lines.append([])
    return (lines if lines[-1] else lines[:-1]), kept


def _padded(a: list[Segments], b: list[Segments]) -> list[Row]:
    return [Row(x, y) for x, y in zip_longest(a, b)]


@dataclass(frozen=True)
class Part:
    """One part of one choice (its reasoning, text, a tool call's name or arguments, its
    refusal) on both sides, row by row. ``absent`` is true for a side that has no such
    part, or no such choice, or no answer: its cells are all gaps, shown as one note."""

    rows: list[Row]
    absent: tuple[bool, bool] = (False, False)

    @property
    def changed(self) -> bool:
        return any(any(row.changed) for row in self.rows)

    @property
    def chars(self) -> tuple[int, int]:
        """Each side's length (the reasoning's summary says it, as the part is collapsed)."""
        return (sum(len(text) for row in self.rows for _, text in row.left or ()),
                sum(len(text) for row in self.rows for _, text in row.right or ()))


@dataclass(frozen=True)
class CallPair:
    """One tool call of each side, by position: its name and its arguments."""

    name: Part
    arguments: Part


@dataclass(frozen=True)
class ChoicePair:
    """One choice (by index) of each side; a part is ``None`` when neither side has it
    (no reasoning, a ``null`` content), and ``missing`` is true for a side without the choice."""

    index: int
    finish: tuple[str | None, str | None]
    missing: tuple[bool, bool]
    reasoning: Part | None
    text: Part | None
    tool_calls: list[CallPair] = field(default_factory=list)
    refusal: Part | None = None


@dataclass(frozen=True)
class PairView:
    """Two answers' choices, side by side; ``failed`` is true for a side with no answer."""

    choices: list[ChoicePair]
    failed: tuple[bool, bool] = (False, False)


def sides_view(base: Answer | None, cand: Answer | None) -> PairView:
    """Two answers side by side, the first's changes as deletions (a failed side: none)."""
    return pair_view(base.choices if base and base.ok else None, cand.choices if cand and cand.ok else None)


def pair_view(a: Sequence[Choice] | None, b: Sequence[Choice] | None) -> PairView:
    """Both answers' choices, by index, part by part, marked against each other (``a``
    deletes, ``b`` inserts). ``None`` is a side with no answer (it failed): the other's
    choices are then shown unmarked, as there is nothing to mark them against."""
    by_a, by_b = {c.index: c for c in a or ()}, {c.index: c for c in b or ()}
    part: Callable[[str | None, str | None], Part | None] = _part
    if a is None or b is None:
        part = partial(_alone, side=0 if b is None else 1)
    return PairView([_choice(index, by_a.get(index), by_b.get(index), part)
                     for index in sorted(by_a.keys() | by_b.keys())], (a is None, b is None))


def _part(x: str | None, y: str | None) -> Part | None:
    if x is None and y is None:
        return None
    return Part(text_rows(x or "", y or ""), (x is None, y is None))


def _alone(x: str | None, y: str | None, side: int) -> Part | None:
    """A part of the one answer there is, unmarked, beside the failed side's gap."""
    text = (x, y)[side]
    if text is None:
        return None
    lines = [_line("same", line) for line in _LINES.findall(text) or [""]]
    return Part([Row(line, None) if side == 0 else Row(None, line) for line in lines], (side == 1, side == 0))


def _choice(index: int, x: Choice | None, y: Choice | None,
            part: Callable[[str | None, str | None], Part | None]) -> ChoicePair:
    (reasoning_x, text_x, refusal_x, calls_x), (reasoning_y, text_y, refusal_y, calls_y) = _shown(x), _shown(y)
    calls = []
    for call_x, call_y in zip_longest(calls_x, calls_y):
        name = part(call_x[0] if call_x else None, call_y[0] if call_y else None)
        arguments = part(call_x[1] if call_x else None, call_y[1] if call_y else None)
        assert name is not None and arguments is not None   # one side at least has the call
        calls.append(CallPair(name, arguments))
    return ChoicePair(index, (x.finish_reason if x else None, y.finish_reason if y else None), (x is None, y is None),
                      part(reasoning_x, reasoning_y), part(text_x, text_y), calls, part(refusal_x, refusal_y))


def _shown(c: Choice | None) -> tuple[str | None, str | None, str | None, list[tuple[str, str]]]:
    """A choice's reasoning, text, refusal and calls as shown. An empty reasoning is none
    (servers differ on null and ""); the text is left out when it is empty beside the
    other parts (vLLM's ``null`` content), and an answer with nothing at all shows its empty text."""
    if c is None:
        return None, None, None, []
    bare = not (c.tool_calls or c.reasoning or c.refusal is not None)
    return c.reasoning or None, c.text if c.text or bare else None, c.refusal, _calls(c.tool_calls)


def _calls(tool_calls: Sequence[object] | None) -> list[tuple[str, str]]:
    """(name, arguments) of each call as text, whatever the server sent."""
    return [("" if name is None else str(name), "" if arguments is None else str(arguments))
            for name, arguments in tool_call_parts(tool_calls)]

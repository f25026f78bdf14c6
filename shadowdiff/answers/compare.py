"""Comparing two answers to the same request: the core shared by the proxy and replay.

The steps follow the manual check shadowdiff automates:
byte equality settles identical pairs; equality after normalizing only the whitespace
that carries no meaning (``normalize``: prose layout, never indentation, code blocks,
quoted strings, heredocs or diff lines) settles formatting-only ones; the rest are graded by a
normalized Indel similarity (rapidfuzz: ``1 - indel_distance / (len(a) + len(b))``,
i.e. twice the longest common subsequence over the total length), over characters, or
over words for answers longer than ``WORD_LEVEL_FROM`` characters.

An answer is compared whole (``compare_answers``): every choice's text, reasoning,
refusal and tool calls. It is ``identical`` only if every part of every choice is
byte-identical (tool calls by name and arguments: their ids are random per request),
``equivalent`` only if every part is equal after normalization (tool-call arguments as
canonical JSON, so reordered keys are equal); otherwise similarity and the first
divergence are measured on ``render``, one text of the whole answer, which for a plain
one-choice answer is its text.

``difflib.SequenceMatcher(None, a, b).ratio()`` - what the manual check used - turns
on ``autojunk`` for texts of 200+ characters and then reports nonsense (0.17 for two
272-character answers that differ in one digit), and it is quadratic. It is kept only
as a compatibility column, with ``autojunk=False``, for texts up to ``difflib_limit``
characters.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from rapidfuzz.distance import Prefix

from shadowdiff.answers import indel
from shadowdiff.answers.indel import WORD_LEVEL_FROM as WORD_LEVEL_FROM
from shadowdiff.answers.indel import common_ends as common_ends  # the side-by-side view aligns with it too
from shadowdiff.errors import ConfigError
from shadowdiff.vocabulary import Outcome

if TYPE_CHECKING:   # records import this module (a Pair holds a Comparison)
    from shadowdiff.answers.records import Answer, Choice


@dataclass(frozen=True)
class Thresholds:
    """Where ``near`` ends and ``divergent`` begins, and the difflib length cap."""

    near: float = 0.9
    difflib_limit: int = 0   # 0: off; the column is opt-in (quadratic cost)

    def __post_init__(self) -> None:
        if not 0.0 <= self.near <= 1.0:
            raise ConfigError(f"the near threshold must be within 0..1, got {self.near}")
        if self.difflib_limit < 0:
            raise ConfigError("the difflib length limit must not be negative")


@dataclass(frozen=True)
class Comparison:
    """The comparison of a candidate (``b``) with a baseline (``a``)."""

    outcome: Outcome
    similarity: float | None            # normalized Indel similarity, 0..1
    difflib_ratio: float | None         # compatibility column (None past the limit)
    first_char: int | None              # first differing character, None if equal
    first_token: int | None             # first differing token, when tokens are known
    length_ratio: float | None          # len(b) / len(a), None when a is empty
    finish_reasons: tuple[str | None, str | None] = (None, None)
    # ``similarity`` was estimated (a megabyte answer rewritten throughout, past the cost
    # budgets of ``indel``): then it is a lower bound of the exact figure, as it always was there
    similarity_estimated: bool = False

    @property
    def finish_differs(self) -> bool:
        return self.finish_reasons[0] != self.finish_reasons[1]


# A fence opens a code block: ``` or ~~~ (or a longer run) first on its line.
_FENCE_OPEN = re.compile(r"\s*(`{3,}|~{3,})")
# The quotes that open and close a multi-line string literal (Python and others).
_TRIPLE = re.compile(r"\"\"\"|'''")
# A heredoc: <<WORD, <<-WORD, <<'WORD' or <<"WORD"; <<< is a here-string, one line.
_HEREDOC = re.compile(r"(?<!<)<<(-?)(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
# A line of a unified diff that is not indented: a removed or added line (the marker
# directly followed by its content) or a hunk header. Its spaces are the file's.
_DIFF_LINE = re.compile(r"[-+]\S|@@")
# The markers that open a list item or a quotation: the spaces after them set how the
# lines below nest, so they are kept.
_MARKERS = re.compile(r"(?:(?:[-*+>]|\d{1,9}[.)])\s+)+")
_QUOTE = re.compile(r"[\"'`]")
_RUN = re.compile(r"\s+")
# The characters that open a string across lines when a line leaves one open: a JS
# template literal, a double-quoted string (C++ R"(...)", Rust r#"..."#). A single quote
# does not: it is an apostrophe in prose far more often.
_LINE_QUOTES = ('"', "`")
# The HTML elements whose whitespace is shown as written.
_PRE_TAG = re.compile(r"<(/?)(pre|code|textarea)\b", re.IGNORECASE)


def normalize(text: str) -> str:
    """The text with only the whitespace that carries no meaning normalized: what
    ``equivalent`` compares. Unicode NFC, ``\\r\\n`` and ``\\r`` read as ``\\n``, whitespace
    at the end of the text dropped; then line by line: the lines of a block (``_blocks``:
    fenced code, a string left open across lines, preformatted HTML, a heredoc) as they
    are, its first and last lines included; elsewhere each line's trailing plain spaces
    (U+0020) dropped, a line of plain spaces only (a blank line) dropped unless it lies
    between two kept lines, a kept line (one that starts with whitespace, with ``-`` or
    ``+`` directly followed by a non-space, or with ``@@``) otherwise as it is, and on any
    other line each run of plain spaces one space - a run holding any other whitespace (a
    tab, a no-break space) kept whole - except after the list or quote markers that open
    it and from its first quote mark (``"``, ``'``, a backtick) on. Every other line
    break counts.

    Where a rule cannot tell meaning from layout, the whitespace is kept: a false
    ``equivalent`` can ship a regression, a false ``near`` only costs a review."""
    out: list[str] = []
    blanks = 0   # blank lines in a row outside a block, not yet placed
    for line, in_block in _blocks(normalize_code(text).split("\n")):
        if not in_block:
            line = line.rstrip(" ")
            if not line:
                blanks += 1
                continue
        if blanks and out and _kept(out[-1]) and _kept(line):
            out += [""] * blanks   # inside an indented block (a YAML block scalar, a docstring) or a diff
        blanks = 0
        out.append(line if in_block or _kept(line) else _prose_line(line))
    return "\n".join(out)


def _kept(line: str) -> bool:
    """Whether a line outside a block keeps its whitespace: it is indented (code, a
    nested YAML key) or a line of a diff."""
    return line[:1].isspace() or _DIFF_LINE.match(line) is not None


@dataclass(frozen=True)
class _Open:
    """What keeps a block open after a line: at most one kind is set, except that a
    string left open and preformatted HTML may be open together."""

    fence: str | None = None                 # the run that closes a code block
    outer: _Open | None = None               # what a code block opened inside another block returns to
    string: str | None = None                # the triple quote that closes a string
    heredocs: tuple[tuple[str, bool], ...] = ()   # the words still to close, and whether tabs may precede each
    quotes: frozenset[str] = frozenset()     # the quote characters (``"``, a backtick) left open
    tags: tuple[tuple[str, int], ...] = ()   # the preformatted elements still open, and how deeply

    def __bool__(self) -> bool:
        return bool(self.fence or self.string or self.heredocs or self.quotes or self.tags)


def _blocks(lines: list[str]) -> list[tuple[str, bool]]:
    """Each line, and whether it belongs to a block kept as it is, the first kind that a
    line outside any block opens: a fenced code block, from a line that starts (after any
    indentation) with ``` or ~~~ or a longer run, to the line that is only the same
    character as many times or more; a multi-line string, from a line that leaves a triple
    quote open to the line that closes it; a string left open, from a line holding an odd
    number of ``"`` (triple quotes aside) or of backticks to the next line holding an odd
    number of the same character; preformatted HTML, from a line holding a ``<pre``,
    ``<code`` or ``<textarea`` tag to the line that closes every such element (the same
    line, for one closed on it); a heredoc, from a line holding ``<<WORD`` to the line
    that is WORD alone (after tabs, for ``<<-WORD``; for several on one line, each in
    turn). A code block may open inside any other block; the other resumes after it. A
    block left open runs to the end of the text."""
    out = []
    state = _Open()
    for line in lines:
        if state:
            state = _advance(state, line)
            out.append((line, True))
        else:
            state = _opened(line)
            out.append((line, bool(state) or _PRE_TAG.search(line) is not None))
    return out


def _advance(state: _Open, line: str) -> _Open:
    """What is still open after a line inside a block."""
    if state.fence is not None:
        bare = line.strip()
        closed = bare.startswith(state.fence) and not bare.strip(state.fence[0])
        return (state.outer or _Open()) if closed else state
    if opened := _FENCE_OPEN.match(line):
        # a code block inside another block (a quote left open in prose before it, a string
        # or heredoc whose end stands inside it): kept whole, and the outer block cannot end
        # inside it - where the two readings disagree, the one that keeps more wins
        return _Open(fence=opened.group(1), outer=state)
    if state.string is not None:
        return _Open(string=_open_string(line, state.string))
    if state.heredocs:
        word, tabs = state.heredocs[0]
        return _Open(heredocs=state.heredocs[1:]) if (line.lstrip("\t") if tabs else line) == word else state
    quotes = frozenset(q for q in state.quotes if _quote_count(line, q) % 2 == 0)
    return _Open(quotes=quotes, tags=_open_tags(line, state.tags))


def _opened(line: str) -> _Open:
    """The block a line outside any opens, the first kind that applies: a code block, a
    multi-line string, a string left open or preformatted HTML (both, when the line leaves
    both open), heredocs."""
    if opened := _FENCE_OPEN.match(line):
        return _Open(fence=opened.group(1))
    if (string := _open_string(line, None)) is not None:
        return _Open(string=string)
    inline = _Open(quotes=frozenset(q for q in _LINE_QUOTES if _quote_count(line, q) % 2), tags=_open_tags(line, ()))
    if inline:
        return inline
    return _Open(heredocs=tuple((m.group(3), m.group(1) == "-") for m in _HEREDOC.finditer(line)))


def _quote_count(line: str, quote: str) -> int:
    """How many times a quote character stands alone on a line: a triple quote is a
    multi-line string's, read by ``_open_string``."""
    return line.replace(quote * 3, "").count(quote) if quote == '"' else line.count(quote)


def _open_tags(line: str, tags: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The preformatted elements still open after a line, given those open before it."""
    depth = dict(tags)
    for tag in _PRE_TAG.finditer(line):
        name = tag.group(2).lower()
        depth[name] = max(0, depth.get(name, 0) + (-1 if tag.group(1) else 1))
    return tuple(sorted((name, n) for name, n in depth.items() if n))


def _open_string(line: str, string: str | None) -> str | None:
    """The triple quote still open at the end of the line, given the one open at its start."""
    for quote in _TRIPLE.finditer(line):
        if string is None:
            string = quote.group()
        elif quote.group() == string:
            string = None
    return string


def normalize_code(text: str) -> str:
    """Code compared with its whitespace: Unicode NFC, ``\\r\\n`` and ``\\r`` read as
    ``\\n``, whitespace at the end of the text dropped."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip()


def _prose_line(line: str) -> str:
    """A line that is not indented: its runs of plain spaces as one space (a run holding a
    tab, a no-break space or any other whitespace kept whole: each is drawn or parsed
    otherwise), except after the markers that open it and from its first quote mark on (a
    string's spaces are its value)."""
    markers = _MARKERS.match(line)
    start = markers.end() if markers else 0
    quote = _QUOTE.search(line, start)
    end = quote.start() if quote else len(line)
    return line[:start] + _RUN.sub(_one_space, line[start:end]) + line[end:]


def _one_space(run: re.Match[str]) -> str:
    return " " if not run.group().strip(" ") else run.group()


def similarity(a: str, b: str) -> float:
    """Normalized Indel similarity: over characters, or over words for long texts
    (``indel.similarity``: exact, or a lower bound past its budgets)."""
    return indel.similarity(a, b).score


def difflib_ratio(a: str, b: str) -> float:
    """``SequenceMatcher(None, a, b, autojunk=False).ratio()``: quadratic, use sparingly."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def first_difference(a: Sequence[str] | str, b: Sequence[str] | str) -> int | None:
    """Index of the first differing element (character or token); None if equal."""
    common = int(Prefix.similarity(a, b))
    if common == len(a) == len(b):
        return None
    return common


def compare(a: str, b: str, *, tokens_a: Sequence[str] | None = None,
            tokens_b: Sequence[str] | None = None, finish_a: str | None = None,
            finish_b: str | None = None, thresholds: Thresholds = Thresholds()) -> Comparison:
    """Compare a candidate answer ``b`` with the baseline answer ``a``."""
    return _compare(a, b, tokens_a, tokens_b, (finish_a, finish_b), thresholds, Normalized())


def _compare(a: str, b: str, tokens_a: Sequence[str] | None, tokens_b: Sequence[str] | None,
             finish: tuple[str | None, str | None], thresholds: Thresholds, normalized: Normalized) -> Comparison:
    """``compare``, normalizing through ``normalized`` (which a whole answer's comparison
    shares with its parts' so that no text is normalized twice)."""
    first_token = (first_difference(tokens_a, tokens_b)
                   if tokens_a is not None and tokens_b is not None else None)
    length_ratio = len(b) / len(a) if a else None
    if a == b:
        return Comparison(Outcome.IDENTICAL, 1.0, 1.0, None, first_token, length_ratio, finish)
    # the common start and end, found once: the first divergence, the similarity (which
    # aligns only what lies between) and the equivalence check all start from them
    ends = common_ends(a, b)
    measured = indel.similarity(a, b, ends)
    ratio = difflib_ratio(a, b) if max(len(a), len(b)) <= thresholds.difflib_limit else None
    if normalized.equivalent(a, b, ends):
        outcome = Outcome.EQUIVALENT
    elif measured.score >= thresholds.near:
        outcome = Outcome.NEAR
    else:
        outcome = Outcome.DIVERGENT
    return Comparison(outcome, measured.score, ratio, ends[0], first_token, length_ratio, finish,
                      measured.estimated)


class Normalized:
    """``normalize`` and ``equivalent_texts``, remembering what they found: for one
    comparison, whose parts and rendering may hold the same texts (a one-choice answer is its
    own rendering). A new one per comparison: it holds the texts."""

    def __init__(self) -> None:
        self._done: dict[str, str] = {}
        self._equivalent: dict[tuple[str, str], bool] = {}

    def __call__(self, text: str) -> str:
        if (done := self._done.get(text)) is None:
            done = self._done[text] = normalize(text)
        return done

    def equivalent(self, a: str, b: str, ends: tuple[int, int] | None = None) -> bool:
        if (known := self._equivalent.get((a, b))) is None:
            known = self._equivalent[a, b] = equivalent_texts(a, b, self, ends)
        return known


def equivalent_texts(a: str, b: str, normalized: Callable[[str], str] = normalize,
                     ends: tuple[int, int] | None = None) -> bool:
    """``normalize(a) == normalize(b)``, normalizing only when that can hold: ``normalize``
    changes nothing but whitespace once a text is in NFC, so two texts in NFC whose
    differing middles (``ends``: their common head and tail) differ in any other character
    are not equivalent, whatever their layout. The check reads the middles only, and a
    changed word spares normalizing whole answers (most of a comparison's cost before)."""
    if a == b:
        return True
    if unicodedata.is_normalized("NFC", a) and unicodedata.is_normalized("NFC", b):
        head, tail = ends if ends is not None else common_ends(a, b)
        if _printed(a[head:len(a) - tail]) != _printed(b[head:len(b) - tail]):
            return False
    return normalized(a) == normalized(b)


def _printed(text: str) -> str:
    """The text without its whitespace (as ``str.split`` reads it, which is what
    ``normalize`` drops, adds or turns into other whitespace)."""
    return "".join(text.split())


def answered(choices: Sequence[Choice]) -> bool:
    """Whether some choice holds an answer: text with something visible in it once any
    thinking is set aside, a tool call or a refusal. Reasoning alone is thinking that never
    reached one."""
    return any(_visible(_after_thinking(c.text)) or c.tool_calls or c.refusal is not None for c in choices)


def _after_thinking(text: str) -> str:
    """The text after the thinking a server without a reasoning parser leaves in it: every
    leading ``<think>…</think>`` in turn (a model may think again), set aside; nothing, if
    one never closed (cut by the cap)."""
    rest = text
    while (shown := _from_visible(rest)).startswith(_THINK_OPEN):
        _, closed, rest = shown.partition(_THINK_CLOSE)
        if not closed:
            return ""
    return rest


def _from_visible(text: str) -> str:
    """The text from its first character that shows on."""
    return next((text[i:] for i, ch in enumerate(text) if _shows(ch)), "")


def _visible(text: str) -> bool:
    """Whether ``text`` shows anything: not only characters drawn as nothing."""
    return any(_shows(ch) for ch in text)


def _shows(ch: str) -> bool:
    """Whether a character is drawn as something: not whitespace, a format or control
    character (a zero-width space, a bidi mark), nor one of the letters and symbols made to
    look blank (a Hangul filler, a Braille blank, a variation selector, a tag character)."""
    return not (ch.isspace() or unicodedata.category(ch) in _UNSEEN_CATEGORIES or ch in _BLANK_LOOKING
                or any(low <= ch <= high for low, high in _BLANK_RANGES))


_UNSEEN_CATEGORIES = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})
_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u034f")
_BLANK_RANGES = (("\ufe00", "\ufe0f"), ("\U000e0100", "\U000e01ef"), ("\U000e0000", "\U000e007f"))
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


def render(choices: Sequence[Choice]) -> str:
    """The whole answer as one text: per choice, its reasoning as ``<think>…</think>`` (as
    reasoning models write it inline), its text, each tool call as
    ``<tool_call>NAME ARGUMENTS</tool_call>``, a refusal as ``<refusal>…</refusal>``; the
    choices after the first follow a line ``--- choice N ---``. A one-choice answer with
    nothing but text renders as that text."""
    out = []
    for choice in choices:
        parts = [] if choice.index == 0 else [f"--- choice {choice.index} ---"]
        if choice.reasoning:
            parts.append(f"<think>{choice.reasoning}</think>")
        if choice.text or not parts:
            parts.append(choice.text)
        parts += tool_call_lines(choice.tool_calls)
        if choice.refusal is not None:
            parts.append(f"<refusal>{choice.refusal}</refusal>")
        out.append("\n".join(parts))
    return "\n".join(out)


def tool_call_parts(tool_calls: Sequence[Any] | None) -> list[tuple[Any, Any]]:
    """(name, arguments) of each call: what the call is, without its random id. The one
    reading of a call for the comparison, the signals, the diffs and the request view;
    a call without the ``function`` wrapper is read as its own function, and anything but
    a list (a stored request's odd value) as no calls."""
    out = []
    for call in tool_calls if isinstance(tool_calls, list) else ():
        function = call.get("function", call) if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        out.append((function.get("name"), function.get("arguments")))
    return out


def tool_call_lines(tool_calls: Sequence[Any] | None) -> list[str]:
    """Each call as the rendering writes it: ``<tool_call>NAME ARGUMENTS</tool_call>``."""
    return [f"<tool_call>{name} {arguments}</tool_call>" for name, arguments in tool_call_parts(tool_calls)]


def call_keys(tool_calls: Sequence[Any] | None) -> list[tuple[Any, tuple[str, str]]]:
    """Each call as equivalence sees it: its name and canonical arguments."""
    return [(name, canonical_json(arguments)) for name, arguments in tool_call_parts(tool_calls)]


def canonical_json(arguments: Any) -> tuple[str, str]:
    """Tool-call arguments in one canonical form: ("json", the value re-serialized with
    sorted keys and no spaces) or, for text that is not JSON, ("text", it as sent: a tool
    reads every character of it). Types count (``true`` is not ``1``, ``1`` is not
    ``1.0``), decimals are compared as written (``1e400`` is not ``1e500``, though both
    overflow a float) and a repeated key is kept, so only key order and spacing are
    forgiven; JSON too deeply nested to parse is text."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    try:
        value = json.loads(arguments, object_pairs_hook=_sorted_pairs, parse_float=_decimal, parse_constant=_decimal)
        return "json", json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError, ArithmeticError):
        return "text", arguments


def _decimal(literal: str) -> dict[str, str]:
    """A JSON number with a fraction or exponent (or NaN, Infinity), by its exact value."""
    try:
        return {"\u0000number": str(Decimal(literal).normalize())}
    except ArithmeticError:
        return {"\u0000number": literal}


def _sorted_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object with its keys sorted; with a repeated key, its pairs as a list (which
    a plain ``dict`` would silently collapse to the last)."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) == len(keys):
        return dict(sorted(pairs))
    return {"\u0000duplicate keys": sorted(pairs, key=lambda kv: kv[0])}


def _parts(choice: Choice) -> tuple[Any, ...]:
    """What a choice is, for equality: its index, text, reasoning (empty is none: servers
    differ on null and ""), refusal, tool calls (name and arguments, not the id) and
    finish reason."""
    return choice.index, *_texts(choice), tool_call_parts(choice.tool_calls), choice.finish_reason


def _texts(choice: Choice) -> tuple[str | None, str | None, str | None]:
    return choice.text, choice.reasoning or None, choice.refusal


def _same_parts(a: Sequence[Choice], b: Sequence[Choice]) -> bool:
    return [_parts(x) for x in a] == [_parts(y) for y in b]


def _equivalent_parts(a: Sequence[Choice], b: Sequence[Choice], normalized: Normalized) -> bool:
    """Whether the choices are the same once texts are normalized and tool-call arguments
    made canonical: each text pair through ``equivalent_texts`` (normalized only when
    nothing but whitespace can differ)."""
    return len(a) == len(b) and all(
        x.index == y.index and x.finish_reason == y.finish_reason
        and call_keys(x.tool_calls) == call_keys(y.tool_calls)
        and all(p == q or (p is not None and q is not None and normalized.equivalent(p, q))
                for p, q in zip(_texts(x), _texts(y), strict=True))
        for x, y in zip(a, b, strict=True))


def compare_answers(a: Answer, b: Answer, thresholds: Thresholds = Thresholds()) -> Comparison:
    """Compare a candidate answer ``b`` with the baseline answer ``a``, whole."""
    choices_a, choices_b = a.choices, b.choices
    ra, rb = render(choices_a), render(choices_b)
    normalized = Normalized()   # the rendering and the parts share their normalized texts
    measured = _compare(ra, rb, a.tokens, b.tokens, (a.finish_reason, b.finish_reason), thresholds, normalized)
    identical = _same_parts(choices_a, choices_b)
    equivalent = identical or _equivalent_parts(choices_a, choices_b, normalized)
    if equivalent and not (answered(choices_a) or answered(choices_b)):
        # two answers that never began (a reasoning model cut by the token cap inside the same
        # thinking, or nothing at all) are not "identical": no answer was compared. (Thinking
        # that differs stays a change, for a person to look at.)
        return Comparison(Outcome.UNANSWERED, None, None, None, None, None, measured.finish_reasons)
    if identical:
        outcome = Outcome.IDENTICAL
    elif equivalent:
        outcome = Outcome.EQUIVALENT
    elif measured.outcome in (Outcome.IDENTICAL, Outcome.EQUIVALENT):
        # the renderings agree but the parts do not (text in one, reasoning in the other): a change
        outcome = Outcome.NEAR
    else:
        outcome = measured.outcome
    if outcome is measured.outcome:
        return measured
    first_char = measured.first_char if ra != rb else 0
    return Comparison(outcome, measured.similarity if ra != rb else 1.0, measured.difflib_ratio, first_char,
                      measured.first_token, measured.length_ratio, measured.finish_reasons,
                      measured.similarity_estimated)


# Comparing answers longer than this (all parts together) runs in a thread, so that the
# event loop of the proxy or the replay never waits on it (bench/compare_cost.py).
OFF_LOOP_CHARS = 8000


async def compare_off_loop(a: Answer, b: Answer, thresholds: Thresholds = Thresholds()) -> Comparison:
    """``compare_answers`` for callers on an event loop (an error comparison if a side failed)."""
    if not (a.ok and b.ok):
        return error_comparison(a.finish_reason, b.finish_reason)
    if off_loop(a, b):
        return await asyncio.to_thread(compare_answers, a, b, thresholds)
    return compare_answers(a, b, thresholds)


def off_loop(a: Answer, b: Answer) -> bool:
    """Whether work on these two answers (comparing them, their signals) is long enough to
    go to a thread: every part of every choice counts."""
    return max(sum(len(c.text) + len(c.reasoning or "") + len(c.refusal or "")
                   + sum(len(str(arguments)) for _, arguments in tool_call_parts(c.tool_calls)) for c in answer.choices)
               for answer in (a, b)) > OFF_LOOP_CHARS


def error_comparison(finish_a: str | None = None, finish_b: str | None = None) -> Comparison:
    """The comparison of a pair where a side failed."""
    return Comparison(Outcome.ERROR, None, None, None, None, None, (finish_a, finish_b))


_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})


def wants_stream(request: dict[str, Any]) -> bool:
    """Whether the server will stream its answer: ``stream`` read as vLLM's pydantic
    request model reads a boolean (lax mode), so ``"false"`` and ``0`` are not a stream."""
    stream = request.get("stream")
    if isinstance(stream, str):
        return stream.strip().lower() in _TRUE
    return bool(stream) if isinstance(stream, bool | int | float) else False


def is_greedy(request: dict[str, Any]) -> bool:
    """Greedy decoding (temperature 0 or top_k 1): each token the model's own top choice,
    which teacher-forced scoring measures. A seed alone makes sampling repeatable, not greedy."""
    return request.get("temperature") == 0 or request.get("top_k") == 1


def is_comparable(request: dict[str, Any]) -> bool:
    """Deterministic decoding: greedy (temperature 0 or top_k 1), or a fixed seed.

    A request without ``temperature`` samples at the server's default, so it is not.
    """
    return request.get("temperature") == 0 or request.get("top_k") == 1 or request.get("seed") is not None

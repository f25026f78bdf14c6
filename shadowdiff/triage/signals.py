"""Triage signals: machine-found hints about how two answers differ.

Similarity says how much two answers differ, not whether one is wrong. Each function
here looks for one kind of difference that tends to matter (a number, a label, a JSON
value, code, a refusal...) and returns a ``Signal`` with a value and a reason a
reviewer can read, or None. ``triage`` runs them all and turns what they found into a
suggested verdict and a review priority: a changed number or label first,
formatting last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shadowdiff.answers.compare import (
    Comparison,
    call_keys,
    equivalent_texts,
    normalize_code,
    render,
    tool_call_parts,
)
from shadowdiff.answers.folding import fold
from shadowdiff.answers.records import Answer
from shadowdiff.vocabulary import Outcome, Side, Verdict


@dataclass(frozen=True)
class Signal:
    kind: str
    value: Any
    reason: str

    def as_json(self) -> dict[str, Any]:
        # (``dataclasses.asdict`` was a tenth of a pair's triage: the same dict, built by hand)
        return {"kind": self.kind, "value": _plain_copy(self.value), "reason": self.reason}


_SCALARS = (str, int, float, bool, type(None))


def _plain_copy(value: Any) -> Any:
    """``value`` copied as ``dataclasses.asdict`` copies a field (dicts and lists anew, a
    str, number or None as itself), without its look at every value's type."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {_plain_copy(k): _plain_copy(v) for k, v in value.items()}
    if kind is list:
        return [_plain_copy(v) for v in value]
    return dataclasses.asdict(_Field(value))["value"]   # the rare shapes (a tuple, a dataclass...): asdict itself


@dataclass(frozen=True)
class _Field:
    value: Any


@dataclass(frozen=True)
class Triage:
    signals: tuple[Signal, ...]
    suggested: str      # one of the rubric's verdicts
    priority: int       # higher is reviewed first

    def as_json(self) -> list[dict[str, Any]]:
        return [s.as_json() for s in self.signals]


# -- numbers --------------------------------------------------------------------------

_FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)

_UNITS = (r"%|percent|per cent|million|billion|thousand|trillion|k|km|m|cm|mm|kg|g|mg|lb|s|ms|h|"
          r"hours?|minutes?|seconds?|days?|weeks?|months?|years?|°C|°F|°|USD|EUR|GBP|dollars?|euros?")
_NUMBER = re.compile(
    # (the look-ahead first: a position where no number can start is passed at once)
    r"(?=[-+−$€£\d])(?<![\w.])(?P<sign>[-+−])?(?P<currency>[$€£])?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    # (?!\w), not \b: a unit like "%" or "°" ends in a non-word character
    rf"(?:\s?(?P<unit>{_UNITS})(?!\w))?", re.IGNORECASE)


# Where ``_NUMBER`` can match: its first character, with nothing of a word or a "." before
# it (its look-behind, tried after the character, two back). Searched first, as a character
# set is found faster than the look-ahead is tried at every position.
_NUMBER_START = re.compile(r"[-+−$€£\d](?<![\w.].)", re.IGNORECASE)
# ``_NUMBER_START`` for an ASCII text (where ``\d`` is 0-9, and there is no "−", "€" or
# "£"): a set of ASCII characters is passed over twice as fast as one with ``\d`` in it
_NUMBER_START_ASCII = re.compile(r"[-+$0-9](?<![\w.].)")
# ``_NUMBER`` for an ASCII text lower-cased (the same places, the unit in lower case):
# ``re`` tries the units' alternation twice as fast where it need not ignore case
_NUMBER_LOWER = re.compile(_NUMBER.pattern.replace(_UNITS, _UNITS.lower()))


def _number_matches(text: str) -> Iterator[re.Match[str]]:
    """``_NUMBER.finditer(text)``, tried only where ``_NUMBER_START`` finds a beginning
    (an ASCII text: ``_NUMBER_LOWER`` in the text lower-cased, whose unit is lower-case)."""
    if text.isascii():
        starts, pattern, text = _NUMBER_START_ASCII, _NUMBER_LOWER, text.lower()
    else:
        starts, pattern = _NUMBER_START, _NUMBER
    end = 0
    for start in starts.finditer(text):
        at = start.start()
        if at >= end and (m := pattern.match(text, at)):
            end = m.end()
            yield m


def _numbers(text: str) -> Counter[str]:
    # (the keys gathered, then counted at once: a Counter's first count of a key is a call in Python)
    found = []
    blanked, at = [], 0
    for m in _number_matches(text):
        sign, currency, value, unit = m.groups()
        if currency or unit:
            unit = " " + (currency or "") + (unit.lower() if unit else "")
        found.append(("-" if sign == "-" or sign == "−" else "") + value.replace(",", "") + (unit or ""))
        start, end = m.span()
        blanked += [text[at:start], " " * (end - start)]
        at = end
    # what the digits took is blanked, so that "5 million" or "1 second" is not read again in words
    found += _word_number_keys("".join(blanked) + text[at:] if blanked else text)
    return Counter(found)


# Numbers written as words, read as the digits would be ("seven" is 7, "twenty-five" 25,
# "three million" 3 million, "third" 3 as "3rd" is): "seven" changed to "eight" is a changed
# number, "five" written "5" is not.
_ONES = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
          "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
# "first" and "second" are mostly the words of a list or of time ("first, check…", "a
# second"): read as numbers they flagged answers that only repeated a step (the demo's)
_COUNTED_ORDINALS = _ORDINALS[2:]
_SCALES = {"thousand": 1000, "million": 10**6, "billion": 10**9}
_WORD_VALUES = {**{w: i + 1 for i, w in enumerate(_ONES)}, **{w: i + 10 for i, w in enumerate(_TEENS)},
                **{w: 20 + 10 * i for i, w in enumerate(_TENS)}, "zero": 0}
_BELOW_100 = rf"(?:(?:{'|'.join(_TENS)})(?:[-\s]+(?:{'|'.join(_ONES)}))?|{'|'.join(_TEENS + _ONES)}|zero)"
_BELOW_1000 = rf"(?:(?:(?:{'|'.join(_ONES)}|a)\s+)?hundred(?:\s+(?:and\s+)?{_BELOW_100})?|{_BELOW_100})"
_SCALE = "|".join(_SCALES)
_NUMBER_WORDS = re.compile(
    rf"\b(?:(?P<phrase>{_BELOW_1000}\s+(?:{_SCALE})(?:,?\s+(?:and\s+)?{_BELOW_1000})?|a\s+(?:{_SCALE})|{_BELOW_1000})"
    rf"(?:\s?(?P<unit>{_UNITS})(?!\w))?|(?P<ordinal>{'|'.join(_COUNTED_ORDINALS)}))\b", re.IGNORECASE)
# ``_NUMBER_WORDS`` for a text lower-cased (see ``_number_words``): ``re`` tries its
# alternations four times as fast where it need not ignore case
_NUMBER_WORDS_LOWER = re.compile(_NUMBER_WORDS.pattern.replace(_UNITS, _UNITS.lower()))
# the words before a number word that make it no number: "the one", "no one", "a second", "at first"
_NOT_A_NUMBER = {"one": {"the", "this", "that", "which", "no", "any", "each", "every", "another", "a", "one"},
                 "second": {"a", "per", "one", "each", "every", "split"}, "first": {"at"}}
_WORD_BEFORE = re.compile(r"(\w+)\s+$")


# Where a number in words can begin: the full pattern tried only there, not at every word
# (it was a tenth of a millisecond per thousand characters of any answer, numbers or not).
# (A start only, one word long, so that no other beginning hides inside it: "ones" is
# "one" and "s", seconds, to the full pattern.)
# Searched in the text folded (``fold``), case and all: Python's ``re`` tries an
# alternation that ignores case four times slower. Each word's first letter begins a
# branch, and the word boundary before it is a look-behind after that letter (two back):
# ``re`` then passes over the characters that begin no branch in one loop, where a pattern
# led by a look-ahead or ``\b`` is tried at every position. (The words keep their order
# within a letter: the same word is found first.)
_START_WORDS = (*_ONES, *_TEENS, *_TENS, *_COUNTED_ORDINALS, "zero", "hundred")
_STARTS = re.compile("|".join(
    [f"{letter}(?<!\\w.)(?:{'|'.join(w[1:] for w in _START_WORDS if w[0] == letter)})"
     for letter in dict.fromkeys(w[0] for w in _START_WORDS)]
    + [rf"a(?<!\w.)(?=\s+(?:hundred|{_SCALE}))"]))
# ``_STARTS`` for an ASCII text whose characters that are no word's are spaces (``_spaced``):
# a space, then a word; ``re`` runs from space to space at once (a literal first), and
# tries the words only there. (The space a word begins after is another character in the
# text itself: what follows "a" is checked in the text.)
_STARTS_SPACED = re.compile(" (?:" + "|".join(
    [f"{letter}(?:{'|'.join(w[1:] for w in _START_WORDS if w[0] == letter)})"
     for letter in dict.fromkeys(w[0] for w in _START_WORDS)]
    + [rf"a(?= +(?:hundred|{_SCALE}))"]) + ")")


def _starts(folded: str) -> Iterator[int]:
    """Where ``_STARTS`` matches in ``folded``, in order."""
    if not folded.isascii():
        yield from (m.start() for m in _STARTS.finditer(folded))
        return
    if _STARTS.match(folded):
        yield 0
    for m in _STARTS_SPACED.finditer(_spaced(folded)):
        at = m.start() + 1
        if m.end() - at > 1 or _STARTS.match(folded, at):   # (an "a": "a, million" is no beginning)
            yield at


# every ASCII character that is not a word character (``\w``), as a space: an ASCII text
# so translated and split has the words ``\w+`` finds, in a third of the time
_ASCII_NOT_WORD = str.maketrans({c: " " for c in range(128) if not re.fullmatch(r"\w", chr(c))})


def _spaced(text: str) -> str:
    """An ASCII ``text`` with each character that is no word's a space (the same places)."""
    return text.translate(_ASCII_NOT_WORD)


def _number_words(text: str) -> Iterator[re.Match[str]]:
    """``_NUMBER_WORDS.finditer(text)``, tried only where ``_STARTS`` finds a beginning
    (in an ASCII text, ``_NUMBER_WORDS_LOWER`` in the text lower-cased: what it matches is
    the same, in lower case, and is read in lower case)."""
    folded = fold(text)
    pattern = _NUMBER_WORDS
    if text.isascii():
        pattern, text = _NUMBER_WORDS_LOWER, folded
    end = 0
    for start in _starts(folded):
        if start < end:
            continue
        if m := pattern.match(text, start):
            end = m.end()
            yield m


def _word_number_keys(text: str) -> list[str]:
    """The numbers in words in ``text``, each as ``_numbers`` keys it, in order."""
    found = []
    for m in _number_words(text):
        # (folded, not lower-cased: "sıx", dotless, is "six" to the pattern, and was a KeyError here)
        word = fold(m.group(0))
        if word in _NOT_A_NUMBER:
            before = _WORD_BEFORE.search(text[max(0, m.start() - 20):m.start()])
            if before and before.group(1).lower() in _NOT_A_NUMBER[word]:
                continue
        if m.group("ordinal"):
            found.append(str(_ORDINALS.index(word) + 1))
            continue
        value, scale = _phrase_value(fold(m.group("phrase")))
        unit = scale or (m.group("unit") or "").lower()
        found.append(f"{value}{(' ' + unit) if unit else ''}")
    return found


_PHRASE_SPLIT = re.compile(r"[\s,-]+")


def _phrase_value(phrase: str) -> tuple[int, str]:
    """A number phrase's value, and its scale word when the phrase ends in one ("three
    million" is 3 and "million", as the digits "3 million" are read)."""
    words = [w for w in _PHRASE_SPLIT.split(phrase) if w not in ("and", "a", "")]
    total = current = 0
    for word in words:
        if word == "hundred":
            current = (current or 1) * 100
        elif word in _SCALES:
            total += (current or 1) * _SCALES[word]
            current = 0
        else:
            current += _WORD_VALUES[word]
    if words[-1] in _SCALES:
        return total // _SCALES[words[-1]], words[-1]
    return total + current, ""


def numbers(a: str, b: str) -> Signal | None:
    """Numbers (with sign and unit) that one answer states and the other does not.

    Code blocks are left to ``code``: a changed constant there is a code change.
    """
    a, b = _FENCE.sub("", a), _FENCE.sub("", b)
    if a == b:
        return None
    na, nb = _numbers(a), _numbers(b)
    if na == nb:
        return None
    only_a, only_b = sorted((na - nb).elements()), sorted((nb - na).elements())
    if not only_a and not only_b:
        return None
    return _signal("numbers", {"baseline_only": only_a, "candidate_only": only_b})


# -- negations and booleans -------------------------------------------------------------

_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|\w+n['’]t)\b", re.IGNORECASE)
# ``_NEGATION`` for a folded text (``fold``), and without its contractions for a text that
# has none ("n't" is tried after every word otherwise): the same places, in half the time
_NEGATION_FOLDED = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|\w+n['’]t)\b")
# (the word boundary before a word as a look-behind after its first letter: see ``_STARTS``)
_NEGATION_WORDS = re.compile(r"n(?<!\w.)(?:ot|o|ever|one|obody|othing|either|or)\b|c(?<!\w.)annot\b")
# ``_NEGATION_WORDS`` in an ASCII text spaced (``_spaced``): a space, then the word (as in ``_STARTS_SPACED``)
_NEGATION_SPACED = re.compile(r" (not|no|never|none|nobody|nothing|neither|nor|cannot)\b")
# phrases with a negation word that deny nothing: "not only", "no matter", "No. 5" (a number)
_NOT_NEGATING = re.compile(r"\b(?:not\s+(?:only|just)|no\s+(?:matter|doubt))\b|\bno\.\s*\d", re.IGNORECASE)
# ``_NOT_NEGATING`` for a folded text: whether there is anything to take out (the text
# searched for its "no" at once, not at every position ignoring case)
_NOT_NEGATING_FOLDED = re.compile(r"n(?<!\w.)o(?:t\s+(?:only|just)\b|\s+(?:matter|doubt)\b|\.\s*\d)")


def _negations(text: str) -> Counter[str]:
    text = _FENCE.sub("", text)
    folded = fold(text)
    if _NOT_NEGATING_FOLDED.search(folded):
        text = _NOT_NEGATING.sub(" ", text)
        folded = fold(text)
    pattern = _NEGATION_FOLDED if "n't" in folded or "n’t" in folded else _NEGATION_WORDS
    if text.isascii():   # (the words as written, lower-cased, are the folded text's)
        if pattern is _NEGATION_WORDS:
            return Counter(_NEGATION_SPACED.findall(" " + _spaced(folded)))
        return Counter(pattern.findall(folded))
    # (the words as written, lower-cased: the places are the same in both texts)
    return Counter(text[m.start():m.end()].lower().replace("’", "'") for m in pattern.finditer(folded))


def negation(a: str, b: str) -> Signal | None:
    """A different count of negations ("not", "never", "cannot", "isn't", "no"...): a
    denial added or dropped flips what a sentence says while changing a word or two."""
    na, nb = _negations(a), _negations(b)
    if na.total() == nb.total():
        return None
    return _signal("negation", {"baseline": na.total(), "candidate": nb.total(),
                                "baseline_only": sorted((na - nb).elements()),
                                "candidate_only": sorted((nb - na).elements())})


_TRUTHS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
_TRUE_FALSE = re.compile(r"\b(?:true|false|yes)\b", re.IGNORECASE)
# "no", "on" and "off" are values only standing alone: after the start of a line, a
# sentence's end, ":", "=", an opening bracket or quote, or a verb that takes a value
# ("is off", "set to on", "turn it off"), and before the end or punctuation; not "no way",
# "on the table", "and so on"
_ALONE = re.compile(
    r"(?:^|(?<=[.!?:=(\[{\"'`])|\b(?:is|are|was|were|be|been|to|stays?|remains?|turned|switched|set|it|them|"
    r"says?|said)\b)[ \t]*(?P<word>no|on|off)(?=[ \t]*(?:$|[.,;:!?)\]}\"'`]))(?!\.\s*\d)",
    re.IGNORECASE | re.MULTILINE)


# Where a value of ``_ALONE`` could stand, in a folded text (``fold``): such a word before
# the end or punctuation (a word of ``_ALONE`` always has a word boundary before it). A
# text without one is not searched with ``_ALONE``, which tries every position.
# (the word boundary as a look-behind after the word's first letter: see ``_STARTS``)
_ALONE_PLACES = re.compile(r"(?:n(?<!\w.)o|o(?<!\w.)(?:n|ff))[ \t]*(?:$|[.,;:!?)\]}\"'`])", re.MULTILINE)


def _booleans(text: str) -> list[str]:
    text = _FENCE.sub("", text)
    folded = fold(text)
    found = []
    if "true" in folded or "false" in folded or "yes" in folded:
        found += [(m.start(), m.group(0)) for m in _TRUE_FALSE.finditer(text)]
    if _ALONE_PLACES.search(folded):
        found += [(m.start("word"), m.group("word")) for m in _ALONE.finditer(text)]
    return [word.lower() for _, word in sorted(found)]


def boolean(a: str, b: str) -> Signal | None:
    """A boolean value that changed: true/false, yes/no, on/off (these last two standing
    alone as a value). Compared by truth, so "yes" written "true" is the same value."""
    ba, bb = _booleans(a), _booleans(b)
    # (by its case fold: matched without case, "Yeſ" is "yes", and its lower case "yeſ" no key)
    if ba == bb or Counter(_TRUTHS[w.casefold()] for w in ba) == Counter(_TRUTHS[w.casefold()] for w in bb):
        return None
    return _signal("boolean", {"baseline": ba[:10], "candidate": bb[:10]})


# -- structured output ----------------------------------------------------------------

# What JSON can begin with (``json.loads`` fails at once on any other ASCII character;
# the exception it raises was a tenth of ``structured`` for a text that is not JSON)
_JSON_FIRST = frozenset('"{[ntfNI-0123456789')


def _json_of(text: str) -> Any:
    stripped = text.strip()
    first = stripped[:1]
    candidates = [stripped] if first in _JSON_FIRST or not first.isascii() else []
    candidates += [m.group(2) for m in _FENCE.finditer(text) if m.group(1) in ("", "json")]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):   # too deeply nested to parse: not JSON to us
            continue
    return _NOT_JSON


_NOT_JSON = object()


_DEEPEST = 32   # past this depth, a differing value is named whole (no Python recursion to exhaust)


def _diff_paths(x: Any, y: Any, path: str = "$", depth: int = 0) -> list[str]:
    """Where two JSON values differ; types count (``true`` is not ``1``)."""
    if depth < _DEEPEST and isinstance(x, dict) and isinstance(y, dict):
        out = [f"{path}.{k}" for k in sorted(set(x) ^ set(y))]
        for k in sorted(set(x) & set(y)):
            out += _diff_paths(x[k], y[k], f"{path}.{k}", depth + 1)
        return out
    if depth < _DEEPEST and isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [p for i, (u, v) in enumerate(zip(x, y, strict=True))
                for p in _diff_paths(u, v, f"{path}[{i}]", depth + 1)]
    return [] if _same_json(x, y) else [path]


def _same_json(x: Any, y: Any) -> bool:
    try:
        return json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True)
    except (RecursionError, TypeError, ValueError):
        return x is y


def structured(a: str, b: str, tool_calls_a: Sequence[Any] | None = None,
               tool_calls_b: Sequence[Any] | None = None) -> Signal | None:
    """JSON answers (or tool-call arguments) compared canonically: key order and
    spacing do not count, values do."""
    if tool_calls_a or tool_calls_b:
        if call_keys(tool_calls_a) == call_keys(tool_calls_b):
            return None
        ca, cb = _canonical_calls(tool_calls_a or ()), _canonical_calls(tool_calls_b or ())
        return Signal("structured", {"tool_calls": True, "paths": _diff_paths(ca, cb)},
                      "the tool calls differ: " + "; ".join(_call_changes(ca, cb)[:5]))
    ja, jb = _json_of(a), _json_of(b)
    if ja is _NOT_JSON and jb is _NOT_JSON:
        return None
    if ja is _NOT_JSON or jb is _NOT_JSON:
        return _signal("structured", {"parses": "baseline" if ja is not _NOT_JSON else "candidate"})
    paths = _diff_paths(ja, jb)
    if not paths:
        return None
    return _signal("structured", {"paths": paths[:20]})


def _call_changes(ca: list[Any], cb: list[Any]) -> list[str]:
    """What changed, call by call: the tool, or which arguments and how. Pairs of values
    are listed in sorted order, not baseline first, so that a blind reviewer cannot tell
    the sides apart by them (the side-by-side view shows which side says what)."""
    out = []
    if len(ca) != len(cb):
        out.append(f"{min(len(ca), len(cb))} and {max(len(ca), len(cb))} calls")
    for i, (x, y) in enumerate(zip(ca, cb, strict=False)):
        if x["name"] != y["name"]:
            names = sorted(map(str, (x["name"], y["name"])))
            out.append(f"call {i} calls different tools ({names[0]} and {names[1]})")
            continue
        for path in _diff_paths(x["arguments"], y["arguments"]):
            where = "the arguments are" if path == "$" else f"argument {path.removeprefix('$.')} is"
            u, v = _at(x["arguments"], path), _at(y["arguments"], path)
            if u is _MISSING or v is _MISSING:
                out.append(f"call {i} ({x['name']}): {where} given on one side only")
            elif _json_kind(u) != _json_kind(v):
                kinds = sorted((_json_kind(u), _json_kind(v)))
                out.append(f"call {i} ({x['name']}): {where} {kinds[0]} on one side, {kinds[1]} on the other")
            else:
                values = sorted(json.dumps(w, ensure_ascii=False)[:80] for w in (u, v))
                out.append(f"call {i} ({x['name']}): {where.removesuffix(' is').removesuffix(' are')} "
                           f"differ{'' if path == '$' else 's'} ({values[0]} and {values[1]})")
    return out or ["the calls differ"]


_MISSING = object()


def _json_kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"   # arguments that were not JSON stay a string too
    if isinstance(value, bool) or value is None:
        return "a boolean" if value is not None else "null"
    if isinstance(value, int | float):
        return "a number"
    return "an object" if isinstance(value, dict) else "an array"


def _at(value: Any, path: str) -> Any:
    """The value at a ``_diff_paths`` path (``$.a.b[2]``), or ``_MISSING``."""
    for step in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        key, index = step
        if key and isinstance(value, dict) and key in value:
            value = value[key]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return _MISSING
    return value


def _canonical_calls(calls: Sequence[Any]) -> list[Any]:
    """Each call's name and arguments, parsed where they are JSON (to say where they differ)."""
    out = []
    for name, arguments in tool_call_parts(calls):
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError, RecursionError):
                arguments = json.loads(arguments)
        out.append({"name": name, "arguments": arguments})
    return out


# -- short answers and labels ---------------------------------------------------------

_LABEL_LINE = re.compile(r"^\s*(?:label|answer|category|sentiment|class|verdict|choice)\s*[:=]\s*(.+?)\s*$",
                         re.I | re.M)
# where a ``_LABEL_LINE`` can be, past the first line: a line's start found by its "\n" (a
# literal, which ``re`` runs to at once, where ``^`` is tried at every position)
_LABEL_AFTER_NEWLINE = re.compile(r"\n\s*(?:label|answer|category|sentiment|class|verdict|choice)\s*[:=]", re.I)
_YES_NO = re.compile(r"^(yes|no|true|false)\b", re.I)
_OPTION = re.compile(r"^\(?([A-E])\)(?:\s|$)")


def _label_of(text: str) -> str | None:
    """The answer's label: a "Label: x" line, a whole answer of a few words, a leading
    yes/no/true/false, or a leading "(B)" / "B)" option."""
    m = _LABEL_LINE.search(text) if _LABEL_LINE.match(text) or _LABEL_AFTER_NEWLINE.search(text) else None
    if m:
        return m.group(1).strip().strip(".").lower()
    stripped = text.strip()
    if stripped and "\n" not in stripped and len(stripped) <= 25 and len(stripped.split()) <= 3:
        return stripped.strip(".!").lower()
    for pattern in (_YES_NO, _OPTION):
        m = pattern.match(stripped)
        if m:
            return m.group(1).lower()
    return None


def label(a: str, b: str) -> Signal | None:
    """A short answer or a label (classification, multiple choice, yes/no) that changed."""
    la, lb = _label_of(a), _label_of(b)
    if la is None or lb is None or la == lb:
        return None
    return _signal("label", {"baseline": la, "candidate": lb})


# -- code -----------------------------------------------------------------------------

def code(a: str, b: str) -> Signal | None:
    """Fenced code blocks that differ, in whitespace too (indentation is code), as
    ``equivalent`` reads them: only line endings, NFC and the block's end are forgiven."""
    ca = [normalize_code(m.group(2)) for m in _FENCE.finditer(a) if m.group(1) not in ("", "json", "text")]
    cb = [normalize_code(m.group(2)) for m in _FENCE.finditer(b) if m.group(1) not in ("", "json", "text")]
    if (not ca and not cb) or ca == cb:
        return None
    return _signal("code", {"blocks": [len(ca), len(cb)]})


# -- endings ----------------------------------------------------------------------------

def truncation(finish_a: str | None, finish_b: str | None) -> Signal | None:
    """A changed finish reason: one side hit the token limit, or stopped otherwise."""
    if finish_a == finish_b:
        return None
    return _signal("truncation", {"baseline": finish_a, "candidate": finish_b})


# -- repetition -------------------------------------------------------------------------

_WORDS = re.compile(r"\w+", re.U)


def _repeats(text: str) -> set[str]:
    # (an ASCII text lower-cased whole: the same words, found in one pass)
    words = _spaced(text.lower()).split() if text.isascii() else \
        [w.lower() for w in _WORDS.findall(text)]
    found = set()
    if any(map(operator.eq, words, itertools.islice(words, 1, None))):   # a word twice in a row at all
        found = {f"{w} {w}" for w, nxt in itertools.pairwise(words) if w == nxt and not w.isdigit()}
    trigrams = Counter(zip(words, words[1:], words[2:], strict=False))
    if max(trigrams.values(), default=0) >= 4:   # (most texts have none: their counts are not gone through)
        found |= {" ".join(t) for t, n in trigrams.items() if n >= 4}
    return found


def repetition(a: str, b: str) -> Signal | None:
    """A repeated word or phrase that one answer has and the other lacks."""
    ra, rb = _repeats(a), _repeats(b)
    only_a, only_b = sorted(ra - rb), sorted(rb - ra)
    if not only_a and not only_b:
        return None
    return _signal("repetition", {"baseline_only": only_a[:5], "candidate_only": only_b[:5]})


# -- refusals ---------------------------------------------------------------------------

_REFUSAL = re.compile(r"\b(I can(?:no|')t (?:help|assist|provide|do)|I(?: am|'m) (?:sorry|unable|not able)|"
                      r"I won't|as an AI|I must decline|cannot comply)\b", re.I)
# ``_REFUSAL`` for a folded text (``fold``), each branch led by its first letter (the word
# boundary a look-behind after it, as in ``_STARTS``): the same places, in a fifth of the time
_REFUSAL_FOLDED = re.compile(r"(?:i(?<!\w.)(?: can(?:no|')t (?:help|assist|provide|do)| am (?:sorry|unable|not able)|"
                             r"'m (?:sorry|unable|not able)| won't| must decline)|a(?<!\w.)s an ai|"
                             r"c(?<!\w.)annot comply)\b")


def refusal(a: str, b: str) -> Signal | None:
    ra, rb = bool(_REFUSAL_FOLDED.search(fold(a[:400]))), bool(_REFUSAL_FOLDED.search(fold(b[:400])))
    if ra == rb:
        return None
    return _signal("refusal", {"side": "baseline" if ra else "candidate"})


# -- size and position --------------------------------------------------------------------

def length(a: str, b: str, high: float = 1.25) -> Signal | None:
    """One answer more than ``high`` times as long as the other (an empty one included:
    whichever side it is on, so that the signal says nothing of the side)."""
    shorter, longer = sorted((len(a), len(b)))
    if longer <= shorter * high:
        return None
    return _signal("length", {"baseline": len(a), "candidate": len(b)})


_NEAR_TIE = 0.5


def divergence(comparison: Comparison, margin: float | None) -> Signal | None:
    """Where the answers part, and how sure the baseline was there (its top-1/top-2
    margin: the reason does not say whose, as that would name a side)."""
    if comparison.first_char is None:
        return None
    return _signal("divergence", {"char": comparison.first_char, "token": comparison.first_token, "margin": margin})


# -- reasons ---------------------------------------------------------------------------------

SIDES = ("baseline", "candidate")
_NAMES = ("the baseline", "the candidate")


def _signal(kind: str, value: Any) -> Signal:
    return Signal(kind, value, explain(kind, value))


@dataclass(frozen=True)
class _Told:
    """A signal's value as ``explain`` words it: the sides in the order named, and their names."""

    value: Any
    order: tuple[str, str]
    names: tuple[str, str]

    def pick(self, suffix: str = "") -> tuple[Any, Any]:
        return self.value[self.order[0] + suffix], self.value[self.order[1] + suffix]

    def name(self, side: str) -> str:
        return self.names[self.order.index(side)]

    def only(self, shown: Callable[[Any], str], suffix: str = "_only", limit: int = 6) -> list[str]:
        """"<name> <what only it has>" for each side that has something the other lacks."""
        return [f"{n} {shown(xs[:limit])}" for n, xs in zip(self.names, self.pick(suffix), strict=True) if xs]


def _tell_numbers(t: _Told) -> str:
    return "; ".join("only " + said for said in t.only(lambda xs: "says " + ", ".join(map(str, xs))))


def _tell_negation(t: _Told) -> str:
    x, y = t.pick()
    words = "; ".join("only " + said for said in t.only(lambda xs: "says " + ", ".join(xs)))
    return f"{t.names[0]} has {x} negation(s), {t.names[1]} {y}" + (f" ({words})" if words else "")


def _tell_boolean(t: _Told) -> str:
    x, y = t.pick()
    return f"{t.names[0]} says {', '.join(x) or 'no boolean'}, {t.names[1]} {', '.join(y) or 'none'}"


def _tell_label(t: _Told) -> str:
    x, y = t.pick()
    return f"{t.names[0]} answers {x!r}, {t.names[1]} {y!r}"


def _tell_code(t: _Told) -> str:
    x, y = (t.value["blocks"][SIDES.index(side)] for side in t.order)
    return f"the code differs ({x} block(s) in {t.names[0]}, {y} in {t.names[1]})"


def _tell_truncation(t: _Told) -> str:
    finishes = t.pick()
    cut = [n for n, finish in zip(t.names, finishes, strict=True) if finish == "length"]
    return (f"{cut[0]} was cut at the token limit" if len(cut) == 1
            else f"{t.names[0]} finished with {finishes[0]}, {t.names[1]} with {finishes[1]}")


def _tell_repetition(t: _Told) -> str:
    return "; ".join(t.only(lambda xs: "repeats " + ", ".join(repr(x) for x in xs), limit=3))


def _tell_refusal(t: _Told) -> str:
    return f"only {t.name(t.value['side'])} refuses"


def _tell_structured(t: _Told) -> str:
    if "parses" in t.value:
        return f"only {t.name(t.value['parses'])}'s answer is valid JSON"
    if not t.value.get("tool_calls"):
        return f"the JSON differs at {', '.join(t.value['paths'][:5])}"
    raise KeyError("structured")   # tool calls are told as a structured signal only once parsed


def _tell_length(t: _Told) -> str:
    if isinstance(t.value, int | float):
        # stored by earlier builds (before it held both sides' lengths): the candidate's length over the baseline's
        x, y = (1.0, float(t.value)) if t.order[0] == Side.BASELINE else (float(t.value), 1.0)
        counts = ""
    else:
        x, y = t.pick()
        counts = f"{t.names[0]} has {x:,} characters, {t.names[1]} {y:,}"
    if not min(x, y):
        return counts or f"{t.names[0] if not x else t.names[1]} is empty"
    longer = t.names[0] if x > y else t.names[1]
    return (counts + "; " if counts else "") + f"{longer} is {max(x, y) / min(x, y):.2f}x as long"


def _tell_choices(t: _Told) -> str:
    if "differ" in t.value:
        differ = t.value["differ"]
        return f"choice{'s' if len(differ) > 1 else ''} {', '.join(map(str, differ))} differ" \
               f"{'' if len(differ) > 1 else 's'}"
    # the counts in order of size, not of side: they give no side away even unblinded
    x, y = sorted(t.pick())
    return f"{x} and {y} choices"


def _tell_cascade(t: _Told) -> str:
    return (f"read token by token, the two models agree on {float(t.value['agreement']):.1%} of one answer's "
            "tokens: the texts part after a near-tie, not a broad change")


def _tell_flip(t: _Told) -> str:
    x, y = t.pick()
    return flip_reason(bool(x), bool(y), str(t.value["grader"]), t.names)


def _tell_divergence(t: _Told) -> str:
    where = f"token {t.value['token']}" if t.value["token"] is not None else f"character {t.value['char']}"
    if t.value["margin"] is None:
        return f"the answers part at {where}"
    margin = float(t.value["margin"])
    sure = "a near-tie: likely benign numerics" if margin < _NEAR_TIE else "a confident change"
    return f"the answers part at {where}, where the top-1/top-2 margin was {margin:.2f} ({sure})"


# How each kind of signal is told in words.
_TELLERS: dict[str, Callable[[_Told], str]] = {
    "numbers": _tell_numbers, "negation": _tell_negation, "boolean": _tell_boolean, "label": _tell_label,
    "code": _tell_code, "truncation": _tell_truncation, "repetition": _tell_repetition, "refusal": _tell_refusal,
    "structured": _tell_structured, "length": _tell_length, "choices": _tell_choices, "cascade": _tell_cascade,
    "flip": _tell_flip, "divergence": _tell_divergence,
}


def explain(kind: str, value: Any, first: str = "baseline", names: tuple[str, str] = _NAMES) -> str:
    """A signal's reason, from its value alone: the side ``first`` is named first, as
    ``names[0]``, the other second, as ``names[1]``. The words are the same whichever
    side comes first (the review UI passes the page's order and letters, so that
    neither the order nor the wording points at the baseline; the stored reason is the
    baseline first, for reports). ``KeyError``, ``TypeError`` or ``ValueError`` for a
    kind or value it does not know."""
    order = (first, SIDES[1 - SIDES.index(first)])   # ValueError for another side
    return _TELLERS[kind](_Told(value, order, names))


def flip_reason(first: bool, second: bool, grader: str, names: tuple[str, str] = _NAMES) -> str:
    """A ``flip`` signal's reason (``shadowdiff.verdict.flips``): which of the two answers, named in
    ``names``' order, the reference answer says is right."""
    right, wrong = names if first and not second else names[::-1]
    return f"by the reference answer ({grader} grader), {right} is right and {wrong} wrong"


# -- triage ----------------------------------------------------------------------------------

_PRIORITY = {"numbers": 100, "negation": 98, "boolean": 97, "label": 95, "structured": 90, "refusal": 85,
             "choices": 75, "code": 70, "truncation": 60, "repetition": 55, "length": 40, "reasoning": 30}
# every kind a signal can be, highest priority first (the review queue's filter, the metric's labels)
# (``flip``: graded against a reference, one side right; shadowdiff.verdict.flips, above them all)
SIGNAL_KINDS = ("flip", *sorted(_PRIORITY, key=lambda k: -_PRIORITY[k]), "divergence", "cascade")
# the kinds whose presence is one side's figure (the baseline's answer as the candidate reads
# it): the blind review page shows them only after the verdict, and its queue does not filter by them
ONE_SIDED_KINDS = ("cascade",)
_FACTUAL = ("numbers", "negation", "boolean", "label", "structured", "refusal")
_MINOR = ("code", "truncation", "repetition", "length")
Checker = Callable[[str, str], Signal | None]


def triage(a: str, b: str, comparison: Comparison, *, finish_a: str | None = None, finish_b: str | None = None,
           margin: float | None = None, tool_calls_a: Sequence[Any] | None = None,
           tool_calls_b: Sequence[Any] | None = None, extra: Sequence[Signal | None] = ()) -> Triage:
    """Every signal for a pair, a suggested verdict and a review priority; ``extra`` are
    signals found on the parts of the answers beyond their text."""
    if comparison.outcome in (Outcome.IDENTICAL, Outcome.ERROR):
        return Triage((), Verdict.EQUIVALENT if comparison.outcome is Outcome.IDENTICAL else Verdict.AMBIGUOUS, 0)
    found = [s for s in (numbers(a, b), negation(a, b), boolean(a, b), structured(a, b, tool_calls_a, tool_calls_b),
                         label(a, b), code(a, b),
                         truncation(finish_a, finish_b), repetition(a, b), refusal(a, b), length(a, b),
                         divergence(comparison, margin), *extra) if s is not None]
    if any(s.kind == "refusal" for s in found):   # an explicit refusal and a refusing text are one signal
        refusals = [s for s in found if s.kind == "refusal"]
        found = [s for s in found if s.kind != "refusal"] + refusals[-1:]
    kinds = {s.kind for s in found}
    if comparison.outcome is Outcome.EQUIVALENT:
        return Triage(tuple(found), Verdict.EQUIVALENT, 5)
    # From the kinds alone, which fire alike whichever side is the baseline: the priority
    # orders the blind review queue, so the margin (the baseline's own certainty, which
    # the divergence signal keeps for the reports) must not move it.
    priority = max((_PRIORITY[k] for k in kinds if k in _PRIORITY), default=20)
    if any(k in kinds for k in _FACTUAL):
        suggested = Verdict.FACTUAL
    elif any(k in kinds for k in _MINOR):
        suggested = Verdict.MINOR
    else:
        suggested = Verdict.WORDING
    return Triage(tuple(found), suggested, max(priority, 1))


def with_cascade(fields: dict[str, Any], score: dict[str, Any] | None) -> dict[str, Any]:
    """A pair's triage fields once teacher forcing has flagged it a cascade (``score``:
    shadowdiff.triage.scoring): a ``cascade`` signal, for the reports and the revealed review page.

    The priority stays as it was: the score is the candidate's reading of the baseline's
    answer, read the other way round it would differ, so a priority it moved would order
    the blind queue by which side is the baseline."""
    if not score or not score.get("cascade") or fields.get("signals") is None:
        return fields
    signal = _signal("cascade", {"agreement": round(float(score["agreement"]), 4)})
    return {**fields, "signals": [*fields["signals"], signal.as_json()]}


def reasoning_only(base: Answer, cand: Answer) -> Signal | None:
    """The thinking changed while the final answer (text, tool calls, refusal) did not:
    still a change, reviewed after the changes a user sees."""
    if (base.reasoning or None) == (cand.reasoning or None) or not equivalent_texts(base.text, cand.text):
        return None
    if call_keys(base.tool_calls) != call_keys(cand.tool_calls) or (base.refusal or None) != (cand.refusal or None):
        return None
    # both sides looked at: "cut off inside it" read from the baseline alone named the side
    # that refused when the other had nothing
    if not any(x.text or x.tool_calls or x.refusal for x in (base, cand)):
        return Signal("reasoning", None, REASONING_REASONS[0])
    return Signal("reasoning", None, REASONING_REASONS[1])


# a reasoning signal's reasons: the value holds nothing to rebuild them from, and they name no side
REASONING_REASONS = ("the reasoning differs; both answers were cut off inside it",
                     "only the reasoning differs; the final answer is the same")


def refused(base: Answer, cand: Answer) -> Signal | None:
    """The server's own refusal field (``message.refusal``), set on one side only."""
    if bool(base.refusal) == bool(cand.refusal):
        return None
    return _signal("refusal", {"side": "baseline" if base.refusal else "candidate"})


def choices(base: Answer, cand: Answer) -> Signal | None:
    """Answers with several choices: how many, and which differ."""
    a, b = base.choices, cand.choices
    if len(a) != len(b):
        return _signal("choices", {"baseline": len(a), "candidate": len(b)})
    if len(a) == 1:   # the first choice's difference is the text signals' (not rendered to be found unused)
        return None
    differ = [x.index for x, y in zip(a, b, strict=True) if render([x]) != render([y])]
    if not [i for i in differ if i]:
        return None
    return _signal("choices", {"differ": differ})


_CHOICE_HEADER = re.compile(r"^--- choice \d+ ---$", re.M)


def triage_answers(base: Answer, cand: Answer, comparison: Comparison, margin: float | None) -> dict[str, Any]:
    """The triage fields of a ``Pair`` (signals, suggested, priority) for two whole answers.

    The text signals read the final answers; when neither has one (both cut off inside
    their thinking) they read the reasoning, which is then all there is; with several
    choices, they read every choice (``render``).
    """
    if not (base.ok and cand.ok):
        return {"signals": None, "suggested": None, "priority": 0}
    a, b = base.text, cand.text
    if len(base.choices) > 1 or len(cand.choices) > 1:
        # every choice, without the rendering's own "--- choice N ---" lines (not the model's numbers)
        a, b = (_CHOICE_HEADER.sub("", render(x.choices)) for x in (base, cand))
    elif not (a or b or base.tool_calls or cand.tool_calls):
        a, b = base.reasoning or "", cand.reasoning or ""
    # every choice's tool calls, in choice order (a changed argument in choice 1 counts too)
    calls_a, calls_b = ([call for c in x.choices for call in c.tool_calls or ()] for x in (base, cand))
    t = triage(a, b, comparison, finish_a=base.finish_reason, finish_b=cand.finish_reason,
               margin=margin, tool_calls_a=calls_a, tool_calls_b=calls_b,
               extra=(reasoning_only(base, cand), refused(base, cand), choices(base, cand)))
    return {"signals": t.as_json(), "suggested": t.suggested, "priority": t.priority}

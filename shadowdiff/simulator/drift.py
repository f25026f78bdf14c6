"""Turning a baseline answer into a candidate's (or a replica's, or a sampled) answer.

Every operation keeps the text before its starting token unchanged - the identical
prefix real quantized outputs share with their baseline - and then changes the rest
in one characteristic way. Benign drift (wording, formatting) starts at a *near-tie*,
a token position where the baseline's top-1 and top-2 candidates are close
(``near_tie_alternative``); ``logprobs`` shows those margins, so a reviewer can see
that a benign change began where the baseline itself was unsure.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shadowdiff.simulator import baseline_text, lexicon
from shadowdiff.simulator.hashing import mix, unit
from shadowdiff.simulator.profiles import DriftKind, Profile
from shadowdiff.simulator.vocab import Token, vocabulary

NEAR_TIE_SHARE = 0.5   # of the positions where an alternative exists
_SALT_PLAN, _SALT_DETAIL, _SALT_NEAR_TIE, _SALT_REPLICA = 11, 13, 17, 19
_ATTEMPTS = 40
_NEWLINES = {"\n": "\n\n", "\n\n": "\n"}
_DIGIT = re.compile(r"^ ?[0-9]$")
_WORD_TOKEN = re.compile(r"^ [A-Za-z]{3,}$")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_LIST_LINE = re.compile(r"^(\d+)\. .*$", re.M)


def _with_case(template: str, word: str) -> str:
    """``word`` with the leading space and capitalisation of ``template``."""
    core = template.strip()
    out = word.capitalize() if core[:1].isupper() else word
    return (" " + out) if template.startswith(" ") else out


def alternative(token_text: str) -> str | None:
    """The runner-up a model could pick instead of ``token_text``, if there is one."""
    if token_text in _NEWLINES:
        return _NEWLINES[token_text]
    group = lexicon.SYNONYMS.get(token_text.strip().lower())
    return _with_case(token_text, group[0]) if group else None


def near_tie_alternative(key: int, index: int, token_text: str) -> str | None:
    """The top-2 token at ``index`` when that position is a near-tie, else None."""
    alt = alternative(token_text)
    if alt is not None and unit(key, index, _SALT_NEAR_TIE) < NEAR_TIE_SHARE:
        return alt
    return None


@dataclass(frozen=True, slots=True)
class Drifted:
    """An answer after drift, and what was done to it."""

    text: str
    kind: DriftKind | None      # what was applied; None: the baseline text unchanged
    planned: DriftKind | None   # what the profile chose for this prompt

    @property
    def confident(self) -> bool:
        return self.kind is not None and self.kind.confident


def _join(tokens: Sequence[Token]) -> str:
    return "".join(t.text for t in tokens)


def _offsets(tokens: Sequence[Token]) -> list[int]:
    out, pos = [], 0
    for t in tokens:
        out.append(pos)
        pos += len(t.text)
    return out


def _search(indices: range, start: int, ok: Callable[[int], bool]) -> int | None:
    """The first index >= start satisfying ``ok``, else the last one before it."""
    after = [i for i in indices if i >= start and ok(i)]
    if after:
        return after[0]
    before = [i for i in indices if i < start and ok(i)]
    return before[-1] if before else None


class _Op:
    """The state one drift operation works on."""

    def __init__(self, key: int, tokens: list[Token], start: int, rng: random.Random,
                 prompt: str) -> None:
        self.key, self.tokens, self.start, self.rng, self.prompt = key, tokens, start, rng, prompt
        self.text = _join(tokens)

    def _drift_rest(self, tokens: list[Token], after: int, swap: float, rewrite: float) -> str:
        """Synonym swaps after ``after``, and sometimes later sentences rewritten."""
        head = _join(tokens[: after + 1])
        rest = []
        for t in tokens[after + 1:]:
            alt = None if t.text in _NEWLINES else alternative(t.text)
            rest.append(alt if alt is not None and self.rng.random() < swap else t.text)
        tail = "".join(rest)
        if self.rng.random() < rewrite:
            writer = baseline_text.Writer(self.rng, baseline_text.topic_words(self.prompt))
            tail = re.sub(
                r"(?<=[.!?] )[A-Z][^.!?\n]*[.!?](?= |\n|$)",
                lambda m: writer.sentence() if self.rng.random() < 0.5 else m.group(),
                tail,
            )
        return head + tail

    def flip(self, swap: float, rewrite: float, newline: bool = False) -> str | None:
        def ok(i: int) -> bool:
            alt = near_tie_alternative(self.key, i, self.tokens[i].text)
            return i > 0 and alt is not None and ((alt in _NEWLINES) == newline)

        i = _search(range(len(self.tokens)), self.start, ok)
        if i is None:
            return None
        alt = near_tie_alternative(self.key, i, self.tokens[i].text)
        assert alt is not None
        tokens = [*self.tokens[:i], Token(-1, alt), *self.tokens[i + 1:]]
        if newline:
            head = _join(tokens[: i + 1])
            rest = "".join(
                _NEWLINES[t.text] if t.text in _NEWLINES and self.rng.random() < 0.5 else t.text
                for t in tokens[i + 1:]
            )
            return head + rest
        return self._drift_rest(tokens, i, swap, rewrite)

    def wording(self) -> str | None:
        return self.flip(swap=0.5, rewrite=0.4)

    def formatting(self) -> str | None:
        return self.flip(swap=0.0, rewrite=0.0, newline=True)

    def number(self) -> str | None:
        digits = range(len(self.tokens))
        i = _search(digits, self.start, lambda j: bool(_DIGIT.match(self.tokens[j].text))
                    and (j + 1 == len(self.tokens) or not _DIGIT.match(self.tokens[j + 1].text.lstrip())))
        if i is None or i == 0:
            return None
        old = self.tokens[i].text
        digit = (int(old.strip()) + self.rng.choice((1, 2, 9))) % 10
        new = old[:-1] + str(digit)
        return _join(self.tokens[:i]) + new + _join(self.tokens[i + 1:])

    def repetition(self) -> str | None:
        i = _search(range(len(self.tokens)), self.start,
                    lambda j: j > 0 and bool(_WORD_TOKEN.match(self.tokens[j].text)))
        if i is None:
            return None
        return _join(self.tokens[: i + 1]) + self.tokens[i].text + _join(self.tokens[i + 1:])

    def list_item(self) -> str | None:
        aside = self.rng.choice(lexicon.OFF_TOPIC)
        lines = list(_LIST_LINE.finditer(self.text))
        if lines:
            last = lines[-1]
            item = f"\n{int(last.group(1)) + 1}. **Aside**: {aside}"
            return self.text[: last.end()] + item + self.text[last.end():]
        at = self._sentence_end_after(_offsets(self.tokens)[self.start])
        if at is None:
            return None
        return self.text[:at] + " " + aside + self.text[at:]

    def early_stop(self) -> str | None:
        start_char = _offsets(self.tokens)[self.start]
        at = self._sentence_end_after(start_char)
        if at is None or at >= len(self.text.rstrip()):
            ends = [m.end() for m in _SENTENCE_END.finditer(self.text) if m.end() < start_char]
            at = ends[-1] if ends else None
        if at is None:
            return _join(self.tokens[: max(1, self.start)])
        return self.text[:at]

    def _sentence_end_after(self, char: int) -> int | None:
        for m in _SENTENCE_END.finditer(self.text):
            if m.end() > char:
                return m.end()
        return None


_FALLBACK: dict[DriftKind, tuple[DriftKind, ...]] = {
    DriftKind.NUMBER: (DriftKind.NUMBER, DriftKind.WORDING, DriftKind.REPETITION),
    DriftKind.REPETITION: (DriftKind.REPETITION, DriftKind.NUMBER, DriftKind.EARLY_STOP),
    DriftKind.LIST_ITEM: (DriftKind.LIST_ITEM, DriftKind.REPETITION),
    DriftKind.EARLY_STOP: (DriftKind.EARLY_STOP, DriftKind.REPETITION),
    DriftKind.FORMATTING: (DriftKind.FORMATTING, DriftKind.WORDING, DriftKind.REPETITION),
    DriftKind.WORDING: (DriftKind.WORDING, DriftKind.FORMATTING, DriftKind.REPETITION),
}


def _start(key: int, salt: int, count: int) -> int:
    """Where the identical prefix ends: between 20 % and 70 % of the answer."""
    return int(count * (0.2 + 0.5 * unit(key, salt)))


def first_difference(base: Sequence[Token], other: Sequence[Token]) -> int | None:
    """The first token index where two answers differ (None if they are equal)."""
    for i, (a, b) in enumerate(zip(base, other, strict=False)):
        if a.text != b.text:
            return i
    return None if len(base) == len(other) else min(len(base), len(other))


def apply_profile(profile: Profile, key: int, prompt: str, tokens: list[Token]) -> Drifted:
    """The profile's version of the baseline answer ``tokens`` to ``prompt``.

    A benign change must begin at a near-tie of the baseline and a confident one must
    not, so that the logprobs tell the truth about each; an operation whose first
    divergent token breaks that rule is tried again further on.
    """
    text = _join(tokens)
    planned = planned_kind(profile, key)
    if planned not in _FALLBACK or len(tokens) < 2:   # none, or a part beyond the text
        return Drifted(text, None, planned)
    rng = random.Random(mix(key, profile.drift_seed, _SALT_DETAIL))
    initial = _start(key, profile.drift_seed, len(tokens))
    for kind in _FALLBACK[planned]:
        start = initial
        for _ in range(_ATTEMPTS):
            changed = getattr(_Op(key, tokens, start, rng, prompt), kind.value)()
            if changed is None or changed == text:
                break
            at = first_difference(tokens, retokenize(changed))
            assert at is not None
            near_tie = at < len(tokens) and near_tie_alternative(key, at, tokens[at].text) is not None
            if near_tie != kind.confident:
                return Drifted(changed, kind, planned)
            start = at + 1 if at + 1 < len(tokens) else 1
    return Drifted(text, None, planned)


def planned_kind(profile: Profile, key: int) -> DriftKind | None:
    """The drift ``profile`` plans for the prompt whose key is ``key`` (None: none)."""
    return profile.kind_for(unit(key, profile.drift_seed, _SALT_PLAN))


def reasoning_number(profile: Profile, key: int, prompt: str, tokens: list[Token]) -> str | None:
    """The thinking ``tokens`` with one number changed (``reasoning_number``), or None."""
    if len(tokens) < 2:
        return None
    rng = random.Random(mix(key, profile.drift_seed, _SALT_DETAIL))
    return _Op(key, tokens, _start(key, profile.drift_seed, len(tokens)), rng, prompt).number()


def detail_rng(profile: Profile, key: int) -> random.Random:
    """The random choices of a drift beyond the text (which argument, which tool)."""
    return random.Random(mix(key, profile.drift_seed, _SALT_DETAIL))


def replica_flip(key: int, seed: int, rate: float, prompt: str, tokens: list[Token]) -> str | None:
    """A replica's rare disagreement: a near-tie resolved the other way, or None."""
    if seed == 0 or len(tokens) < 2 or unit(key, seed, _SALT_REPLICA) >= rate:
        return None
    rng = random.Random(mix(key, seed, _SALT_REPLICA))
    op = _Op(key, tokens, _start(key, seed, len(tokens)), rng, prompt)
    return op.flip(swap=0.3, rewrite=0.0)


def sample(key: int, tokens: list[Token], rng: random.Random, temperature: float,
           prompt: str) -> str:
    """A sampled (temperature > 0) answer: near-ties resolve at random."""
    flip_probability = min(0.9, 0.5 * temperature)
    for i, token in enumerate(tokens):
        if i and near_tie_alternative(key, i, token.text) and rng.random() < flip_probability:
            op = _Op(key, tokens, i, rng, prompt)
            changed = op.flip(swap=0.5, rewrite=0.3, newline=token.text in _NEWLINES)
            if changed is not None:
                return changed
    return _join(tokens)


def retokenize(text: str) -> list[Token]:
    return vocabulary().encode(text)

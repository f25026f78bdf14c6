"""From a validated request to the tokens each choice emits, and why it stopped.

This is where vLLM's sampling parameters take effect: greedy or sampled decoding
(``temperature``, ``top_k``, ``seed``), the end of sequence (``ignore_eos``,
``min_tokens``), ``stop`` strings (``include_stop_str_in_output``, ``stop_reason``),
``stop_token_ids`` and ``max_tokens``. At temperature 0, or with a ``seed``, the
result is a pure function of (prompt, parameters, profile, server seed).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from simulator import drift, logprobs, textgen
from simulator.hashing import mix
from simulator.profiles import DriftKind, Profile
from simulator.vocab import Token, Vocabulary


@dataclass(frozen=True)
class Sampling:
    """The parameters of one request that decide what is generated."""

    prompt: str                         # the text the answer is about (template applied)
    prompt_ids: tuple[int, ...]
    max_tokens: int
    n: int = 1
    temperature: float = 0.0
    top_k: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    include_stop_str_in_output: bool = False
    ignore_eos: bool = False
    min_tokens: int = 0
    logprobs: int | None = None         # top-N to report, None: no logprobs
    json_output: bool = False

    @property
    def greedy(self) -> bool:
        return self.temperature == 0 or self.top_k == 1


@dataclass(frozen=True)
class Choice:
    """What one choice emits: tokens (texts as streamed), and how it ended."""

    index: int
    tokens: tuple[Token, ...]
    finish_reason: str
    stop_reason: str | int | None
    hidden_tokens: int                  # generated but not shown: EOS or a stop token
    positions: tuple[logprobs.Position, ...] | None

    @property
    def completion_tokens(self) -> int:
        return len(self.tokens) + self.hidden_tokens

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)


@dataclass(frozen=True)
class Planned:
    """The greedy answer for a prompt, with the baseline it was derived from."""

    base: tuple[Token, ...]
    tokens: tuple[Token, ...]
    kind: DriftKind | None
    planned: DriftKind | None
    replica_flipped: bool


class Generator:
    """Answers prompts for one simulated deployment (profile and server seed)."""

    def __init__(self, profile: Profile, seed: int, vocab: Vocabulary, cache_size: int = 4096) -> None:
        self.profile = profile
        self.seed = seed
        self.vocab = vocab
        self._cache: OrderedDict[tuple[str, bool], Planned] = OrderedDict()
        self._cache_size = cache_size

    def plan(self, prompt: str, json_output: bool = False) -> Planned:
        """The greedy answer to ``prompt`` (cached: the same prompt repeats in a replay)."""
        cache_key = (prompt, json_output)
        hit = self._cache.get(cache_key)
        if hit is not None:
            self._cache.move_to_end(cache_key)
            return hit
        key = textgen.prompt_key(prompt)
        base = self.vocab.encode(textgen.generate(prompt, json_output=json_output).text)
        drifted = drift.apply_profile(self.profile, key, prompt, base)
        tokens = base if drifted.kind is None else self.vocab.encode(drifted.text)
        flipped = drift.replica_flip(key, self.seed, self.profile.replica_rate, prompt, tokens)
        if flipped is not None:
            tokens = self.vocab.encode(flipped)
        planned = Planned(tuple(base), tuple(tokens), drifted.kind, drifted.planned, flipped is not None)
        self._cache[cache_key] = planned
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return planned

    def generate(self, s: Sampling) -> list[Choice]:
        plan = self.plan(s.prompt, s.json_output)
        key = textgen.prompt_key(s.prompt)
        choices = []
        for index in range(s.n):
            tokens = list(plan.tokens)
            if not s.greedy:
                rng = random.Random(mix(s.seed, index) if s.seed is not None else None)
                tokens = self.vocab.encode(drift.sample(key, tokens, rng, s.temperature, s.prompt))
            choices.append(self._finish(index, key, tokens, plan, s))
        return choices

    def _finish(self, index: int, key: int, tokens: list[Token], plan: Planned, s: Sampling) -> Choice:
        limit = max(s.max_tokens, 0)
        wanted = limit if s.ignore_eos else s.min_tokens
        filler = textgen.continuation(key)
        while len(tokens) < wanted:
            tokens.extend(self.vocab.encode(next(filler)))
        if s.ignore_eos:
            tokens = tokens[:limit]
        out, finish, reason, hidden = _apply_stops(tokens, limit, s)
        positions = None
        if s.logprobs is not None:
            divergence = _divergence(plan, out)
            positions = tuple(
                logprobs.position(key, i, t.text, s.logprobs, self.vocab, divergence)
                for i, t in enumerate(out)
            )
        return Choice(index, tuple(out), finish, reason, hidden, positions)


def _apply_stops(tokens: Sequence[Token], limit: int, s: Sampling) -> tuple[list[Token], str, str | int | None, int]:
    """Walk the tokens as a decoder would: the first stop condition met wins.

    Returns the visible tokens, the finish and stop reasons, and how many tokens were
    generated but not shown (the end-of-sequence or stop token: vLLM counts it in
    ``completion_tokens`` but not in the text).
    """
    out: list[Token] = []
    text = ""
    longest_stop = max((len(x) for x in s.stop), default=0)
    for token in tokens:
        if len(out) == limit:
            return out, "length", None, 0
        if token.id in s.stop_token_ids and len(out) >= s.min_tokens:
            return out, "stop", token.id, 1
        before = len(text)
        text += token.text
        out.append(token)
        if not s.stop or len(out) <= s.min_tokens:
            continue
        window = max(0, before - longest_stop + 1)
        found = [(at, stop) for stop in s.stop if (at := text.find(stop, window)) != -1]
        if found:
            at, stop = min(found)
            cut = at + len(stop) if s.include_stop_str_in_output else at
            return _trim(out, cut), "stop", stop, 0
    if len(out) >= limit:
        # The end of sequence would have been token limit + 1: never generated.
        return out, "length", None, 0
    return out, "stop", None, 1


def _trim(tokens: list[Token], cut: int) -> list[Token]:
    """The tokens with their texts cut at character ``cut`` (a stop string's start)."""
    out, at = [], 0
    for token in tokens:
        out.append(Token(token.id, token.text[: max(cut - at, 0)]))
        at += len(token.text)
    return out


def _divergence(plan: Planned, out: Sequence[Token]) -> logprobs.Divergence | None:
    """Where this answer first differs from the baseline's, for the logprobs there."""
    if plan.kind is None and not plan.replica_flipped:
        return None
    for i, (mine, theirs) in enumerate(zip(out, plan.base, strict=False)):
        if mine.text != theirs.text:
            confident = plan.kind is not None and plan.kind.confident
            return logprobs.Divergence(i, theirs.text, confident)
    return None

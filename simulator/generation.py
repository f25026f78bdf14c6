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
    hidden_id: int | None               # generated but not shown: EOS or a stop token
    positions: tuple[logprobs.Position, ...] | None

    @property
    def completion_tokens(self) -> int:
        return len(self.tokens) + (self.hidden_id is not None)

    @property
    def token_ids(self) -> list[int]:
        ids = [t.id for t in self.tokens]
        return ids if self.hidden_id is None else [*ids, self.hidden_id]

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
        # Keyed by a 64-bit hash, not the prompt: long-context prompts would pin memory.
        self._cache: OrderedDict[tuple[int, bool], Planned] = OrderedDict()
        self._cache_size = cache_size

    def plan(self, prompt: str, json_output: bool = False) -> Planned:
        """The greedy answer to ``prompt`` (cached: the same prompt repeats in a replay)."""
        key = textgen.prompt_key(prompt)
        cache_key = (key, json_output)
        hit = self._cache.get(cache_key)
        if hit is not None:
            self._cache.move_to_end(cache_key)
            return hit
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
        out, finish, reason, hidden = _apply_stops(tokens, limit, s, self.vocab.eos_id)
        positions = None
        if s.logprobs is not None:
            # Logprobs name the tokens as generated, even the one a stop string cut.
            generated = tokens[: len(out)]
            divergence = _divergence(plan, generated)
            positions = tuple(
                logprobs.position(key, i, t.text, s.logprobs, self.vocab, divergence)
                for i, t in enumerate(generated)
            )
        return Choice(index, tuple(out), finish, reason, hidden, positions)


def _apply_stops(tokens: Sequence[Token], limit: int, s: Sampling,
                 eos_id: int) -> tuple[list[Token], str, str | int | None, int | None]:
    """Walk the tokens as vLLM's decoder does: the first stop condition met wins.

    Returns the visible tokens, the finish and stop reasons, and the id of the token
    generated but not shown (the end of sequence or a stop token: vLLM counts it in
    ``completion_tokens`` and ``token_ids``, not in the text), if any.
    """
    out: list[Token] = []
    text = ""
    for token in tokens:
        if len(out) == limit:
            return out, "length", None, None
        if token.id in s.stop_token_ids and len(out) >= s.min_tokens:
            return out, "stop", token.id, token.id
        text += token.text
        out.append(token)
        if not s.stop or len(out) <= s.min_tokens:
            continue
        # vLLM's check_stop_strings: a stop string must end inside the new text; the
        # one that ends first wins, ties going to the earlier entry of ``stop``.
        new = len(token.text)
        best: tuple[int, int, str] | None = None
        for stop in s.stop:
            at = text.find(stop, max(0, len(text) + 1 - new - len(stop)))
            if at != -1 and (best is None or at + len(stop) < best[0] + len(best[2])):
                best = (at, at + len(stop), stop)
        if best is not None:
            at, end, stop = best
            return _trim(out, end if s.include_stop_str_in_output else at), "stop", stop, None
    if len(out) >= limit:
        # The end of sequence would have been token limit + 1: never generated.
        return out, "length", None, None
    return out, "stop", None, eos_id


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

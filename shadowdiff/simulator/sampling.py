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

from shadowdiff.simulator import baseline_text, drift, graded, logprobs, thinking, tools
from shadowdiff.simulator.profiles import DriftKind, Profile
from shadowdiff.simulator.tools import ToolRequest
from shadowdiff.simulator.vocab import THINK_END, THINK_START, Token, Vocabulary, vocabulary


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
    thinking: bool = False              # the model thinks before answering (chat, reasoning model)
    tools: ToolRequest | None = None    # the tools a chat request offers

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
    """The greedy answer for a prompt, with the baseline it was derived from.

    The tokens are all the model writes: the thinking (``<think>…</think>``) if it
    thinks, then the final part, an answer in text or its tool calls; ``final`` is where
    that part starts. Parsing them into reasoning, content and tool calls is the
    server's business (``parsers``), as in vLLM.
    """

    base: tuple[Token, ...]
    tokens: tuple[Token, ...]
    kind: DriftKind | None      # the drift applied (None: the baseline's answer)
    planned: DriftKind | None   # the drift the profile planned for this prompt
    replica_flipped: bool
    final: int = 0
    text_final: bool = True     # the final part is text (not tool calls)


class Generator:
    """Answers prompts for one simulated deployment (profile and server seed)."""

    def __init__(self, profile: Profile, seed: int, vocab: Vocabulary, cache_size: int = 4096, *,
                 accuracy: float = graded.DEFAULT_ACCURACY) -> None:
        self.profile = profile
        self.seed = seed
        self.accuracy = accuracy    # the share of gradable questions answered right
        self.vocab = vocab
        # Keyed by a 64-bit hash, not the prompt: long-context prompts would pin memory.
        self._cache: OrderedDict[tuple[object, ...], Planned] = OrderedDict()
        self._cache_size = cache_size

    def plan(self, prompt: str, json_output: bool = False, *, think: bool = False,
             tool_request: ToolRequest | None = None) -> Planned:
        """The greedy answer to ``prompt`` (cached: the same prompt repeats in a replay).

        The rendered prompt holds the offered tools, so the key covers them; how the
        request lets the model use them does not show in it and is part of the cache key.
        """
        key = baseline_text.prompt_key(prompt)
        request = tool_request
        cache_key = (key, json_output, think, None if request is None else
                     (request.choice, request.named, request.parallel, request.answered))
        hit = self._cache.get(cache_key)
        if hit is not None:
            self._cache.move_to_end(cache_key)
            return hit
        planned = self._plan(key, prompt, json_output, think, request)
        self._cache[cache_key] = planned
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return planned

    def _plan(self, key: int, prompt: str, json_output: bool, think: bool,
              request: ToolRequest | None) -> Planned:
        profile, encode = self.profile, self.vocab.encode
        subject = baseline_text.subject(prompt)
        calls = tools.decide(request, subject, key)
        replica_flipped = False
        answered = None if calls is not None or json_output else graded.answer(
            profile, self.seed, self.accuracy, key, prompt)
        if answered is not None:
            base_final, final = encode(answered.base), encode(answered.text)
            kind, planned, replica_flipped = answered.kind, answered.planned, answered.replica_flipped
        elif calls is None:
            base_final = encode(baseline_text.generate(prompt, json_output=json_output).text)
            drifted = drift.apply_profile(profile, key, prompt, base_final)
            final = base_final if drifted.kind is None else encode(drifted.text)
            flipped = drift.replica_flip(key, self.seed, profile.replica_rate, prompt, final)
            if flipped is not None:
                final = encode(flipped)
            kind, planned, replica_flipped = drifted.kind, drifted.planned, flipped is not None
        else:
            assert request is not None
            base_final = final = encode(tools.raw_calls(calls))
            kind, planned = None, drift.planned_kind(profile, key)
            rng = drift.detail_rng(profile, key)
            changed = (tools.change_argument(calls, request.tools, rng) if planned is DriftKind.TOOL_ARGUMENT
                       else tools.change_tool(calls, request, subject, key, rng) if planned is DriftKind.TOOL_NAME
                       else None)
            if changed is not None:
                final, kind = encode(tools.raw_calls(changed)), planned
        base_head = head = []
        if think:
            thought = thinking.write(prompt, calls_tool=calls is not None)
            base_head = head = _thinking(encode(thought))
            if planned is DriftKind.REASONING_NUMBER:
                changed_thought = drift.reasoning_number(profile, key, prompt, encode(thought))
                if changed_thought is not None and changed_thought != thought:
                    head, kind = _thinking(encode(changed_thought)), planned
        return Planned(tuple(base_head + base_final), tuple(head + final), kind, planned, replica_flipped,
                       final=len(head), text_final=calls is None)

    def generate(self, s: Sampling) -> list[Choice]:
        plan = self.plan(s.prompt, s.json_output, think=s.thinking, tool_request=s.tools)
        key = baseline_text.prompt_key(s.prompt)
        choices = []
        for index in range(s.n):
            tokens = list(plan.tokens)
            if not s.greedy and plan.text_final:
                # vLLM seeds the n choices of a seeded request with seed, seed + 1, ...
                # (v1/engine/parallel_sampling.py); thinking and tool calls stay greedy.
                rng = random.Random(s.seed + index if s.seed is not None else None)
                head, answer = tokens[: plan.final], tokens[plan.final:]
                tokens = head + self.vocab.encode(drift.sample(key, answer, rng, s.temperature, s.prompt))
            choices.append(self._finish(index, key, tokens, plan, s))
        return choices

    def _finish(self, index: int, key: int, tokens: list[Token], plan: Planned, s: Sampling) -> Choice:
        limit = max(s.max_tokens, 0)
        wanted = limit if s.ignore_eos else s.min_tokens
        filler = baseline_text.continuation(key)
        while len(tokens) < wanted:
            tokens.extend(self.vocab.encode(next(filler)))
        if s.ignore_eos:
            tokens = tokens[:limit]
        out, finish, reason, hidden = _apply_stops(tokens, limit, s, self.vocab.eos_id)
        positions = None
        if s.logprobs is not None:
            # Logprobs name the tokens as generated, even the one a stop string cut, and
            # the end of sequence or stop token too (vLLM gives every sampled token one,
            # decoded on its own: "<|im_end|>"), one for each of completion_tokens.
            generated = tokens[: len(out)]
            if hidden is not None:
                generated.append(Token(hidden, self.vocab.decode([hidden], skip_special=False)))
            departure = divergence(plan, generated)
            positions = tuple(
                logprobs.position(key, i, t.text, s.logprobs, self.vocab, departure)
                for i, t in enumerate(generated)
            )
        return Choice(index, tuple(out), finish, reason, hidden, positions)


def _thinking(thought: list[Token]) -> list[Token]:
    """``<think>\n…\n</think>\n\n`` around the thought, as Qwen3 writes it."""
    vocab = vocabulary()
    mark = vocab.encode
    return [*mark(THINK_START + "\n"), *thought, *mark("\n" + THINK_END + "\n\n")]


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


def divergence(plan: Planned, out: Sequence[Token]) -> logprobs.Divergence | None:
    """Where this answer first differs from the baseline's, for the logprobs there."""
    if plan.kind is None and not plan.replica_flipped:
        return None
    for i, (mine, theirs) in enumerate(zip(out, plan.base, strict=False)):
        if mine.text != theirs.text:
            confident = plan.kind is not None and plan.kind.confident
            return logprobs.Divergence(i, theirs.text, confident)
    return None

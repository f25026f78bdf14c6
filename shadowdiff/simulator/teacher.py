"""Teacher-forced scoring: the logprobs a server gives another model's answer.

vLLM lets a client score a given answer under a model: ``POST /v1/completions`` with
the chat prompt's token ids followed by the answer's (``/tokenize`` with ``messages``,
then the answer's ``token_ids``), ``max_tokens: 1`` and ``prompt_logprobs: k``. Each
position then names the answer's token with its true rank among the server's own
predictions. ``Scorer`` gives the positions of an *answer* - the tokens after the
last assistant header of a rendered chat (``<|im_start|>assistant\\n``, and the empty
thinking block when thinking is off), up to its ``<|im_end|>`` - the meaning they have
on a real model; every other position keeps ``logprobs.prompt_position``.

The model. The server works out its own greedy answer to that chat prompt (the same
plan a chat request gets: same prompt key, profile and server seed), then walks the
scored answer:

* while the scored tokens are its own, each is its top-1, with the logprob its chat
  ``logprobs`` give that token at that output position (``logprobs.position``);
* at the first token that departs from its own answer, that token is its top-2: in
  the runner-up's place of the distribution its chat logprobs show there. That is a
  near-tie, a few points below the top-1, where the drift is benign (``wording``,
  ``formatting``, a replica's flip: drift begins those only at near-ties), and a large
  drop where it is confident (a number, a repetition, an added item, an early stop...);
  this holds both ways, an FP8 server scoring the baseline's answer and a baseline
  server scoring an FP8 one;
* after it, the server follows the given text: each token is its top-1, except at a
  near-tie disagreement (the token at rank 2, a small margin), at the profile's
  ``flip_rate`` per token. There are none before the first departure: had the server
  preferred another token there, its own greedy answer would have taken it.

So the token agreement (the share of answer tokens at rank 1) of a server scoring its
own answer is exactly 1, and that of an ``fp8`` server scoring the baseline's answer is
1 on every prompt whose answers are identical (about half of them: 55 % of the ``fp8``
drift rates change the text), and otherwise (L - 1 - flips) / L for an answer of L
tokens: one miss at the departure, then about 0.2 % of the tokens after it. Pooled
over the demo workload (replay/workloads/demo.jsonl, answers of about 90 tokens) that
is 99.4 %; for ``fp8-heavy`` (90 % of prompts changed, 1 % flips) 98.6 %. The listed logprobs at
a position never add up to more than 1 in probability, so a KL divergence between two
servers' distributions can be bounded from the top k listed.

What the prompt cannot show is taken as a plain chat request shows it: no
``response_format`` (a JSON answer scores from its first token as a departure), and
``tool_choice`` ``auto`` (``none`` without a tool parser) with parallel calls allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shadowdiff.simulator import logprobs, prompts
from shadowdiff.simulator.baseline_text import prompt_key
from shadowdiff.simulator.hashing import mix, unit
from shadowdiff.simulator.logprobs import Position
from shadowdiff.simulator.sampling import Generator, divergence
from shadowdiff.simulator.tools import Tool, ToolRequest
from shadowdiff.simulator.vocab import EOS_TOKEN, Token, Vocabulary

_SALT_FLIP = 61


@dataclass(frozen=True, slots=True)
class Answer:
    """Where a prompt's token ids hold an answer to a chat prompt."""

    start: int      # index of the answer's first token
    end: int        # one past its last (its <|im_end|> included)
    think: bool     # the generation prompt leaves thinking on


def find_answer(ids: Sequence[int], vocab: Vocabulary) -> Answer | None:
    """The answer after the last assistant header in ``ids``, or None without one.

    The header is matched as token ids: a chat prompt from ``/tokenize`` ends with the
    header's own tokens, and the answer's ids follow as the server generated them.
    """
    header = vocab.ids(prompts.GENERATION_PROMPT)
    no_thinking = vocab.ids(prompts.NO_THINKING)
    width = len(header)
    for at in range(len(ids) - width, -1, -1):
        if ids[at] != header[0] or list(ids[at: at + width]) != header:
            continue
        start = at + width
        think = list(ids[start: start + len(no_thinking)]) != no_thinking
        if not think:
            start += len(no_thinking)
        end = next((i + 1 for i in range(start, len(ids)) if ids[i] == vocab.eos_id), len(ids))
        return Answer(start, end, think)
    return None


class Scorer:
    """The prompt logprobs of one simulated deployment (its generator's profile and seed)."""

    def __init__(self, generator: Generator, *, thinks: bool, tool_parser: bool) -> None:
        self.generator = generator
        self.vocab = generator.vocab
        self.thinks = thinks            # the model thinks unless the prompt turned it off
        self.tool_parser = tool_parser  # tools are called only through a tool parser

    def positions(self, text: str, ids: Sequence[int], k: int) -> list[Position | None]:
        """The distribution at every position of the prompt ``text`` (token ids ``ids``),
        ``k`` listed each: None for the first token, which has none."""
        vocab = self.vocab
        texts = [vocab.decode([i], skip_special=False) for i in ids]
        key = prompt_key(text)
        answer = find_answer(ids, vocab)
        if answer is None or answer.start >= answer.end:
            return logprobs.prompt_positions(key, ids, texts, k, vocab)
        # the answer's positions are its own (``_answer``): the prompt's are worked out
        # around them, each from its own index as if the whole were prompt
        return [*logprobs.prompt_positions(key, ids[: answer.start], texts[: answer.start], k, vocab),
                *self._answer(ids, texts, answer, k),
                *(logprobs.prompt_position(key, i, ids[i], texts[i], k, vocab) for i in range(answer.end, len(ids)))]

    def _answer(self, ids: Sequence[int], texts: Sequence[str], answer: Answer, k: int) -> list[Position | None]:
        vocab = self.vocab
        chat = vocab.decode(list(ids[: answer.start]), skip_special=False)
        plan = self.generator.plan(chat, think=self.thinks and answer.think, tool_request=self._tools(chat))
        key = prompt_key(chat)
        # What this server's chat request generates: its answer, then the end of sequence.
        own = [*plan.tokens, Token(vocab.eos_id, EOS_TOKEN)]
        own_divergence = divergence(plan, own)
        profile, seed = self.generator.profile, self.generator.seed
        rate = profile.flip_rate(seed)
        out: list[Position | None] = []
        departed = False
        for i, token_id in enumerate(ids[answer.start: answer.end]):
            text = texts[answer.start + i]
            if not departed and i < len(own) and own[i].id == token_id:
                out.append(logprobs.position(key, i, own[i].text, k, vocab, own_divergence))
            elif not departed:
                departed = True
                mine = own[min(i, len(own) - 1)].text
                chosen = logprobs.position(key, i, mine, max(k + 1, 2), vocab, own_divergence)
                out.append(logprobs.as_runner_up(chosen, text, k))
            elif unit(key, i, token_id, seed, profile.drift_seed, _SALT_FLIP) < rate:
                preferred = logprobs.rival(mix(key, seed), i, text, vocab)
                tie = logprobs.Divergence(i, text, confident=False)
                chosen = logprobs.position(key, i, preferred, max(k + 1, 2), vocab, tie)
                out.append(logprobs.as_runner_up(chosen, text, k))
            else:
                out.append(logprobs.position(key, i, text, k, vocab))
        return out

    def _tools(self, chat: str) -> ToolRequest | None:
        """The tool request behind a rendered chat, as far as the prompt shows it."""
        offered = prompts.offered_tools(chat)
        if not offered:
            return None
        return ToolRequest(tuple(Tool.of(t) for t in offered), "auto" if self.tool_parser else "none",
                           answered=prompts.ends_with_tool_result(chat))

"""What a pair is made of: the answers each side gave, and their comparison.

These records travel from the replay client or the proxy's tap to the store and the
reports; they hold only what was observed, never anything needed to re-send it
(authorization headers are not part of them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shadowdiff.vocabulary import Side, Verdict

if TYPE_CHECKING:   # (a type only: reading a log or an answer needs no comparison, nor rapidfuzz)
    from shadowdiff.answers.compare import Comparison

# What a directional verdict stored without a side meant: before every directional
# verdict named one, only ``factual`` did; ``minor`` said the candidate was
# slightly worse and ``improvement`` that it was better (so against the baseline).
# Migration 0010 fills these in; reading them the same way keeps any row it missed right.
# A ``factual`` verdict always named its side; one without (written by hand) is read as
# against the candidate: a fact is wrong somewhere, and failing the run is the safe reading.
_SIDE_BEFORE_SIDES = {Verdict.MINOR: Side.CANDIDATE, Verdict.IMPROVEMENT: Side.BASELINE,
                      Verdict.FACTUAL: Side.CANDIDATE}


def side_against(verdict: Verdict, wrong_side: str | None) -> Side | None:
    """The side a stored verdict goes against (``reviews.wrong_side``: the wrong side of a
    ``factual``, the worse of a ``minor`` or an ``improvement``); None for one naming no side."""
    if not verdict.directional:
        return None
    return Side(wrong_side) if wrong_side else _SIDE_BEFORE_SIDES[verdict]


@dataclass(frozen=True)
class Choice:
    """One choice of an answer: everything the model generated for it.

    ``text`` is the answer proper (``content``, or a completion's ``text``); ``reasoning``
    is a reasoning model's thinking (vLLM's ``reasoning``, ``reasoning_content`` on older
    servers); ``tool_calls`` are ``{"id", "type", "function": {"name", "arguments"}}``,
    arguments as the JSON string the server sent.
    """

    index: int
    text: str = ""
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: str | None = None


# Where an answer's output token count came from, and how exact each is.
TOKEN_SOURCES = {
    "usage": "the server's usage: exact",
    "logprobs": "the logprobs' token list: exact",
    "tokenizer": "the text tokenized again by the server: exact for the text, not for stop tokens",
    "stream": "the streamed pieces counted: a lower bound (vLLM sends one token a piece, but counts the end-of-turn "
              "or stop token it never sends: one short for an answer that stopped itself)",
}


@dataclass(frozen=True)
class Answer:
    """One side's answer to one request, with how it went on the wire.

    The first choice's parts are fields of their own (``text``, ``reasoning``...), as most
    requests ask for one choice; ``others`` holds the rest (``n`` > 1, or a completions
    request with a list of prompts), and ``choices`` all of them. Usage is the request's:
    the server counts every choice together.
    """

    side: Side
    model: str | None
    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    ttft: float | None = None           # seconds to the first generated token of any kind (streamed) or the body
    duration: float | None = None       # seconds for the whole answer
    status: int | None = None           # HTTP status; None when no response arrived
    error: str | None = None            # why there is no usable answer
    attempts: int = 1
    tokens: list[str] | None = None     # output tokens, when logprobs were requested
    margins: list[float | None] | None = None  # top-1 minus top-2 logprob per token
    tool_calls: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    refusal: str | None = None
    reasoning_tokens: int | None = None   # of completion_tokens, those spent thinking
    others: tuple[Choice, ...] = ()        # the choices after the first
    ttfat: float | None = None             # seconds to the first answer token (text, tool call, refusal): after
                                           # the thinking; None when every choice was cut off inside it
    ttlt: float | None = None              # seconds to the last generated token (streamed answers only)
    # where completion_tokens came from (``TOKEN_SOURCES``): the server's usage (exact), the
    # logprobs' tokens (exact), the streamed pieces (a lower bound: a server may send several
    # tokens in one piece, and vLLM, which sends one, never sends the end-of-turn or stop token
    # it counts), or the server's tokenizer
    token_source: str | None = None

    def __post_init__(self) -> None:
        # a count without a source is the server's (stored before 0011, or made by hand)
        if self.token_source is None and self.completion_tokens is not None:
            object.__setattr__(self, "token_source", "usage")

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def choices(self) -> list[Choice]:
        first = Choice(0, self.text, self.reasoning, self.refusal, self.tool_calls, self.finish_reason)
        return [first, *self.others]

    @property
    def capped(self) -> frozenset[int]:
        """The indexes of the choices that stopped at the token cap (finish reason ``length``)."""
        return frozenset(c.index for c in self.choices if c.finish_reason == "length")

    @property
    def inter_token_latency(self) -> float | None:
        """Mean seconds between output tokens after the first, per choice (the usage counts
        every choice's tokens, and the choices are decoded side by side): from the first
        token's arrival to the last's. None when that was not measured: a body (not
        streamed), one token, or every token in one read, which says nothing of decoding
        (such answers once made a serve store report 1,750,640 tokens/s)."""
        if not self.completion_tokens or self.ttft is None or self.ttlt is None:
            return None
        tokens = self.completion_tokens / len(self.choices)
        decode = self.ttlt - self.ttft
        return decode / (tokens - 1) if tokens > 1 and decode > 0 else None

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens per second of decoding, per choice: one over the inter-token latency."""
        latency = self.inter_token_latency
        return 1 / latency if latency else None


@dataclass(frozen=True)
class Pair:
    """A request, the answers it got, and the comparison of candidate with baseline."""

    key: str
    seq: int
    endpoint: str
    prompt: str
    request: dict[str, Any]
    comparison: Comparison
    answers: dict[Side, Answer] = field(default_factory=dict)
    category: str | None = None
    comparable: bool = True
    margin: float | None = None         # the baseline's top-1/top-2 margin at the first divergent token
    noise: Comparison | None = None     # replica compared with baseline
    signals: list[dict[str, Any]] | None = None   # triage: what differs, with reasons
    suggested: str | None = None        # triage's suggested verdict
    priority: int = 0                   # triage's review priority (higher first)
    score: dict[str, Any] | None = None        # the candidate's teacher-forced score of the baseline's answer
    noise_score: dict[str, Any] | None = None  # the replica's (its noise floor)
    grade: dict[str, Any] | None = None        # reference, grader and each side's correctness
    flip: str | None = None                    # correct_to_wrong or wrong_to_correct (baseline to candidate)


def prompt_text(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return content_text(message.get("content"))
        return content_text(messages[-1].get("content")) if messages and isinstance(messages[-1], dict) else ""
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
        return "\n".join(p for p in prompt if isinstance(p, str))
    return json.dumps(prompt)


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""

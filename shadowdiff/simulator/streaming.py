"""Server-sent event frames, byte for byte as vLLM 0.34 streams them.

Each frame is exactly ``data: <compact JSON>\\n\\n`` and a stream ends with
``data: [DONE]\\n\\n``. Chunks are serialized with ``exclude_unset``, so each kind
of chunk has its own field set (vLLM 0.34's, checked by tests/conformance/);
the builders below write those sets out in order. This module only builds bytes;
``app`` decides when to send them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shadowdiff.simulator.bodies import Context, dumps, usage

DONE = b"data: [DONE]\n\n"
_TOKEN_SUFFIX = b'},"logprobs":null,"finish_reason":null,"token_ids":null}],"kv_transfer_params":null}\n\n'
KEEP_ALIVE = b": keep-alive\n\n"


def frame(obj: Any) -> bytes:
    return b"data: " + dumps(obj).encode() + b"\n\n"


def error_frame(message: str, *, code: int = 500, kind: str = "InternalServerError",
                param: str | None = None, compact: bool = True) -> bytes:
    """The frame vLLM sends when a request fails after the 200 went out.

    0.34's chat server writes it with ``model_dump_json`` (compact); its completions
    server uses ``json.dumps`` with the defaults (spaces, non-ASCII escaped).
    """
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    text = dumps(body) if compact else json.dumps(body)
    return b"data: " + text.encode() + b"\n\n"


@dataclass(frozen=True)
class Delta:
    """One choice's piece of a stream: its text and what travels with it."""

    index: int
    text: str
    completion_tokens: int              # of this choice so far (continuous usage)
    prompt_tokens: int                  # of this choice's prompt (continuous usage)
    logprobs: dict[str, Any] | None = None
    token_ids: list[int] | None = None          # with return_token_ids
    prompt_token_ids: list[int] | None = None   # completions: on a choice's first chunk
    finish_reason: str | None = None
    stop_reason: str | int | None = None
    final: bool = False
    empty: bool = False                 # a choice that produced nothing: delta {}
    message: dict[str, Any] | None = None   # chat through a parser: the delta as it made it
    reasoning_tokens: int | None = None     # with a reasoning parser: of this choice so far


class ChatChunks:
    """Frames of one streamed chat completion."""

    object = "chat.completion.chunk"
    usage_details = True   # chat chunks carry "completion_tokens_details": null

    def __init__(self, ctx: Context, continuous_usage: bool, include_usage: bool, *,
                 reasoning: bool = False) -> None:
        self.ctx = ctx
        self.continuous_usage = continuous_usage
        self.include_usage = include_usage
        self.reasoning = reasoning   # a reasoning parser runs: usage counts reasoning tokens
        head = dumps(self._head())
        self._token_prefix = b"data: " + head[:-1].encode() + b',"choices":[{"index":'

    def _head(self) -> dict[str, Any]:
        return {"id": self.ctx.id, "object": self.object, "created": self.ctx.created,
                "model": self.ctx.model}

    def _usage(self, chunk: dict[str, Any], prompt_tokens: int, completion_tokens: int,
               reasoning_tokens: int | None = None) -> None:
        if self.continuous_usage:
            chunk["usage"] = usage(prompt_tokens, completion_tokens, details=self.usage_details,
                                   reasoning_tokens=reasoning_tokens)

    def _tail(self, chunk: dict[str, Any], final: bool) -> bytes:
        # The finish chunk names the fingerprint only when no usage chunk follows.
        if final and not self.include_usage:
            chunk["system_fingerprint"] = self.ctx.fingerprint
        chunk["kv_transfer_params"] = None
        return frame(chunk)

    def role(self, index: int, prompt_tokens: int, prompt_token_ids: list[int] | None) -> bytes:
        chunk = self._head()
        chunk["choices"] = [{"index": index, "delta": {"role": "assistant", "content": ""},
                             "logprobs": None, "finish_reason": None}]
        self._usage(chunk, prompt_tokens, 0, 0 if self.reasoning else None)
        chunk["prompt_token_ids"] = prompt_token_ids
        chunk["prompt_text"] = None
        return frame(chunk)

    def delta(self, d: Delta) -> bytes:
        if (not d.final and d.logprobs is None and d.token_ids is None and not self.continuous_usage
                and d.message is None):
            # The hot path: one frame per token. Same bytes as the dict below, built
            # from a cached prefix because a stream is mostly these frames.
            return b"".join((self._token_prefix, str(d.index).encode(), b',"delta":{"content":',
                             dumps(d.text).encode(), _TOKEN_SUFFIX))
        chunk = self._head()
        delta = d.message if d.message is not None else {} if d.empty else {"content": d.text}
        choice: dict[str, Any] = {"index": d.index, "delta": delta,
                                  "logprobs": d.logprobs, "finish_reason": d.finish_reason}
        if d.final:
            choice["stop_reason"] = d.stop_reason
        choice["token_ids"] = d.token_ids
        if d.final:
            choice["weight_versions"] = None
        chunk["choices"] = [choice]
        self._usage(chunk, d.prompt_tokens, d.completion_tokens, d.reasoning_tokens)
        return self._tail(chunk, d.final)

    def usage(self, prompt_tokens: int, completion_tokens: int, reasoning_tokens: int | None = None) -> bytes:
        chunk = self._head()
        chunk["choices"] = []
        chunk["usage"] = usage(prompt_tokens, completion_tokens, details=False, reasoning_tokens=reasoning_tokens)
        chunk["system_fingerprint"] = self.ctx.fingerprint
        return frame(chunk)


class CompletionChunks(ChatChunks):
    """Frames of one streamed text completion (no role chunk)."""

    object = "text_completion"
    usage_details = False

    def role(self, index: int, prompt_tokens: int, prompt_token_ids: list[int] | None) -> bytes:
        return b""

    def delta(self, d: Delta) -> bytes:
        chunk = self._head()
        chunk["choices"] = [{"index": d.index, "text": d.text, "logprobs": d.logprobs,
                             "finish_reason": d.finish_reason, "stop_reason": d.stop_reason,
                             "prompt_token_ids": d.prompt_token_ids, "token_ids": d.token_ids,
                             "weight_versions": None}]
        self._usage(chunk, d.prompt_tokens, d.completion_tokens)
        return self._tail(chunk, d.final)

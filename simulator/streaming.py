"""Server-sent event frames, byte for byte as vLLM 0.34 streams them.

Each frame is exactly ``data: <compact JSON>\\n\\n`` and a stream ends with
``data: [DONE]\\n\\n``. Chunks are serialized with ``exclude_unset``, so each kind
of chunk has its own field set (see ../shared/reference/vllm-openai.md, section 2);
the builders below write those sets out in order. This module only builds bytes;
``app`` decides when to send them.
"""

from __future__ import annotations

import json
from typing import Any

from simulator.responses import Context, dumps, usage

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


class ChatChunks:
    """Frames of one streamed chat completion."""

    object = "chat.completion.chunk"

    usage_details = True   # chat chunks carry "completion_tokens_details": null

    def __init__(self, ctx: Context, prompt_tokens: int, continuous_usage: bool,
                 include_usage: bool) -> None:
        self.ctx = ctx
        self.prompt_tokens = prompt_tokens
        self.continuous_usage = continuous_usage
        self.include_usage = include_usage
        head = dumps(self._head())
        self._token_prefix = b"data: " + head[:-1].encode() + b',"choices":[{"index":'

    def _head(self) -> dict[str, Any]:
        return {"id": self.ctx.id, "object": self.object, "created": self.ctx.created,
                "model": self.ctx.model}

    def _with_usage(self, chunk: dict[str, Any], completion_tokens: int) -> dict[str, Any]:
        if self.continuous_usage:
            chunk["usage"] = usage(self.prompt_tokens, completion_tokens, details=self.usage_details)
        return chunk

    def _fingerprint(self, chunk: dict[str, Any]) -> None:
        # The finish chunk names the fingerprint only when no usage chunk follows.
        if not self.include_usage:
            chunk["system_fingerprint"] = self.ctx.fingerprint

    def role(self, index: int) -> bytes:
        chunk = self._head()
        chunk["choices"] = [{"index": index, "delta": {"role": "assistant", "content": ""},
                             "logprobs": None, "finish_reason": None}]
        self._with_usage(chunk, 0)
        chunk["prompt_token_ids"] = None
        chunk["prompt_text"] = None
        return frame(chunk)

    def token(self, index: int, text: str, logprobs: dict[str, Any] | None,
              completion_tokens: int) -> bytes:
        if logprobs is None and not self.continuous_usage:
            # The hot path: one frame per token. Same bytes as the dict below, built
            # from a cached prefix because a stream is mostly these frames.
            return b"".join((self._token_prefix, str(index).encode(), b',"delta":{"content":',
                             dumps(text).encode(), _TOKEN_SUFFIX))
        chunk = self._head()
        chunk["choices"] = [{"index": index, "delta": {"content": text}, "logprobs": logprobs,
                             "finish_reason": None, "token_ids": None}]
        self._with_usage(chunk, completion_tokens)
        chunk["kv_transfer_params"] = None
        return frame(chunk)

    def final(self, index: int, text: str, logprobs: dict[str, Any] | None, finish_reason: str,
              stop_reason: str | int | None, completion_tokens: int, empty: bool = False) -> bytes:
        chunk = self._head()
        chunk["choices"] = [{"index": index, "delta": {} if empty else {"content": text},
                             "logprobs": logprobs, "finish_reason": finish_reason,
                             "stop_reason": stop_reason, "token_ids": None, "weight_versions": None}]
        self._with_usage(chunk, completion_tokens)
        self._fingerprint(chunk)
        chunk["kv_transfer_params"] = None
        return frame(chunk)

    def usage(self, completion_tokens: int) -> bytes:
        chunk = self._head()
        chunk["choices"] = []
        chunk["usage"] = usage(self.prompt_tokens, completion_tokens, details=False)
        chunk["system_fingerprint"] = self.ctx.fingerprint
        return frame(chunk)


class CompletionChunks(ChatChunks):
    """Frames of one streamed text completion (no role chunk)."""

    object = "text_completion"
    usage_details = False

    def role(self, index: int) -> bytes:
        return b""

    def token(self, index: int, text: str, logprobs: dict[str, Any] | None,
              completion_tokens: int) -> bytes:
        return self._frame(index, text, logprobs, None, None, completion_tokens, finish=False)

    def final(self, index: int, text: str, logprobs: dict[str, Any] | None, finish_reason: str,
              stop_reason: str | int | None, completion_tokens: int, empty: bool = False) -> bytes:
        return self._frame(index, text, logprobs, finish_reason, stop_reason, completion_tokens,
                           finish=True)

    def _frame(self, index: int, text: str, logprobs: dict[str, Any] | None,
               finish_reason: str | None, stop_reason: str | int | None, completion_tokens: int,
               *, finish: bool) -> bytes:
        chunk = self._head()
        chunk["choices"] = [{"index": index, "text": text, "logprobs": logprobs,
                             "finish_reason": finish_reason, "stop_reason": stop_reason,
                             "prompt_token_ids": None, "token_ids": None, "weight_versions": None}]
        self._with_usage(chunk, completion_tokens)
        if finish:
            self._fingerprint(chunk)
        chunk["kv_transfer_params"] = None
        return frame(chunk)

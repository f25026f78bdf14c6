"""Non-streamed response bodies, field for field as vLLM 0.34 serializes them.

vLLM returns ``model_dump()`` of its pydantic response models: every field in
definition order, nulls included, and ``usage`` as prompt, total, completion. The
dicts below are written out in that order on purpose; tests compare the key
sequences with vLLM 0.34's (tests/simulator/test_wire.py, tests/conformance/).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shadowdiff.simulator import logprobs
from shadowdiff.simulator.sampling import Choice


def dumps(obj: Any) -> str:
    """JSON as pydantic and Starlette write it: compact, UTF-8 kept as is."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Context:
    """Per-response constants: id, creation time, model name, fingerprint."""

    id: str
    created: int
    model: str
    fingerprint: str

    @classmethod
    def new(cls, prefix: str, request_id: str | None, model: str, fingerprint: str) -> Context:
        # vLLM: the X-Request-Id header, else the body's request_id, else 16 hex digits.
        suffix = request_id if request_id is not None else secrets.token_hex(8)
        return cls(f"{prefix}-{suffix}", int(time.time()), model, fingerprint)


def usage(prompt_tokens: int, completion_tokens: int, *, details: bool = True,
          reasoning_tokens: int | None = None) -> dict[str, Any]:
    """``UsageInfo``; ``reasoning_tokens`` (with a reasoning parser) fills
    ``completion_tokens_details``, which is null otherwise (and left out with
    ``details=False``, where vLLM serializes without nulls)."""
    body: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }
    if reasoning_tokens is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    elif details:
        body["completion_tokens_details"] = None
    return body


@dataclass(frozen=True)
class ChatChoice:
    """A chat choice as the server returns it: the generated choice, and its message
    after the server's parsers (``parsers.parse``), if any run."""

    choice: Choice
    content: str | None
    reasoning: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()     # (id, name, arguments)
    finish_reason: str | None = None                      # None: the engine's
    hide_metadata: bool = False                           # include_reasoning false: no logprobs, ids

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content, "refusal": None,
                                   "audio": None, "function_call": None}
        if self.tool_calls:   # ChatMessage leaves an empty list out
            message["tool_calls"] = [{"id": call_id, "type": "function",
                                      "function": {"name": name, "arguments": arguments}}
                                     for call_id, name, arguments in self.tool_calls]
        message["reasoning"] = self.reasoning
        return message


def _choice_logprobs_chat(choice: Choice, top_n: int) -> dict[str, Any] | None:
    if choice.positions is None:
        return None
    return logprobs.chat_content(choice.positions, top_n)


def chat_body(ctx: Context, choices: Sequence[ChatChoice], prompt_tokens: int, *,
              top_logprobs: int, prompt_logprobs: list[Any] | None,
              token_ids: tuple[int, ...] | None, reasoning_tokens: int | None = None) -> dict[str, Any]:
    return {
        "id": ctx.id,
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [
            {
                "index": c.choice.index,
                "message": c.message(),
                "logprobs": None if c.hide_metadata else _choice_logprobs_chat(c.choice, top_logprobs),
                "finish_reason": c.finish_reason or c.choice.finish_reason,
                "stop_reason": c.choice.stop_reason,
                "token_ids": c.choice.token_ids if token_ids is not None and not c.hide_metadata else None,
                "routed_experts": None,
                "weight_versions": None,
            }
            for c in choices
        ],
        "service_tier": None,
        "system_fingerprint": ctx.fingerprint,
        "usage": usage(prompt_tokens, sum(c.choice.completion_tokens for c in choices),
                       reasoning_tokens=reasoning_tokens),
        "prompt_logprobs": prompt_logprobs,
        "prompt_token_ids": list(token_ids) if token_ids is not None else None,
        "prompt_text": None,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": None,
    }


@dataclass(frozen=True)
class CompletionChoice:
    """A completions choice: the generated choice plus what the prompt adds to it."""

    index: int
    choice: Choice
    echo: str                               # prompt text echoed before the output
    logprobs: dict[str, Any] | None
    prompt_logprobs: list[Any] | None
    prompt_token_ids: tuple[int, ...] | None
    echo_only: bool = False             # echo with max_tokens 0: the prompt alone

    @property
    def text(self) -> str:
        return self.echo if self.echo_only else self.echo + self.choice.text


def completion_body(ctx: Context, choices: Sequence[CompletionChoice], prompt_tokens: int) -> dict[str, Any]:
    return {
        "id": ctx.id,
        "object": "text_completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [
            {
                "index": c.index,
                "text": c.text,
                "logprobs": c.logprobs,
                "finish_reason": c.choice.finish_reason,
                "stop_reason": c.choice.stop_reason,
                "token_ids": c.choice.token_ids if c.prompt_token_ids is not None else None,
                "prompt_logprobs": c.prompt_logprobs,
                "prompt_token_ids": list(c.prompt_token_ids) if c.prompt_token_ids is not None else None,
                "routed_experts": None,
                "weight_versions": None,
            }
            for c in choices
        ],
        "service_tier": None,
        "system_fingerprint": ctx.fingerprint,
        "usage": usage(prompt_tokens, sum(c.choice.completion_tokens for c in choices)),
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": None,
    }


def error_body(message: str, kind: str, code: int, param: str | None = None) -> dict[str, Any]:
    """vLLM's error envelope (0.10.1 and later)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}

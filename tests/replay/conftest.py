"""What the replay tests share: three simulators (baseline, fp8 candidate, a replica) on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replay.runner import ReplaySettings
from shadowdiff.client import Upstream
from shadowdiff.records import Side
from simulator import profiles
from simulator.app import build_app
from simulator.settings import SimulatorSettings
from tests.servers import serve_app


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



"""``shadowdiff demo``: the whole check on one machine, with simulators for vLLM.

Starts a baseline, an fp8 candidate and a baseline replica (``shadowdiff simulate``
servers, test doubles whose text is synthetic) on free loopback ports, replays the
bundled 20-prompt workload against them, writes the reports, and stops what it
started.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from importlib import resources
from pathlib import Path

from replay.runner import ReplaySettings
from shadowdiff.background import serve_in_thread
from shadowdiff.client import Upstream
from shadowdiff.records import Side

BASELINE_MODEL = "Qwen/Qwen3-8B"
CANDIDATE_MODEL = "Qwen/Qwen3-8B-FP8"


def workload() -> Path:
    """The bundled workload: 20 prompts over the categories the original check used."""
    return Path(str(resources.files("replay") / "workloads" / "demo.jsonl"))


@contextlib.contextmanager
def simulators(latency: str = "realistic") -> Iterator[dict[Side, str]]:
    """A baseline, an fp8 candidate and a baseline replica, served on free loopback ports.

    The demo is the one part of replay that runs the simulator. It is imported here,
    when the demo starts, so that ``shadowdiff bench`` (which reads the bundled
    workload from this module) and every other production path never load it.
    """
    from simulator import profiles
    from simulator.app import build_app
    from simulator.cli import LATENCY_PRESETS
    from simulator.settings import SimulatorSettings

    model = LATENCY_PRESETS[latency]
    baseline = SimulatorSettings(served_model_names=(BASELINE_MODEL,), latency=model)
    fp8 = profiles.builtin("fp8")
    candidate = SimulatorSettings(served_model_names=(CANDIDATE_MODEL,), profile=fp8,
                                  latency=replace(model, speed=fp8.speed))
    replica = replace(baseline, seed=1)
    with contextlib.ExitStack() as stack:
        yield {side: stack.enter_context(serve_in_thread(build_app(settings)))
               for side, settings in ((Side.BASELINE, baseline), (Side.CANDIDATE, candidate),
                                      (Side.REPLICA, replica))}


def settings(urls: dict[Side, str], concurrency: int) -> ReplaySettings:
    return ReplaySettings(
        log=workload(),
        baseline=Upstream(Side.BASELINE, urls[Side.BASELINE], BASELINE_MODEL),
        candidate=Upstream(Side.CANDIDATE, urls[Side.CANDIDATE], CANDIDATE_MODEL),
        replica=Upstream(Side.REPLICA, urls[Side.REPLICA], BASELINE_MODEL),
        concurrency=concurrency,
    )

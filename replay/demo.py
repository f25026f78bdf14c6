"""``shadowdiff demo``: the whole check on one machine, with simulators for vLLM.

Starts a baseline, an fp8 candidate and a baseline replica (``shadowdiff simulate``
servers, test doubles whose text is synthetic) on free loopback ports, replays the
bundled 20-prompt workload against them, writes the reports, and stops what it
started. It is the one module of a mode that imports the simulator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

from shadowdiff.answers.client import Upstream
from shadowdiff.commands.background import serve_in_thread
from shadowdiff.replay import logs
from shadowdiff.replay.runner import ReplaySettings
from shadowdiff.simulator import profiles
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.scheduler import LATENCY_PRESETS
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.vocabulary import Side

BASELINE_MODEL = "Qwen/Qwen3-8B"
CANDIDATE_MODEL = "Qwen/Qwen3-8B-FP8"


@contextlib.contextmanager
def simulators(latency: str = "realistic") -> Iterator[dict[Side, str]]:
    """A baseline, an fp8 candidate and a baseline replica, served on free loopback ports."""
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
        log=logs.bundled_workload(),
        baseline=Upstream(Side.BASELINE, urls[Side.BASELINE], BASELINE_MODEL),
        candidate=Upstream(Side.CANDIDATE, urls[Side.CANDIDATE], CANDIDATE_MODEL),
        replica=Upstream(Side.REPLICA, urls[Side.REPLICA], BASELINE_MODEL),
        concurrency=concurrency,
    )

"""What a simulated server does to a request's answer, known without sending the request.

A test that checks shadowdiff finds every change a profile injects must know which
prompts the profile changed, and how. ``Expected(settings).drift(path, body)`` reads the
same plan a server with those settings answers from: the request is validated and its
prompt rendered exactly as the server does (tools, thinking and all), so what it returns
is what that server's answer shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from simulator.engine import Engine
from simulator.generation import Planned
from simulator.profiles import DriftKind
from simulator.serving import prepare
from simulator.settings import SimulatorSettings


class Expected:
    """The plans of a server with ``settings`` (its own engine: nothing is shared with a
    running server, whose fault draws and caches stay untouched)."""

    def __init__(self, settings: SimulatorSettings) -> None:
        self.engine = Engine(settings)

    def plans(self, path: str, body: Mapping[str, Any]) -> list[Planned]:
        """The greedy answer the server plans for each prompt of the request (chat: one;
        completions: one a prompt)."""
        job = prepare(self.engine, chat=path.endswith("/chat/completions"),
                      headers={"content-type": "application/json"}, body=json.dumps(body).encode())
        return [self.engine.generator.plan(p.sampling.prompt, p.sampling.json_output, think=p.sampling.thinking,
                                           tool_request=p.sampling.tools)
                for p in job.prompts]

    def drift(self, path: str, body: Mapping[str, Any]) -> list[DriftKind | None]:
        """For each prompt, the drift its greedy answer shows, or None where it is the
        baseline's answer (also where the profile planned a change the answer has no place
        for: a changed tool argument in an answer without a tool call)."""
        return [plan.kind for plan in self.plans(path, body)]

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

from shadowdiff.simulator import baseline_text, parsers
from shadowdiff.simulator.engine import Engine
from shadowdiff.simulator.intake import prepare
from shadowdiff.simulator.profiles import DriftKind
from shadowdiff.simulator.sampling import Planned
from shadowdiff.simulator.settings import SimulatorSettings


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
        """For each prompt, the drift its greedy answer shows, or None where the answer
        the request gets is the baseline's: the profile planned no change, or the change
        has no place in this answer (a changed tool argument in an answer without a tool
        call), or the request hides it (``max_tokens`` or a stop string cuts the answer
        before it, ``include_reasoning: false`` drops the reasoning it changed). The
        answer compared is what the server sends: its text, or with a reasoning or tool
        parser its reasoning, content and tool calls (names and arguments)."""
        job = prepare(self.engine, chat=path.endswith("/chat/completions"),
                      headers={"content-type": "application/json"}, body=json.dumps(body).encode())
        generator = self.engine.generator
        kinds: list[DriftKind | None] = []
        for prompt in job.prompts:
            s = prompt.sampling
            plan = generator.plan(s.prompt, s.json_output, think=s.thinking, tool_request=s.tools)
            if plan.kind is None:
                kinds.append(None)
                continue
            key = baseline_text.prompt_key(s.prompt)
            shown = [generator._finish(0, key, list(tokens), plan, s) for tokens in (plan.base, plan.tokens)]
            seen: list[object] = [c.text for c in shown]
            if job.parsed:
                parsed = [parsers.parse(job.parsers, job.asked, c.text, c.token_ids) for c in shown]
                seen = [(p.reasoning, p.content, p.tool_calls) for p in parsed]
            kinds.append(plan.kind if seen[0] != seen[1] else None)
        return kinds

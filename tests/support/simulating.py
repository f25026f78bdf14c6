"""What the simulator's tests share: requests, their answers' frames, prompts, tools, the fp8 profile's outcomes."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx

from shadowdiff.answers.compare import compare
from shadowdiff.simulator import profiles
from shadowdiff.simulator.prompts import render_chat
from shadowdiff.simulator.sampling import Generator, Sampling
from shadowdiff.simulator.vocab import vocabulary
from shadowdiff.vocabulary import Outcome
from tests.support.servers import HTTP

CHAT = [{"role": "user", "content": "Explain why the sky is blue."}]


def post(url: str, path: str, body: dict[str, Any], **kwargs: Any) -> httpx.Response:
    return HTTP.post(url + path, json=body, timeout=10, **kwargs)


def frames(raw: bytes) -> list[str]:
    """Split an SSE body into frames, checking the framing on the way."""
    text = raw.decode()
    assert text.endswith("\n\n")
    parts = text[:-2].split("\n\n")
    for part in parts:
        assert part.startswith("data: ") or part == ": keep-alive", part
        assert "\n" not in part
    return [p.removeprefix("data: ") for p in parts]


def chunks(raw: bytes) -> list[dict[str, Any]]:
    found = frames(raw)
    assert found[-1] == "[DONE]"
    return [json.loads(f) for f in found[:-1]]


PROMPTS = [f"Question {i}: explain {topic} for a newcomer."
           for i, topic in enumerate(["rivers", "taxes", "compilers", "gardens", "bridges", "clouds"] * 10)]


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}, "alerts": {"type": "boolean"}},
        "required": ["city", "unit"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The local time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
TOOLS = [WEATHER, TIME]
FLAGS = {"enable_auto_tool_choice": True, "tool_call_parser": "hermes"}


def expected_outcomes(prompts: list[str]) -> Counter[str]:
    """What the fp8 profile's configuration implies for these prompts, computed from the
    profile and the generator directly (not from the servers)."""
    vocab = vocabulary()
    base, cand = Generator(profiles.builtin("baseline"), 0, vocab), Generator(profiles.builtin("fp8"), 0, vocab)
    counts: Counter[str] = Counter()
    for prompt in prompts:
        rendered = render_chat([{"role": "user", "content": prompt}])
        sampling = Sampling(prompt=rendered, prompt_ids=tuple(vocab.ids(rendered)), max_tokens=256)
        a, b = base.generate(sampling)[0].text, cand.generate(sampling)[0].text
        plan = cand.plan(rendered)
        if a == b:
            counts["identical"] += 1
        else:
            # formatting drift is blank lines only: equivalent, unless it added them inside a
            # fenced code block, where whitespace counts; every other kind changes words
            outcome = compare(a, b).outcome
            if plan.kind == profiles.DriftKind.FORMATTING:
                assert outcome is Outcome.EQUIVALENT or "```" in a
            else:
                assert outcome is not Outcome.EQUIVALENT
            counts["equivalent" if outcome is Outcome.EQUIVALENT else "changed"] += 1
    return counts

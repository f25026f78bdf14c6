"""Whole answers end to end against simulators of a Qwen3 deployment with its reasoning and
tool parsers (``--reasoning-parser qwen3 --enable-auto-tool-choice --tool-call-parser hermes``):

* ``shadowdiff replay`` of a baseline against an FP8 candidate finds every change the
  candidate's profile injected into the thinking or the tool calls (the simulator says
  which prompts it changed, and how: ``shadowdiff.simulator.expected``), and names it;
* a baseline against a second baseline finds every pair identical, reasoning and tool calls
  included: the new parts raise no false alarms;
* the official ``openai`` client, through ``shadowdiff serve``, reads the reasoning and the
  tool calls as the simulator sent them, streamed and not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from shadowdiff.simulator import profiles
from shadowdiff.simulator.expected import Expected
from shadowdiff.simulator.profiles import DriftKind
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import Store
from tests.support import cli
from tests.support.servers import shadowdiff_process

MODEL = "Qwen/Qwen3-8B"
QWEN3 = ("--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "hermes")
# The FP8 profile, with the drift of thinking and tool calls raised so that many prompts show it.
RAISED = {DriftKind.REASONING_NUMBER: 0.15, DriftKind.TOOL_ARGUMENT: 0.15, DriftKind.TOOL_NAME: 0.15}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search_flights", "description": "Flights between two cities on a date",
    "parameters": {"type": "object", "properties": {
        "origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string"},
        "passengers": {"type": "integer", "minimum": 1, "maximum": 6}},
        "required": ["origin", "destination", "date"]}}}
CITIES = ["Paris", "Oslo", "Lima", "Kyiv", "Rome", "Quito", "Perth", "Cairo", "Hanoi", "Dakar"]
# what each injected change must be found as (shadowdiff/triage/signals.py)
SIGNAL = {DriftKind.REASONING_NUMBER: "reasoning", DriftKind.TOOL_ARGUMENT: "structured",
          DriftKind.TOOL_NAME: "structured"}


def log_bodies() -> list[dict[str, Any]]:
    """Questions with tools and without (arithmetic)."""
    bodies = []
    for i, city in enumerate(CITIES * 9):
        if i % 3 == 0:
            bodies.append({"id": f"math-{i}", "messages": [
                {"role": "user", "content": f"What is {i + 12} * {i + 7}?"}]})
        elif i % 3 == 1:
            bodies.append({"id": f"weather-{i}", "tools": [WEATHER, SEARCH], "messages": [
                {"role": "user", "content": f"What is the weather in {city} on day {i}?"}]})
        else:
            bodies.append({"id": f"flight-{i}", "tools": [SEARCH, WEATHER], "messages": [
                {"role": "user", "content": f"Find me a flight from {city} to Lisbon, trip {i}."}]})
    return bodies


@pytest.fixture(scope="module")
def simulators() -> Iterator[dict[str, str]]:
    """A baseline, a second baseline (seed 0: it must agree in every part) and an FP8 candidate."""
    drift = [f"--drift={kind.value}={rate}" for kind, rate in RAISED.items()]
    with shadowdiff_process("simulate", "--served-model-name", MODEL, *QWEN3) as (_, baseline), \
            shadowdiff_process("simulate", "--served-model-name", MODEL, *QWEN3) as (_, replica), \
            shadowdiff_process("simulate", "--served-model-name", MODEL, *QWEN3, "--profile", "fp8",
                               *drift) as (_, candidate):
        yield {"baseline": baseline, "replica": replica, "candidate": candidate}


def replay(tmp_path: Path, baseline: str, candidate: str) -> dict[str, dict[str, Any]]:
    """``shadowdiff replay`` of the log; each pair by its key: outcome, answers, signal kinds."""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(b) + "\n" for b in log_bodies()))
    out = tmp_path / "out"
    done = cli.shadowdiff("replay", str(log), "--baseline", baseline,
                          "--candidate", candidate, "--out", str(out), "--baseline-model", MODEL,
                          "--candidate-model", MODEL)
    assert done.returncode in (0, 1, 2), done.stderr   # the gate's verdict, not a crash
    pairs = {row["key"]: row for row in map(json.loads, (out / "pairs.jsonl").read_text().splitlines())}
    store = Store.open(out)
    try:
        run = store.latest_run()
        assert run is not None
        for pair in store.pairs(run.id):
            pairs[pair["key"]]["kinds"] = {s["kind"] for s in pair["signals"] or ()}
    finally:
        store.close()
    assert len(pairs) == len(log_bodies())
    return pairs


def test_replay_finds_every_change_injected_in_thinking_and_tool_calls(simulators: dict[str, str],
                                                                        tmp_path: Path) -> None:
    pairs = replay(tmp_path, simulators["baseline"], simulators["candidate"])
    candidate = SimulatorSettings(served_model_names=(MODEL,), reasoning_parser="qwen3", enable_auto_tool_choice=True,
                                  tool_call_parser="hermes", profile=profiles.builtin("fp8").with_rates(RAISED))
    expected = Expected(candidate)
    found: dict[DriftKind, int] = {}
    for body in log_bodies():
        [kind] = expected.drift("/v1/chat/completions", {"model": MODEL, **body})
        if kind not in SIGNAL:
            continue
        pair = pairs[body["id"]]
        assert pair["outcome"] != "identical", (body["id"], kind, pair["answers"])
        assert SIGNAL[kind] in pair["kinds"], (body["id"], kind, pair["kinds"])
        base, cand = pair["answers"]["baseline"], pair["answers"]["candidate"]
        if kind is DriftKind.REASONING_NUMBER:   # the thinking changed; the answer the user sees did not
            assert base["reasoning"] != cand["reasoning"] and base["text"] == cand["text"]
            assert base["tool_calls"] == cand["tool_calls"] or [c["function"] for c in base["tool_calls"]] == \
                [c["function"] for c in cand["tool_calls"]]
        else:
            assert [c["function"] for c in base["tool_calls"]] != [c["function"] for c in cand["tool_calls"]]
        found[kind] = found.get(kind, 0) + 1
    assert set(found) == set(SIGNAL) and min(found.values()) >= 2 and sum(found.values()) >= 10, found


def test_two_baselines_agree_in_every_part(simulators: dict[str, str], tmp_path: Path) -> None:
    pairs = replay(tmp_path, simulators["baseline"], simulators["replica"])
    assert {p["outcome"] for p in pairs.values()} == {"identical"}
    answers = [a for p in pairs.values() for a in p["answers"].values()]
    # and the parts that could have raised false alarms were there
    assert sum(1 for a in answers if a["tool_calls"]) >= 10 and all(a["reasoning"] for a in answers)


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_client_reads_reasoning_and_tool_calls_through_the_proxy(
        simulators: dict[str, str], start_proxy: Callable[..., tuple[str, Any]], tmp_path: Path,
        stream: bool) -> None:
    url, _ = start_proxy(primary=simulators["baseline"], shadow=simulators["candidate"],
                         store=str(tmp_path / "store"))
    through = openai.OpenAI(base_url=url + "/v1", api_key="unused")
    direct = openai.OpenAI(base_url=simulators["baseline"] + "/v1", api_key="unused")
    weather = next(b for b in log_bodies() if b["id"].startswith("weather"))
    for body in (log_bodies()[0], weather):
        request = {"model": MODEL, "messages": body["messages"], "temperature": 0, "tools": body.get("tools")}
        if request["tools"] is None:
            del request["tools"]
        theirs, ours = read(direct, request, stream), read(through, request, stream)
        assert ours == theirs, body["id"]
        assert ours["reasoning"] and "*" in ours["reasoning"]
        if "tools" in request:
            assert ours["tool_calls"] and all(json.loads(c[2]) for c in ours["tool_calls"])


def read(client: openai.OpenAI, request: dict[str, Any], stream: bool) -> dict[str, Any]:
    """What the client makes of an answer: the reasoning (an extra field: getattr), the
    content and the tool calls (name and arguments, by index when streamed)."""
    if not stream:
        message = client.chat.completions.create(**request).choices[0].message
        calls = [(c.id.startswith("chatcmpl-tool-"), c.function.name, c.function.arguments)
                 for c in message.tool_calls or ()]
        return {"reasoning": getattr(message, "reasoning", None), "content": message.content, "tool_calls": calls}
    reasoning, content, calls = "", "", {}
    for chunk in client.chat.completions.create(**request, stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        reasoning += (delta.model_extra or {}).get("reasoning") or ""
        content += delta.content or ""
        for call in delta.tool_calls or ():
            entry = calls.setdefault(call.index, [False, "", ""])
            if call.id:
                entry[0] = call.id.startswith("chatcmpl-tool-")
            if call.function and call.function.name:
                entry[1] = call.function.name
            if call.function and call.function.arguments:
                entry[2] += call.function.arguments
    return {"reasoning": reasoning, "content": content, "tool_calls": [tuple(c) for _, c in sorted(calls.items())]}


def test_a_token_cap_inside_the_thinking_never_passes(simulators: dict[str, str], tmp_path: Path) -> None:
    """A Qwen3-like model at ``--max-tokens 12``: each answer is cut inside its thinking, the
    content empty on both sides. Nothing of an answer was compared: the pairs are "unanswered",
    not "identical", and ``replay --gate`` does not exit 0, for the baseline against itself too."""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(b) + "\n" for b in log_bodies()[:12]))
    for name in ("replica", "candidate"):
        out = tmp_path / name
        done = cli.shadowdiff("replay", str(log), "--baseline", simulators["baseline"], "--candidate",
                              simulators[name], "--out", str(out), "--max-tokens", "12", "--no-score", "--gate")
        assert done.returncode == 2, done.stdout + done.stderr
        counts = json.loads((out / "summary.json").read_text())["counts"]
        assert counts["identical"] == 0 and counts["unanswered"] >= 1, counts
        assert "unanswered (neither side reached an answer)" in done.stdout
        assert "hit the token cap on both sides" in done.stdout

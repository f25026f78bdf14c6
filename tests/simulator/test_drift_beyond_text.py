"""The profile's drift beyond the text: a number in the thinking, a tool argument, another tool;
configured as the other kinds are, and known to a test without asking the server."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.simulator import profiles
from shadowdiff.simulator.expected import Expected
from shadowdiff.simulator.profiles import DriftKind
from shadowdiff.simulator.settings import SimulatorSettings
from tests.support.fixtures import MODEL
from tests.support.simulating import FLAGS, TOOLS, post

CHAT = "/v1/chat/completions"
SERVER = {"served_model_names": (MODEL,), "reasoning_parser": "qwen3", **FLAGS}
QUESTIONS = [f"Question {i}: what is the weather in {city}, and what is {i} * 7?"
             for i, city in enumerate(["Paris", "Oslo", "Lima", "Kyiv", "Rome"] * 24)]
BEYOND = {DriftKind.REASONING_NUMBER: 0.3, DriftKind.TOOL_ARGUMENT: 0.3, DriftKind.TOOL_NAME: 0.3}
NUMBER = re.compile(r"\d+")


def ask(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}], "temperature": 0, "tools": TOOLS,
            **extra}


def message(url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = post(url, CHAT, body)
    assert r.status_code == 200, r.text
    return dict(r.json()["choices"][0]["message"])


def test_the_fp8_profile_drifts_thinking_and_tool_calls_a_little() -> None:
    fp8 = profiles.builtin("fp8")
    for kind in (DriftKind.REASONING_NUMBER, DriftKind.TOOL_ARGUMENT, DriftKind.TOOL_NAME):
        assert 0 < fp8.rate(kind) <= 0.05 and not kind.in_text and kind.confident
    assert profiles.builtin("baseline").rates == {}
    assert profiles.parse_drift("tool_argument=0.2") == (DriftKind.TOOL_ARGUMENT, 0.2)


def test_a_profile_file_sets_the_new_rates_and_the_quantization(tmp_path: Path) -> None:
    path = tmp_path / "int4.toml"
    path.write_text('base = "fp8"\nquantization = "awq"\n[rates]\nreasoning_number = 0.1\ntool_name = 0.05\n')
    profile = profiles.load(path)
    assert profile.rate(DriftKind.REASONING_NUMBER) == 0.1 and profile.rate(DriftKind.TOOL_NAME) == 0.05
    assert profile.rate(DriftKind.TOOL_ARGUMENT) == 0.03 and profile.quantization == "awq"


def test_each_drift_shows_where_it_should_and_the_test_knows_which(start_simulator: Any) -> None:
    """Every answer the plan says drifted differs from the baseline's in that part alone,
    and every other answer is the baseline's, byte for byte."""
    drift = profiles.builtin("baseline").with_rates(BEYOND)
    baseline = start_simulator(**SERVER)
    candidate = start_simulator(**SERVER, profile=drift)
    expected = Expected(SimulatorSettings(**SERVER, profile=drift))
    seen: Counter[DriftKind | None] = Counter()
    for question in QUESTIONS:
        body = ask(question)
        [kind] = expected.drift(CHAT, body)
        seen[kind] += 1
        base, cand = message(baseline, body), message(candidate, body)
        base_calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in base.get("tool_calls", ())]
        cand_calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in cand.get("tool_calls", ())]
        if kind is None:
            assert (base["reasoning"], base["content"], base_calls) == (cand["reasoning"], cand["content"], cand_calls)
        elif kind is DriftKind.REASONING_NUMBER:
            assert base["content"] == cand["content"] and base_calls == cand_calls
            assert NUMBER.sub("#", base["reasoning"]) == NUMBER.sub("#", cand["reasoning"]) != base["reasoning"]
            assert base["reasoning"] != cand["reasoning"]
        elif kind is DriftKind.TOOL_ARGUMENT:
            assert base["reasoning"] == cand["reasoning"]
            assert [n for n, _ in base_calls] == [n for n, _ in cand_calls]
            changed = [(a, b) for (_, a), (_, b) in zip(base_calls, cand_calls, strict=True) if a != b]
            assert len(changed) == 1 and len([k for k in changed[0][0] if changed[0][0][k] != changed[0][1][k]]) == 1
        else:
            assert kind is DriftKind.TOOL_NAME
            assert base["reasoning"] == cand["reasoning"] and base_calls[0][0] != cand_calls[0][0]
    assert all(seen[kind] >= 5 for kind in BEYOND), seen


def test_a_planned_drift_without_its_part_leaves_the_answer_alone() -> None:
    """``tool_argument`` planned for an answer in text, ``reasoning_number`` for a model that
    does not think: nothing to change, so the answer is the baseline's."""
    everything = profiles.builtin("baseline").with_rates({DriftKind.TOOL_ARGUMENT: 1.0})
    expected = Expected(SimulatorSettings(served_model_names=(MODEL,), profile=everything, **FLAGS))
    assert expected.drift(CHAT, ask("Tell me a story.", tools=None)) == [None]
    assert expected.plans(CHAT, ask("Tell me a story.", tools=None))[0].planned is DriftKind.TOOL_ARGUMENT
    thinking = profiles.builtin("baseline").with_rates({DriftKind.REASONING_NUMBER: 1.0})
    plain = Expected(SimulatorSettings(served_model_names=(MODEL,), profile=thinking))
    assert plain.drift(CHAT, ask("What is 17 * 23?", tools=None)) == [None]
    assert Expected(SimulatorSettings(served_model_names=(MODEL,), profile=thinking, reasoning_parser="qwen3")).drift(
        CHAT, ask("What is 17 * 23?", tools=None)) == [DriftKind.REASONING_NUMBER]


@pytest.mark.parametrize("kind", [DriftKind.REASONING_NUMBER, DriftKind.TOOL_ARGUMENT])
def test_the_logprobs_show_a_confident_change_where_the_answers_part(start_simulator: Any, kind: DriftKind) -> None:
    drift = profiles.builtin("baseline").with_rates({kind: 1.0})
    baseline = start_simulator(**SERVER)
    candidate = start_simulator(**SERVER, profile=drift)
    question = next(q for q in QUESTIONS if Expected(SimulatorSettings(**SERVER, profile=drift)).drift(
        CHAT, ask(q)) == [kind])
    body = ask(question, logprobs=True, top_logprobs=2)
    base = post(baseline, CHAT, body).json()["choices"][0]["logprobs"]["content"]
    cand = post(candidate, CHAT, body).json()["choices"][0]["logprobs"]["content"]
    at = next(i for i, (a, b) in enumerate(zip(base, cand, strict=False)) if a["token"] != b["token"])
    top = cand[at]["top_logprobs"]
    # the candidate's token first, by a wide margin, the baseline's second
    assert top[0]["token"] == cand[at]["token"] and top[1]["token"] == base[at]["token"]
    assert top[0]["logprob"] - top[1]["logprob"] > 0.5

"""Teacher-forced scoring over HTTP, the three steps shadowdiff takes against vLLM:
``/tokenize`` the chat, the answer's ``token_ids`` from a chat response, then
``/v1/completions`` over both with ``prompt_logprobs`` (shadowdiff/simulator/teacher.py)."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.simulator import profiles
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.profiles import DriftKind, Profile
from shadowdiff.simulator.prompts import render_chat
from shadowdiff.simulator.sampling import Generator
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.vocab import vocabulary
from tests.support.fixtures import MODEL
from tests.support.servers import serve_app
from tests.support.simulating import chunks, post

ROOT = Path(__file__).resolve().parents[2]
DEMO = [json.loads(line)["messages"]
        for line in (ROOT / "replay" / "workloads" / "demo.jsonl").read_text().splitlines()]
SHORT = [[{"role": "user", "content": question}] for question in (
    "Hi.", "What is 2 + 2?", "Name a colour.", "Say something about owls.", "Why is the sea salty?",
    "Give me three tips for sleeping well.", "What is a prime number?", "Translate 'cat' to French.",
    "How far is the moon?", "Describe rust on iron.", "Is tea healthy?", "List two rivers in Europe.",
    "Explain compilers briefly.", "What do bees make?", "When was the printing press invented?",
    "Suggest a name for a dog.")]
PROMPTS = DEMO + SHORT
K = 5
# The margins the drift model gives at a departure (shadowdiff/simulator/logprobs.py ``position``): a
# near-tie puts the top-1 at p in [0.45, 0.48] and the runner-up 0.01-0.08 below it, at
# most log(0.45 / 0.37) = 0.196 nats apart; a confident change leaves the runner-up at
# most 0.6 * (1 - p) with p >= 0.70, at least log(0.70 / 0.18) = 1.36 nats below.
NEAR_TIE_MARGIN, CONFIDENT_MARGIN = 0.2, 1.3


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """A baseline, an fp8 and an fp8-heavy simulator, and a replica that flips often."""
    replica = profiles.Profile("baseline", replica_rate=0.5)
    started = {"baseline": profiles.builtin("baseline"), "fp8": profiles.builtin("fp8"),
               "fp8-heavy": profiles.builtin("fp8-heavy")}
    with contextlib.ExitStack() as stack:
        urls = {name: stack.enter_context(serve_app(build_app(SimulatorSettings(
            served_model_names=(MODEL,), profile=profile)))) for name, profile in started.items()}
        urls["replica"] = stack.enter_context(serve_app(build_app(SimulatorSettings(
            served_model_names=(MODEL,), profile=replica, seed=7))))
        yield urls


@dataclass(frozen=True)
class Mark:
    """One scored answer token: its rank, its logprob and the top-1's, and every entry."""

    rank: int
    logprob: float
    best: float
    entries: dict[str, dict[str, Any]]

    @property
    def margin(self) -> float:
        return self.best - self.logprob


def tokenize(url: str, messages: list[dict[str, Any]], **extra: Any) -> list[int]:
    r = post(url, "/tokenize", {"model": MODEL, "messages": messages, "add_generation_prompt": True, **extra})
    assert r.status_code == 200, r.text
    return list(r.json()["tokens"])


def answer(url: str, messages: list[dict[str, Any]], **extra: Any) -> list[int]:
    """Step 2: the greedy answer's ids (the end of sequence included), checking on the way
    that step 1 gives the very prompt ids the chat request was answered from."""
    r = post(url, "/v1/chat/completions", {"model": MODEL, "messages": messages, "temperature": 0,
                                           "return_token_ids": True, **extra})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["prompt_token_ids"] == tokenize(url, messages, **_template_fields(extra))
    return list(body["choices"][0]["token_ids"])


def _template_fields(extra: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if k in ("tools", "chat_template_kwargs")}


def score(url: str, messages: list[dict[str, Any]], ids: Sequence[int], k: int = K, **extra: Any) -> list[Mark]:
    """Step 3: ``ids`` scored after the chat prompt under the server at ``url``."""
    prompt = tokenize(url, messages, **_template_fields(extra))
    r = post(url, "/v1/completions", {"model": MODEL, "prompt": prompt + list(ids), "max_tokens": 1,
                                      "temperature": 0, "prompt_logprobs": k})
    assert r.status_code == 200, r.text
    positions = r.json()["choices"][0]["prompt_logprobs"]
    assert len(positions) == len(prompt) + len(ids) and positions[0] is None
    marks = []
    for token_id, entries in zip(ids, positions[len(prompt):], strict=True):
        own = entries[str(token_id)]
        [best] = [e["logprob"] for e in entries.values() if e["rank"] == 1] or [own["logprob"]]
        marks.append(Mark(own["rank"], own["logprob"], best, entries))
    return marks


def departure(scored: Sequence[int], own: Sequence[int]) -> int | None:
    """Where the scored answer first leaves the server's own (None: it never does)."""
    return next((i for i, (a, b) in enumerate(zip(scored, own, strict=False)) if a != b),
                None if len(scored) <= len(own) else len(own))


def planned(profile: Profile, messages: list[dict[str, Any]]) -> DriftKind | None:
    """The drift the profile applied to this chat's answer, read off the simulator in-process."""
    return Generator(profile, 0, vocabulary()).plan(render_chat(messages)).kind


@dataclass
class Pooled:
    agree: int = 0
    scored: int = 0
    departures: int = 0
    tail: int = 0           # answer tokens after a departure
    later_misses: int = 0   # tokens after a departure not at rank 1

    @property
    def agreement(self) -> float:
        return self.agree / self.scored


def pooled(scorer: str, writer: str, servers: dict[str, str], prompts: list[Any]) -> Pooled:
    """Score ``writer``'s answers under ``scorer`` and check the model prompt by prompt:
    rank 1 up to the first departure from the scorer's own answer, rank 2 there."""
    out = Pooled()
    for messages in prompts:
        written, own = answer(servers[writer], messages), answer(servers[scorer], messages)
        marks = score(servers[scorer], messages, written)
        ranks = [m.rank for m in marks]
        at = departure(written, own)
        if at is None:
            assert ranks == [1] * len(ranks), messages
        else:
            assert ranks[:at] == [1] * at and ranks[at] == 2, (messages, at, ranks)
            out.departures += 1
            out.tail += len(ranks) - at - 1
            out.later_misses += sum(r != 1 for r in ranks[at + 1:])
        out.agree += ranks.count(1)
        out.scored += len(ranks)
    return out


def test_a_server_scoring_its_own_answer_agrees_on_every_token(servers: dict[str, str]) -> None:
    for name in ("baseline", "fp8", "fp8-heavy"):
        url = servers[name]
        for messages in PROMPTS:
            ids = answer(url, messages)
            assert all(m.rank == 1 for m in score(url, messages, ids)), (name, messages)


def test_scored_logprobs_are_the_chat_logprobs_of_the_same_tokens(servers: dict[str, str]) -> None:
    for name in ("baseline", "fp8"):
        url = servers[name]
        for messages in PROMPTS[:12]:
            r = post(url, "/v1/chat/completions", {"model": MODEL, "messages": messages, "temperature": 0,
                                                   "return_token_ids": True, "logprobs": True, "top_logprobs": K})
            choice = r.json()["choices"][0]
            chat = [e["logprob"] for e in choice["logprobs"]["content"]]
            assert [m.logprob for m in score(url, messages, choice["token_ids"])] == chat


@pytest.mark.parametrize("name", ["fp8", "fp8-heavy"])
def test_a_candidate_scoring_the_baseline_answer_agrees_as_its_profile_predicts(
        name: str, servers: dict[str, str]) -> None:
    profile = profiles.builtin(name)
    found = pooled(name, "baseline", servers, PROMPTS)
    # The prediction from the profile: a prompt's answer departs with probability p (the
    # rates of the kinds that change a plain chat's text), costing one token; every token
    # after a departure is missed at the profile's flip rate r.
    p = sum(profile.rate(kind) for kind in DriftKind if kind.in_text)
    r = profile.flip_rate(0)
    n = len(PROMPTS)
    expected = 1 - (n * p + r * found.tail) / found.scored
    # Both counts are binomial: 3.5 standard deviations of their sum, in tokens, is the
    # tolerance (a false alarm about 1 time in 2,000 if the simulator followed the rates;
    # a departure that cost more than one token, or flips before one, would be far out).
    spread = 3.5 * math.sqrt(n * p * (1 - p) + r * (1 - r) * found.tail) / found.scored
    print(f"\n{name} scoring the baseline: pooled agreement {found.agreement:.4f} "
          f"(expected {expected:.4f} +- {spread:.4f}; {found.departures}/{n} prompts depart, "
          f"{found.later_misses} flips in {found.tail} tokens after a departure)")
    assert abs(found.agreement - expected) <= spread
    assert 0 < found.departures < n


def test_the_baseline_scoring_a_candidate_answer_follows_it_after_the_departure(servers: dict[str, str]) -> None:
    for name in ("fp8", "fp8-heavy"):
        found = pooled("baseline", name, servers, PROMPTS)
        assert found.departures > 0
        # the baseline has no flips: one miss per departing answer, nothing else
        assert found.later_misses == 0
        assert found.agree == found.scored - found.departures


@pytest.mark.parametrize(("scorer", "writer", "drifted"), [("fp8", "baseline", "fp8"), ("baseline", "fp8", "fp8"),
                                                           ("fp8-heavy", "baseline", "fp8-heavy")])
def test_the_margin_at_the_departure_follows_the_planned_drift(
        scorer: str, writer: str, drifted: str, servers: dict[str, str]) -> None:
    profile = profiles.builtin(drifted)
    seen = {True: 0, False: 0}
    for messages in PROMPTS:
        written, own = answer(servers[writer], messages), answer(servers[scorer], messages)
        at = departure(written, own)
        if at is None:
            continue
        kind = planned(profile, messages)
        assert kind is not None
        mark = score(servers[scorer], messages, written)[at]
        seen[kind.confident] += 1
        if kind.confident:
            assert mark.margin > CONFIDENT_MARGIN, (kind, mark)
        else:
            assert 0 < mark.margin < NEAR_TIE_MARGIN, (kind, mark)
    assert seen[True] >= 2 and seen[False] >= 2


def test_a_replica_departs_at_a_near_tie(servers: dict[str, str]) -> None:
    departed = 0
    for messages in PROMPTS:
        written, own = answer(servers["baseline"], messages), answer(servers["replica"], messages)
        at = departure(written, own)
        marks = score(servers["replica"], messages, written)
        if at is None:
            assert all(m.rank == 1 for m in marks)
            continue
        departed += 1
        assert marks[at].rank == 2 and marks[at].margin < NEAR_TIE_MARGIN
    assert departed >= 3


def test_listed_probabilities_are_proper_and_ranked(servers: dict[str, str]) -> None:
    messages = DEMO[0]
    written = answer(servers["baseline"], messages)
    for mark in score(servers["fp8-heavy"], messages, written):
        assert sum(math.exp(e["logprob"]) for e in mark.entries.values()) <= 1 + 1e-9
        # the scored token first, then the top K, the scored token among them only once
        assert next(iter(mark.entries.values()))["rank"] == mark.rank
        ranked = sorted(mark.entries.values(), key=lambda e: e["rank"])
        assert [e["rank"] for e in ranked] == sorted({*range(1, K + 1), mark.rank})
        assert [e["logprob"] for e in ranked] == sorted((e["logprob"] for e in ranked), reverse=True)


def test_only_the_answer_depends_on_the_profile(servers: dict[str, str]) -> None:
    """The prompt's positions keep their profile-free distribution, and so does a prompt
    without an assistant header."""
    messages = DEMO[1]
    prompt = tokenize(servers["baseline"], messages)
    ids = prompt + answer(servers["baseline"], messages)
    body = {"model": MODEL, "prompt": ids, "max_tokens": 1, "temperature": 0, "prompt_logprobs": K}
    base, fp8 = (post(servers[n], "/v1/completions", body).json()["choices"][0]["prompt_logprobs"]
                 for n in ("baseline", "fp8-heavy"))
    assert base[: len(prompt)] == fp8[: len(prompt)] and base != fp8
    plain = {**body, "prompt": "The quick brown fox jumps over the lazy dog. " * 5}
    assert (post(servers["baseline"], "/v1/completions", plain).json()["choices"][0]["prompt_logprobs"]
            == post(servers["fp8-heavy"], "/v1/completions", plain).json()["choices"][0]["prompt_logprobs"])


def test_the_same_request_gives_the_same_bytes(servers: dict[str, str]) -> None:
    messages = DEMO[2]
    ids = tokenize(servers["fp8"], messages) + answer(servers["baseline"], messages)
    body = {"model": MODEL, "prompt": ids, "max_tokens": 1, "temperature": 0, "prompt_logprobs": K}
    first = post(servers["fp8"], "/v1/completions", body).json()
    again = post(servers["fp8"], "/v1/completions", body).json()
    assert first["choices"] == again["choices"]


def test_scoring_requests_are_checked_as_vllm_checks_them(servers: dict[str, str]) -> None:
    url = servers["fp8"]
    ids = tokenize(url, DEMO[0]) + answer(servers["baseline"], DEMO[0])
    body = {"model": MODEL, "prompt": ids, "max_tokens": 1, "temperature": 0}
    streamed = post(url, "/v1/completions", {**body, "prompt_logprobs": 2, "stream": True})
    assert streamed.status_code == 400
    assert streamed.json()["error"]["message"] == (
        "`prompt_logprobs` are not available when `stream=True`. (parameter=prompt_logprobs)")
    over = post(url, "/v1/completions", {**body, "prompt_logprobs": 21})
    assert over.status_code == 400
    assert over.json()["error"]["message"] == ("Requested prompt logprobs of 21, which is greater than max "
                                              "allowed: 20 (parameter=prompt_logprobs, value=21)")
    zero = post(url, "/v1/completions", {**body, "prompt_logprobs": 0}).json()["choices"][0]
    # prompt_logprobs 0: each position names its own token alone, with its rank
    assert all(len(p) == 1 for p in zero["prompt_logprobs"][1:])
    assert post(url, "/v1/completions", {**body, "prompt": [*ids, 10**9]}).status_code == 400


def test_tokenize_splits_off_special_tokens_first(servers: dict[str, str]) -> None:
    """As a Hugging Face tokenizer does: the end of a turn is one token even after
    punctuation, so the chat's ids hold each turn's <|im_end|> and the assistant header."""
    url = servers["baseline"]
    strs = post(url, "/tokenize", {"messages": [{"role": "user", "content": "Hello!"},
                                                {"role": "assistant", "content": "Hi."},
                                                {"role": "user", "content": "Why?"}],
                                   "return_token_strs": True}).json()["token_strs"]
    assert strs.count("<|im_end|>") == 3 and strs.count("<|im_start|>") == 4
    assert strs[-4:] == ["ass", "ist", "ant", "\n"]


# -- reasoning and tools: the answer's ids cover the thinking and the calls --------------------

@pytest.fixture(scope="module")
def qwen3() -> Iterator[dict[str, str]]:
    flags = {"reasoning_parser": "qwen3", "enable_auto_tool_choice": True, "tool_call_parser": "hermes"}
    with contextlib.ExitStack() as stack:
        yield {name: stack.enter_context(serve_app(build_app(SimulatorSettings(
            served_model_names=(MODEL,), profile=profiles.builtin(name), **flags))))
            for name in ("baseline", "fp8")}


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_token_ids_are_the_same_streamed_or_not(qwen3: dict[str, str]) -> None:
    url = qwen3["baseline"]
    messages = [{"role": "user", "content": "What is 17 * 23?"}]
    whole = answer(url, messages)
    thought = vocabulary().decode(whole, skip_special=False)
    assert thought.startswith("<think>\n") and "</think>" in thought and thought.endswith("<|im_end|>")
    found = chunks(post(url, "/v1/chat/completions", {"model": MODEL, "messages": messages, "temperature": 0,
                                                      "return_token_ids": True, "stream": True}).content)
    # one id a delta, as vLLM sends each step's new ids; the role chunk has none
    deltas = [c["choices"][0] for c in found if c["choices"] and "token_ids" in c["choices"][0]]
    assert all(len(d["token_ids"]) == 1 for d in deltas)
    assert [i for d in deltas for i in d["token_ids"]] == whole
    completion = {"model": MODEL, "prompt": "Hello there", "temperature": 0, "max_tokens": 30, "return_token_ids": True}
    plain = post(url, "/v1/completions", completion).json()["choices"][0]["token_ids"]
    streamed = chunks(post(url, "/v1/completions", {**completion, "stream": True}).content)
    assert [i for c in streamed for i in c["choices"][0]["token_ids"]] == plain


@pytest.mark.parametrize("extra", [{}, {"chat_template_kwargs": {"enable_thinking": False}},
                                   {"chat_template_kwargs": {"enable_thinking": None}}, {"tools": [WEATHER]}],
                         ids=["thinking", "not-thinking", "thinking-null", "tools"])
def test_thinking_and_tool_calls_score_like_text(extra: dict[str, Any], qwen3: dict[str, str]) -> None:
    departed = 0
    for question in ("What is 17 * 23?", "What is the weather in Oslo?", "Plan a trip to Lisbon.",
                     "Explain rivers.", "Compare two cities for a holiday.", "How warm is Madrid in May?"):
        messages = [{"role": "user", "content": question}]
        base, fp8 = answer(qwen3["baseline"], messages, **extra), answer(qwen3["fp8"], messages, **extra)
        assert all(m.rank == 1 for m in score(qwen3["baseline"], messages, base, **extra))
        marks = score(qwen3["fp8"], messages, base, **extra)
        at = departure(base, fp8)
        if at is None:
            assert all(m.rank == 1 for m in marks)
        else:
            departed += 1
            assert [m.rank for m in marks[:at + 1]] == [1] * at + [2]

"""Every request shadowdiff sends is one vLLM's request models accept.

The requests are caught where a server would see them: each simulator is wrapped in a
recorder, and shadowdiff runs as users run it against them: ``replay`` of every log
format (chat and completions, streamed and not, overrides kept or applied), ``bench``,
the LLM judge, and the proxy's shadow and replica copies of clients' requests. Each
recorded body is then validated by vLLM's ``ChatCompletionRequest`` or
``CompletionRequest``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai
import pytest

from shadowdiff.answers.client import Upstream
from shadowdiff.replay import bench, logs
from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.runner import Overrides, ReplaySettings
from shadowdiff.review.judge import JudgeSettings, judge_run
from shadowdiff.simulator import profiles
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support.conformance.fixtures import Oracle
from tests.support.fixtures import MODEL
from tests.support.servers import Recorder, serve_app

ROOT = Path(__file__).resolve().parents[2]
CANDIDATE = "Qwen/Qwen3-8B-FP8"


@pytest.fixture(scope="module")
def sides() -> Iterator[dict[Side, tuple[str, Recorder]]]:
    settings = {Side.BASELINE: SimulatorSettings(served_model_names=(MODEL,)),
                Side.CANDIDATE: SimulatorSettings(served_model_names=(CANDIDATE,),
                                                  profile=profiles.builtin("fp8-heavy")),
                Side.REPLICA: SimulatorSettings(served_model_names=(MODEL,), seed=1)}
    recorders = {side: Recorder(build_app(s)) for side, s in settings.items()}
    with serve_app(recorders[Side.BASELINE]) as b, serve_app(recorders[Side.CANDIDATE]) as c, \
            serve_app(recorders[Side.REPLICA]) as r:
        yield {Side.BASELINE: (b, recorders[Side.BASELINE]), Side.CANDIDATE: (c, recorders[Side.CANDIDATE]),
               Side.REPLICA: (r, recorders[Side.REPLICA])}


def sent(sides: dict[Side, tuple[str, Recorder]], action: Callable[[], object]) -> list[tuple[str, dict[str, Any]]]:
    """The requests every side received while ``action`` ran."""
    for _, recorder in sides.values():
        recorder.seen.clear()
    action()
    return [request for _, recorder in sides.values() for request in recorder.seen]


def assert_valid(oracle: Oracle, requests: list[tuple[str, dict[str, Any]]]) -> None:
    assert requests, "nothing was sent"
    refused = [(path, body, checked["error"]) for path, body in requests
               if not (checked := oracle("validate", path=path, body=body))["valid"]]
    assert refused == [], f"vLLM {oracle.version} refuses {len(refused)} of {len(requests)}: {refused[:3]}"


def logs_of_every_format(directory: Path) -> list[tuple[Path, str]]:
    """(log, endpoint for plain prompts): one log in each format replay reads."""
    prompts = ["What is 17 * 23?", "Name the capital of Australia.", "Translate 'good morning' into French."]
    text = directory / "prompts.txt"
    text.write_text("\n".join(prompts) + "\n")
    array = directory / "prompts.json"
    array.write_text(json.dumps(prompts))
    batch = directory / "batch.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in [
        {"custom_id": "c1", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": MODEL, "messages": [{"role": "system", "content": "Be brief."},
                                               {"role": "user", "content": prompts[0]}],
                  "max_completion_tokens": 50, "top_p": 0.9}},
        {"custom_id": "c2", "method": "POST", "url": "/v1/completions",
         "body": {"model": MODEL, "prompt": prompts[1], "max_tokens": 20, "stop": ["\n"]}},
    ]) + "\n")
    bodies = logs.bundled_workload()
    # MT-Bench's own file, one question of each category with and without a reference
    # answer: its 80 questions ask nothing of the request's shape that these do not
    questions = directory / "mt_bench_questions.jsonl"
    kinds: dict[tuple[str, bool], str] = {}
    for line in (ROOT / "examples" / "mt_bench_questions.jsonl").read_text().splitlines():
        record = json.loads(line)
        kinds.setdefault((record["category"], bool(record.get("reference"))), line)
    questions.write_text("\n".join(kinds.values()) + "\n")
    return [(text, logs.CHAT), (array, logs.COMPLETIONS), (batch, logs.CHAT), (bodies, logs.CHAT),
            (questions, logs.CHAT)]


def replay_settings(sides: dict[Side, tuple[str, Recorder]], log: Path, **options: Any) -> ReplaySettings:
    return ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, sides[Side.BASELINE][0], MODEL),
                          candidate=Upstream(Side.CANDIDATE, sides[Side.CANDIDATE][0], CANDIDATE),
                          replica=Upstream(Side.REPLICA, sides[Side.REPLICA][0], MODEL), **options)


@pytest.mark.parametrize("overrides", [Overrides(), Overrides(stream=False, logprobs=0),
                                       Overrides(temperature=None, max_tokens=None, logprobs=5)],
                         ids=["defaults", "not-streamed", "kept"])
def test_replay_sends_what_vllm_accepts(oracle: Oracle, sides: dict[Side, tuple[str, Recorder]], tmp_path: Path,
                                        overrides: Overrides) -> None:
    for log, endpoint in logs_of_every_format(tmp_path):
        settings = replay_settings(sides, log, endpoint=endpoint, overrides=overrides)
        out = tmp_path / f"out-{log.stem}"
        assert_valid(oracle, sent(sides, lambda s=settings, o=out: run_replay(s, o, None, resume=False)))


def test_bench_sends_what_vllm_accepts(oracle: Oracle, sides: dict[Side, tuple[str, Recorder]]) -> None:
    settings = replace(replay_settings(sides, logs.bundled_workload()), replica=None,
                       overrides=Overrides(temperature=0.0, max_tokens=32, stream=True, logprobs=0))
    assert_valid(oracle, sent(sides, lambda: bench.run_bench(settings, logs.LogFormat.BODIES, [2], 4)))


def test_the_judge_sends_what_vllm_accepts(oracle: Oracle, sides: dict[Side, tuple[str, Recorder]],
                                           tmp_path: Path) -> None:
    run_replay(replay_settings(sides, logs.bundled_workload()), tmp_path, None, resume=False)
    store = Store.open(tmp_path)
    try:
        run = store.latest_run()
        assert run is not None
        judge = JudgeSettings(sides[Side.BASELINE][0], MODEL)
        requests = sent(sides, lambda: asyncio.run(judge_run(store, run.id, judge)))
    finally:
        store.close()
    assert_valid(oracle, requests)


def test_the_proxy_mirrors_what_vllm_accepts(oracle: Oracle, sides: dict[Side, tuple[str, Recorder]],
                                             start_proxy: Callable[..., tuple[str, Any]]) -> None:
    url, _ = start_proxy(primary=sides[Side.BASELINE][0], shadow=sides[Side.CANDIDATE][0], shadow_model=CANDIDATE,
                         replica=sides[Side.REPLICA][0], replica_rate=1.0)
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused")

    def clients() -> None:
        messages: Any = [{"role": "user", "content": "What is 17 * 23?"}]
        client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=16)
        for chunk in client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=16,
                                                    stream=True, stream_options={"include_usage": True}):
            del chunk
        client.completions.create(model=MODEL, prompt="The capital of France is", temperature=0, max_tokens=8)

    for _, recorder in sides.values():
        recorder.seen.clear()
    clients()
    shadow, replica = sides[Side.CANDIDATE][1].seen, sides[Side.REPLICA][1].seen
    deadline = time.monotonic() + 10   # the copies arrive after the clients' answers
    while (len(shadow) < 3 or len(replica) < 3) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(shadow) == len(replica) == 3 and all(body["model"] == CANDIDATE for _, body in shadow)
    assert_valid(oracle, [*shadow, *replica])


def test_the_check_can_fail(oracle: Oracle) -> None:
    for path, body in [("/v1/chat/completions", {"messages": "not a list"}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}),
                       ("/v1/completions", {"prompt": "x", "stream_options": {"include_usage": True}}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "max_tokenz": 5})]:
        assert oracle("validate", path=path, body=body)["valid"] is False, body

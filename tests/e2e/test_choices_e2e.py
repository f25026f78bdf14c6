"""Several answers per request, end to end against simulated vLLM servers (whose bytes the
conformance tier checks against vLLM 0.34's own classes): a completions request with a
list of prompts, and ``n`` > 1. Every choice is kept and compared; a pair whose second
choice changed is never identical, and the client gets every choice through the proxy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from shadowdiff.answers.client import Upstream
from shadowdiff.replay import logs
from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.runner import Overrides, ReplaySettings
from shadowdiff.simulator import profiles
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side

Start = Callable[..., Any]
MODEL = "Qwen/Qwen3-8B"   # what start_simulator serves
TOPICS = ["rivers", "taxes", "bridges", "clouds", "volcanoes", "tides", "glass", "bees", "maps", "salt",
          "ink", "wheels", "bread", "ice", "ropes", "clocks", "lenses", "dyes", "kites", "tea"]


def two_prompt_bodies() -> list[dict[str, Any]]:
    return [{"prompt": [f"Tell me about {a}.", f"Tell me about {b}."], "max_tokens": 256, "temperature": 0}
            for a, b in zip(TOPICS, TOPICS[1:] + TOPICS[:1], strict=True)]


def half_drifting(start_simulator: Start) -> str:
    """A candidate whose answers drift for half the prompts, chosen per prompt: some
    two-prompt requests drift in their second prompt only."""
    return str(start_simulator(profile=profiles.Profile("half", {profiles.DriftKind.WORDING: 0.5})))


def check_every_choice(pairs: list[tuple[str, list[str], list[str]]]) -> None:
    """(outcome, baseline texts, candidate texts) per pair: all kept, a difference anywhere
    is a change, and a difference in the second choice alone happened."""
    only_second = 0
    for outcome, b, c in pairs:
        assert len(b) == len(c) == 2     # nothing dropped
        assert (outcome == "identical") == (b == c)
        only_second += b[0] == c[0] and b[1] != c[1]
    assert only_second >= 2   # the case the issue is about happened, and was caught


def replay_pairs(tmp_path: Path, base: str, cand: str, bodies: list[dict[str, Any]],
                 overrides: Overrides | None = None) -> list[dict[str, Any]]:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(b) + "\n" for b in bodies))
    settings = ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, base, MODEL),
                              candidate=Upstream(Side.CANDIDATE, cand, MODEL), fmt=logs.LogFormat.BODIES,
                              endpoint=logs.COMPLETIONS, overrides=overrides or Overrides())
    run_replay(settings, tmp_path / "out", None, resume=False)
    return [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]


def texts(answer: dict[str, Any]) -> list[str]:
    return [answer["text"]] + [c["text"] for c in answer["other_choices"] or ()]


def test_replay_compares_every_prompt_of_a_list(start_simulator: Start, tmp_path: Path) -> None:
    """Two prompts per request: the fp8 profile drifts one prompt and not the other, so
    some pairs differ only in their second choice; those are changes, named as such."""
    pairs = replay_pairs(tmp_path, start_simulator(), half_drifting(start_simulator), two_prompt_bodies())
    assert len(pairs) == len(TOPICS)
    check_every_choice([(p["outcome"], texts(p["answers"]["baseline"]), texts(p["answers"]["candidate"]))
                        for p in pairs])


def test_replay_keeps_n_when_it_keeps_the_temperature(start_simulator: Start, tmp_path: Path) -> None:
    """At a kept temperature with a seed, ``n=2`` is sent as logged and both choices are
    compared (at temperature 0 replay sends ``n: 1``: vLLM refuses greedy ``n`` > 1)."""
    bodies = [{"prompt": f"Tell me about {t}.", "n": 2, "seed": 7, "temperature": 1.0, "max_tokens": 32}
              for t in TOPICS[:5]]
    pairs = replay_pairs(tmp_path, start_simulator(), start_simulator(), bodies, Overrides(temperature=None))
    for pair in pairs:
        assert pair["comparable"] and pair["outcome"] == "identical"   # the same server twice, seeded
        b, c = pair["answers"]["baseline"], pair["answers"]["candidate"]
        assert len(texts(b)) == 2 and texts(b) == texts(c) and texts(b)[0] != texts(b)[1]


def stored_pairs(path: Path, count: int) -> list[Any]:
    """The proxy's stored pairs, once ``count`` are written (after the clients' answers)."""
    store = Store.open(path)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            run = store.latest_run("serve")
            if run is not None and len(pairs := list(store.pairs(run.id))) >= count:
                return pairs
            time.sleep(0.05)
        raise AssertionError(f"fewer than {count} pairs stored")
    finally:
        store.close()


def test_serve_compares_every_prompt_of_a_list(start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    base = start_simulator()
    url, _ = start_proxy(primary=base, shadow=half_drifting(start_simulator), store=str(tmp_path / "store"),
                         keep_rate=1.0)
    direct, proxied = (openai.OpenAI(base_url=u + "/v1", api_key="unused") for u in (base, url))
    for body in two_prompt_bodies():
        got = proxied.completions.create(model=MODEL, **body)
        assert [c.text for c in got.choices] == [c.text for c in direct.completions.create(model=MODEL, **body).choices]
    pairs = stored_pairs(tmp_path / "store", len(TOPICS))
    check_every_choice([(p["outcome"], [c.text for c in p.answers[Side.BASELINE].choices],
                         [c.text for c in p.answers[Side.CANDIDATE].choices]) for p in pairs])


def test_n_choices_through_the_proxy(start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    """``n=2`` at a seed: the client gets both choices, untouched; the pair stores both."""
    base, cand = start_simulator(), start_simulator()
    url, _ = start_proxy(primary=base, shadow=cand, store=str(tmp_path / "store"), keep_rate=1.0)
    direct = openai.OpenAI(base_url=base + "/v1", api_key="unused").completions.create(
        model=MODEL, prompt="Tell me about rivers.", n=2, max_tokens=16, seed=7, temperature=1.0)
    proxied = openai.OpenAI(base_url=url + "/v1", api_key="unused").completions.create(
        model=MODEL, prompt="Tell me about rivers.", n=2, max_tokens=16, seed=7, temperature=1.0)
    assert [c.text for c in proxied.choices] == [c.text for c in direct.choices]
    assert len(proxied.choices) == 2
    [pair] = stored_pairs(tmp_path / "store", 1)
    for answer in pair.answers.values():
        assert [c.text for c in answer.choices] == [c.text for c in direct.choices]
    assert pair["outcome"] == "identical"

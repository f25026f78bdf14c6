"""The teacher-forcing model in-process: where the answer is, and the flip rate after a
departure (over many more tokens than the HTTP tests score)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from shadowdiff.errors import ProfileError
from shadowdiff.simulator import profiles
from shadowdiff.simulator.engine import Engine
from shadowdiff.simulator.prompts import NO_THINKING, render_chat
from shadowdiff.simulator.sampling import Generator
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.simulator.teacher import find_answer
from shadowdiff.simulator.vocab import vocabulary

QUESTIONS = [f"Question {i}: explain {topic} to a newcomer."
             for i, topic in enumerate(["rivers", "taxes", "compilers", "gardens", "bridges", "owls"] * 25)]


def test_the_answer_follows_the_last_assistant_header_up_to_its_end() -> None:
    v = vocabulary()
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
               {"role": "user", "content": "Explain rivers."}]
    prompt = v.ids(render_chat(history))
    answer = [*v.ids("Rivers flow."), v.eos_id]
    found = find_answer([*prompt, *answer, *v.ids("\n<|im_start|>user\nMore")], v)
    assert found is not None and (found.start, found.end, found.think) == (len(prompt), len(prompt) + len(answer), True)
    quiet = v.ids(render_chat(history, thinking=False))
    found = find_answer(quiet + answer, v)
    assert found is not None and found.start == len(quiet) and not found.think
    assert len(quiet) == len(prompt) + len(v.ids(NO_THINKING))
    # without a generation prompt the last assistant turn is the answer; without one at all, none
    closed = v.ids(render_chat(history[:2], add_generation_prompt=False))
    found = find_answer(closed, v)
    assert found is not None
    assert v.decode(list(closed[found.start: found.end]), skip_special=False) == "Hello!<|im_end|>"
    assert find_answer(v.ids("The quick brown fox. <|im_start|>user\nHi"), v) is None


def test_after_a_departure_the_server_disagrees_at_its_flip_rate() -> None:
    rate = 0.05
    candidate = replace(profiles.builtin("fp8-heavy"), token_flip_rate=rate)
    scorer = Engine(SimulatorSettings(profile=candidate)).scorer
    baseline = Generator(profiles.builtin("baseline"), 0, vocabulary())
    v = vocabulary()
    flips = tail = 0
    for question in QUESTIONS:
        chat = render_chat([{"role": "user", "content": question}])
        prompt = v.ids(chat)
        written = [t.id for t in baseline.plan(chat).tokens] + [v.eos_id]
        positions = scorer.positions(chat, prompt + written, 2)[len(prompt):]
        ranks = [p.rank for p in positions if p is not None]
        missed = [i for i, r in enumerate(ranks) if r != 1]
        if not missed:
            continue
        at = missed[0]
        assert ranks[at] == 2
        for i in missed[1:]:
            p = positions[i]
            assert p is not None and p.rank == 2
            assert p.top[0][1] - p.logprob < 0.2   # a near-tie, as the departure of benign drift
        flips += len(missed) - 1
        tail += len(ranks) - at - 1
    # a binomial count: within 4 standard deviations of rate * tail
    assert tail > 2000
    assert abs(flips - rate * tail) <= 4 * math.sqrt(tail * rate * (1 - rate)), (flips, tail)


def test_flip_rates_per_profile_and_from_a_file(tmp_path: Path) -> None:
    assert profiles.builtin("baseline").flip_rate(0) == 0
    assert profiles.builtin("baseline").flip_rate(7) == profiles.builtin("baseline").replica_token_flip_rate > 0
    assert 0 < profiles.builtin("fp8").flip_rate(0) < profiles.builtin("fp8-heavy").flip_rate(0)
    path = tmp_path / "int4.toml"
    path.write_text('base = "fp8"\ntoken_flip_rate = 0.004\nreplica_token_flip_rate = 0.001\n')
    loaded = profiles.load(path)
    assert (loaded.token_flip_rate, loaded.flip_rate(3)) == (0.004, 0.005)
    path.write_text("token_flip_rate = 1.5\n")
    with pytest.raises(ProfileError, match=r"token_flip_rate must be within 0\.\.1"):
        profiles.load(path)



def test_token_ids_mean_the_same_in_every_process() -> None:
    """A baseline's answer ids are scored by another server process: the vocabulary may not
    depend on the process's hash seed (it did, through a frozenset of stopwords)."""
    script = ("import hashlib; from shadowdiff.simulator.vocab import vocabulary; v = vocabulary(); "
              "print(hashlib.sha256('\\0'.join(map(v.token_text, range(v.size))).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(digests) == 1, digests

"""Smaller vLLM 0.34 details: the end of sequence's logprobs, the prompt's true ranks in
``prompt_logprobs``, a fingerprint per quantization, and the choices of ``n`` and prompt lists."""

from __future__ import annotations

from typing import Any

from shadowdiff.simulator import profiles
from shadowdiff.simulator.settings import SimulatorSettings
from tests.support.fixtures import MODEL
from tests.support.simulating import CHAT, chunks, post


def test_the_end_of_sequence_has_logprobs_too(sim_url: str) -> None:
    """vLLM gives every sampled token logprobs, the ``<|im_end|>`` that ended the answer too
    (decoded on its own), so the list has completion_tokens entries; the text does not
    show it."""
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "logprobs": True,
                                                  "top_logprobs": 2}).json()
    choice = body["choices"][0]
    entries = choice["logprobs"]["content"]
    assert choice["finish_reason"] == "stop" and len(entries) == body["usage"]["completion_tokens"]
    last = entries[-1]
    assert last["token"] == "<|im_end|>" and last["bytes"] == list(b"<|im_end|>")
    assert last["top_logprobs"][0]["token"] == "<|im_end|>" and "<|im_end|>" not in choice["message"]["content"]
    assert "".join(e["token"] for e in entries[:-1]) == choice["message"]["content"]
    # a streamed answer's last frame carries it
    frames = chunks(post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "logprobs": True,
                                                           "stream": True}).content)
    final = frames[-1]["choices"][0]
    assert final["finish_reason"] == "stop" and final["delta"] == {"content": ""}
    assert [e["token"] for e in final["logprobs"]["content"]] == ["<|im_end|>"]
    # completions too: the token is listed, its text is not in the answer
    completion = post(sim_url, "/v1/completions", {"prompt": "Say hi.", "temperature": 0, "max_tokens": 300,
                                                   "logprobs": 1}).json()
    lp = completion["choices"][0]["logprobs"]
    assert lp["tokens"][-1] == "<|im_end|>" and len(lp["tokens"]) == completion["usage"]["completion_tokens"]
    assert lp["text_offset"][-1] == len(completion["choices"][0]["text"])


def test_a_length_cut_has_no_end_of_sequence(sim_url: str) -> None:
    body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 0, "logprobs": True,
                                                  "max_tokens": 5}).json()
    assert len(body["choices"][0]["logprobs"]["content"]) == 5 == body["usage"]["completion_tokens"]


def test_prompt_logprobs_give_each_prompt_tokens_true_rank(sim_url: str) -> None:
    body = post(sim_url, "/v1/completions", {"prompt": "The quick brown fox jumps over the lazy dog " * 4,
                                             "max_tokens": 1, "prompt_logprobs": 3, "return_token_ids": True}).json()
    choice = body["choices"][0]
    positions, ids = choice["prompt_logprobs"], choice["prompt_token_ids"]
    assert positions[0] is None and len(positions) == len(ids)
    own_ranks = []
    for token_id, position in zip(ids[1:], positions[1:], strict=True):
        entries = list(position.items())
        own_id, own = entries[0]
        assert own_id == str(token_id)   # the prompt's own token first, with its rank
        own_ranks.append(own["rank"])
        top = [e["rank"] for _, e in entries[1:]]
        assert top == [r for r in range(1, 4) if r != own["rank"]]   # the top 3, the own token once
        logprobs = [e["logprob"] for _, e in sorted(entries, key=lambda item: item[1]["rank"])]
        assert logprobs == sorted(logprobs, reverse=True)   # a higher rank, a lower logprob
    assert 1 in own_ranks and any(r > 3 for r in own_ranks) and any(1 < r <= 3 for r in own_ranks)


def test_the_fingerprint_follows_the_quantization_as_vllms_config_hash_does() -> None:
    def fingerprint(**settings: Any) -> str:
        return SimulatorSettings(**{"served_model_names": (MODEL,), **settings}).fingerprint

    baseline = fingerprint()
    assert baseline.startswith("vllm-0.34.0-") and len(baseline) == len("vllm-0.34.0-") + 8
    # replicas (another seed) and another served name agree, as vLLM's hash leaves those out
    assert fingerprint(seed=1) == baseline == fingerprint(served_model_names=(MODEL, "alias"))
    fp8 = fingerprint(profile=profiles.builtin("fp8"))
    assert fp8 != baseline and fp8 == fingerprint(quantization="fp8")
    assert fingerprint(profile=profiles.builtin("fp8"), quantization="none") == baseline
    assert fingerprint(max_model_len=4096) != baseline and fingerprint(model="/ckpt/other") != baseline


def test_the_fingerprint_is_on_the_wire(start_simulator: Any) -> None:
    base, fp8 = start_simulator(), start_simulator(profile=profiles.builtin("fp8"))
    replica = start_simulator(seed=7)
    found = [post(url, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 2}).json()["system_fingerprint"]
             for url in (base, replica, fp8)]
    assert found[0] == found[1] != found[2]


def test_seeded_choices_are_seeded_as_vllms_children(sim_url: str) -> None:
    """With ``n``, vLLM seeds choice i with seed + i (v1/engine/parallel_sampling.py)."""
    def texts(seed: int, n: int) -> list[str]:
        body = post(sim_url, "/v1/chat/completions", {"messages": CHAT, "temperature": 1.0, "seed": seed,
                                                      "n": n}).json()
        return [c["message"]["content"] for c in body["choices"]]

    several = texts(40, 4)
    assert several == [texts(40 + i, 1)[0] for i in range(4)]
    assert len(set(several)) > 1


def test_a_prompt_list_gets_a_choice_per_prompt_and_usage_for_all(sim_url: str) -> None:
    prompts = ["Name a river.", "Explain compilers in one sentence."]
    both = post(sim_url, "/v1/completions", {"prompt": prompts, "temperature": 0, "max_tokens": 30}).json()
    alone = [post(sim_url, "/v1/completions", {"prompt": p, "temperature": 0, "max_tokens": 30}).json()
             for p in prompts]
    assert [c["index"] for c in both["choices"]] == [0, 1]
    assert [c["text"] for c in both["choices"]] == [a["choices"][0]["text"] for a in alone]
    for field in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert both["usage"][field] == sum(a["usage"][field] for a in alone)

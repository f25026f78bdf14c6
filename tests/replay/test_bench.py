"""``shadowdiff bench`` against simulators over real HTTP (no timing is asserted)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx

from shadowdiff.simulator import profiles
from shadowdiff.simulator.faults import Fault, FaultSettings
from tests.support import cli
from tests.support.servers import free_port

BASE, FP8 = "Qwen/Qwen3-8B", "Qwen/Qwen3-8B-FP8"


def bench(*args: str) -> cli.Ran:
    return cli.shadowdiff("bench", *args)


def served(url: str) -> float:
    """Requests the simulator finished, whatever the reason."""
    text = httpx.get(url + "/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:request_success_total{"))


def test_both_sides_at_each_level_with_ratios(start_simulator: Callable[..., str], tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    cand = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    out = tmp_path / "bench.json"
    result = bench("--baseline", base, "--candidate", cand, "--concurrency", "1,4", "--requests", "6",
                   "--max-tokens", "16", "--out", str(out))
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())
    # the models were asked for, not guessed; each side alone, at each level
    assert (figures["baseline"]["model"], figures["candidate"]["model"]) == (BASE, FP8)
    assert [(lv["concurrency"], lv["side"]) for lv in figures["levels"]] == [
        (1, "baseline"), (1, "candidate"), (4, "baseline"), (4, "candidate")]
    for level in figures["levels"]:
        assert (level["requests"], level["errors"]) == (6, 0)
        assert 0 < level["output_tokens"] <= 6 * 16
        assert level["ttft_p50"] <= level["ttft_p95"] and level["latency_p50"] <= level["latency_p95"]
        assert level["tokens_per_second"] > 0
        assert level["token_sources"] == {"usage": 6}      # vLLM's usage: exact, no note
    assert figures["extra_body"] == {}
    assert "not the server's own" not in result.stderr
    assert [r["concurrency"] for r in figures["ratios"]] == [1, 4]
    # a warm-up wave of `concurrency` requests, then the measured ones, per level
    assert served(base) == served(cand) == (1 + 6) + (4 + 6)
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["concurrency", "side", "requests"]
    assert any(line.startswith("4 ") and "x" in line for line in lines[-2:])   # the speedup row


def test_errors_and_bad_input(start_simulator: Callable[..., str], tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    broken = start_simulator(served_model_names=(FP8,), faults=FaultSettings(rates={Fault.ERROR_500: 1.0}))
    result = bench("--baseline", base, "--candidate", broken, "--concurrency", "2", "--requests", "4",
                   "--max-tokens", "8")
    assert result.returncode == 1
    candidate_row = next(line for line in result.stdout.splitlines() if line.startswith("2 ") and "candidate" in line)
    assert candidate_row.split()[2:4] == ["4", "4"]        # 4 requests, 4 errors: shown, not hidden
    down = f"http://127.0.0.1:{free_port()}"
    result = bench("--baseline", base, "--candidate", down)
    assert result.returncode == 1 and "does not answer" in result.stderr
    for levels in ("0", "a,b", ""):
        result = bench("--baseline", base, "--candidate", base, "--concurrency", levels)
        assert result.returncode == 2 and "--concurrency" in result.stderr, result.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = bench("--baseline", base, "--candidate", base, "--prompts", str(empty))
    assert result.returncode == 1 and "Error:" in result.stderr and "Traceback" not in result.stderr

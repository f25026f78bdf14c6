"""shadowdiff end to end against real vLLM on the CPU: ``replay`` (with ``--replica``), ``serve``
(the official ``openai`` client through the proxy), ``report``, ``bench`` and ``judge``, each a
real ``shadowdiff`` process, against vLLM 0.32 serving SmolLM2-135M-Instruct in bf16 (the
baseline, and the replica with identical flags) and with an FP8 KV cache (the candidate; the
INT8 W8A8 checkpoint on a CPU without AVX-512).

Each test asserts on what vLLM returned: its usage counts against its own tokenizer, its
version, its speed, its teacher-forced reading of the baseline's answers.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from shadowdiff.answers.records import Answer
from shadowdiff.store import STORE_FILE
from shadowdiff.vocabulary import SUBSTANTIVE, Side
from tests.support.proxying import wait_for
from tests.support.servers import latest_pairs, metric, run_shadowdiff, serve_process
from tests.support.vllm_cpu import Server, Trio

pytestmark = pytest.mark.vllmcpu

MT_BENCH = Path(__file__).resolve().parents[2] / "examples" / "mt_bench_questions.jsonl"
CATEGORIES = ("writing", "reasoning", "math", "stem", "coding", "extraction")   # the first question of each
MAX_TOKENS = 48
DECISION_CODES = {"PASS": 0, "FAIL": 1, "INCOMPLETE": 2}


def token_count(server: Server, text: str) -> int:
    """vLLM's own count of ``text``'s tokens (``POST /tokenize``, no special tokens)."""
    response = httpx.post(f"{server.url}/tokenize", json={"model": server.model, "prompt": text,
                                                           "add_special_tokens": False}, timeout=60)
    response.raise_for_status()
    return int(response.json()["count"])


def check_counted(answer: Answer, server: Server) -> None:
    """vLLM's usage is the count, and its tokenizer agrees with it over the answer's text
    (within one token: a stop token held back, or a word re-tokenized in other pieces)."""
    assert answer.completion_tokens and answer.completion_tokens > 0, answer
    assert answer.token_source == "usage", answer.token_source
    assert abs(token_count(server, answer.text) - answer.completion_tokens) <= 1, answer


@pytest.fixture(scope="module")
def questions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = MT_BENCH.read_text().splitlines()
    chosen = [next(line for line in lines if json.loads(line)["category"] == c) for c in CATEGORIES]
    path = tmp_path_factory.mktemp("questions") / "questions.jsonl"
    path.write_text("\n".join(chosen) + "\n")
    return path


def replay(questions: Path, out: Path, vllm: Trio, *options: str) -> dict[str, Any]:
    result = run_shadowdiff("replay", questions, "--baseline", vllm.bf16.url, "--candidate", vllm.candidate.url,
                        "--replica", vllm.replica.url, "--max-tokens", str(MAX_TOKENS), "--out", out, *options)
    assert result.returncode == 0, result.stdout + result.stderr
    (out / "stdout.txt").write_text(result.stdout)
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


@pytest.fixture(scope="module")
def streamed(questions: Path, vllm: Trio, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A streamed replay (the default), with logprobs and teacher-forced scoring (the defaults)."""
    out = tmp_path_factory.mktemp("streamed")
    replay(questions, out, vllm)
    return out


def check_summary(summary: dict[str, Any], streamed: bool, vllm: Trio) -> None:
    n = len(CATEGORIES)
    assert summary["pairs"] == n and summary["comparable"] == n and summary["skipped"] == []
    assert summary["outcomes"]["error"] == 0, summary["outcomes"]
    sides = summary["settings"]["sides"]
    assert sides["baseline"]["model"] == "smol-bf16" and sides["candidate"]["model"] == vllm.candidate.model
    assert sides["replica"]["model"] == "smol-bf16"
    assert summary["settings"]["versions"] == dict.fromkeys(("baseline", "candidate", "replica"), "0.32.0")
    for name in ("baseline", "candidate", "replica"):
        side = summary["sides"][name]
        assert side["requests"] == n and side["errors"] == 0, (name, side)
        assert 0 < side["output_tokens"] <= n * MAX_TOKENS, (name, side)
        assert side["token_sources"] == {"usage": n}, (name, side)   # vLLM counts, streamed or not
        assert side["ttft_p50"] > 0 and side["latency_p50"] >= side["ttft_p50"]
        # tokens/s only where the decode was timed: from a stream, never a whole body
        assert (side["tokens_per_second_p50"] is not None and side["tokens_per_second_p50"] > 0) == streamed
    assert sum(summary["noise"].values()) == n


def test_replay_streamed_scores_against_the_baselines_own_reading(streamed: Path, vllm: Trio) -> None:
    summary = json.loads((streamed / "summary.json").read_text())
    check_summary(summary, streamed=True, vllm=vllm)
    n = len(CATEGORIES)
    t, floor = summary["token_agreement"], summary["noise_token_agreement"]
    assert t["pairs"] == n and floor["pairs"] == n, (t, floor)
    # bf16 vLLM reading its own answers back: a little under 100 %, never near sampling's
    own = t["baseline_agreement"]
    assert 0.9 <= own <= 1.0, own
    assert floor["baseline_agreement"] == own   # the same reading of the same answers
    excess = t["excess_disagreement"]
    assert excess["pairs"] == n and excess["low"] <= excess["estimate"] <= excess["high"]
    assert excess["estimate"] == pytest.approx(own - t["pooled"])
    # the candidate's quantization moves the probabilities; the replica (identical flags) barely
    assert t["kl_per_token"] > floor["kl_per_token"] >= 0, (t["kl_per_token"], floor["kl_per_token"])
    assert t["beyond_replica"]["pairs"] == n
    stdout = (streamed / "stdout.txt").read_text()
    assert "WARNING" not in stdout and "beyond that, the candidate disagrees on" in stdout, stdout
    for pair in latest_pairs(streamed, "replay"):
        assert set(pair.answers) == {Side.BASELINE, Side.CANDIDATE, Side.REPLICA}
        for side, server in ((Side.BASELINE, vllm.bf16), (Side.CANDIDATE, vllm.candidate),
                             (Side.REPLICA, vllm.replica)):
            answer = pair.answers[side]
            assert answer.ok and answer.text and answer.finish_reason in ("stop", "length"), answer
            assert answer.inter_token_latency is not None and answer.tokens   # streamed, with logprobs
            check_counted(answer, server)
        score = pair["score"]
        assert score["tokens"] == pair.answers[Side.BASELINE].completion_tokens, score


def test_replay_not_streamed(questions: Path, vllm: Trio, tmp_path: Path) -> None:
    summary = replay(questions, tmp_path, vllm, "--no-stream", "--no-score")
    check_summary(summary, streamed=False, vllm=vllm)
    assert summary["speedup"] is None and summary["ratios"]["latency_p50"] > 0
    assert summary["token_agreement"] is None


def test_report_names_both_models_and_the_engine(streamed: Path, vllm: Trio, tmp_path: Path) -> None:
    result = run_shadowdiff("report", streamed, "--out", tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert result.returncode == DECISION_CODES[summary["acceptance"]["decision"]], result.stdout + result.stderr
    html, markdown = (tmp_path / "report.html").read_text(), (tmp_path / "report.md").read_text()
    for text in (html, markdown):
        assert "smol-bf16" in text and vllm.candidate.model in text and "0.32.0" in text
        assert "beyond that, the candidate disagrees on" in text
    assert "the baseline&#39;s own" in html or "the baseline's own" in html
    assert summary["pairs"] == len(CATEGORIES)


def test_bench_measures_both_sides(vllm: Trio, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = run_shadowdiff("bench", "--baseline", vllm.bf16.url, "--candidate", vllm.candidate.url,
                            "--concurrency", "1,2", "--requests", "2", "--rounds", "3", "--max-tokens", "16",
                            "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    figures = json.loads(out.read_text())
    assert figures["baseline"]["model"] == "smol-bf16" and figures["candidate"]["model"] == vllm.candidate.model
    for level in figures["levels"]:
        assert level["errors"] == 0 and (level["requests"], level["rounds"]) == (6, 3), level
        assert 0 < level["output_tokens"] <= 6 * 16 and level["tokens_per_second"] > 0, level
    assert [r["concurrency"] for r in figures["ratios"]] == [1, 2]
    for ratio in figures["ratios"]:
        low, high = ratio["tokens_per_second_interval"]
        assert low <= ratio["tokens_per_second"] <= high


def test_judge_on_real_vllm_reads_every_reply(streamed: Path, vllm: Trio, tmp_path: Path) -> None:
    """The 135M model as its own judge: asked in words alone it answered in no usable shape;
    held to the JSON schema by vLLM's structured outputs, every changed pair is judged."""
    shutil.copy(streamed / STORE_FILE, tmp_path / STORE_FILE)   # the replay's store stays as it was
    result = run_shadowdiff("judge", tmp_path, "--judge", vllm.bf16.url, "--judge-model", vllm.bf16.model)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "replies held to a JSON schema (response_format json_schema)" in result.stderr
    pairs = [p for p in latest_pairs(tmp_path, "replay") if p["outcome"] in SUBSTANTIVE and p["comparable"]]
    assert pairs, "the candidate changed no answer in substance"
    assert all(p["judge_verdict"] is not None for p in pairs)
    assert f"{len(pairs)} pairs judged" in result.stderr and "not in the asked format" not in result.stderr


QUESTION: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "Name three primary colors and say why they are called primary."}]


def client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=300)


def test_serve_is_transparent_to_the_openai_client(vllm: Trio, tmp_path: Path) -> None:
    """Through the proxy the client gets vLLM's own answer: the usage chunk, logprobs and
    both choices of n=2, streamed and not; the FP8 candidate's answers are the shadow's."""
    bf16 = vllm.bf16
    # n=2 needs sampling (vLLM refuses it at temperature 0); a seed makes it repeatable
    ask = {"model": bf16.model, "messages": QUESTION, "temperature": 0.8, "seed": 7, "max_tokens": 32, "n": 2,
           "logprobs": True, "top_logprobs": 2}

    def streamed_answer(base: str) -> tuple[list[str], Any, int]:
        chunks = list(client(base).chat.completions.create(**ask, stream=True,
                                                           stream_options={"include_usage": True}))
        texts = ["", ""]
        logprobs = 0
        for chunk in chunks:
            for choice in chunk.choices:
                texts[choice.index] += choice.delta.content or ""
                logprobs += len(choice.logprobs.content or []) if choice.logprobs else 0
        last = chunks[-1]
        assert last.choices == [] and last.usage is not None   # vLLM's usage chunk, last
        return texts, last.usage.completion_tokens, logprobs

    def whole_answer(base: str) -> tuple[list[str], Any, int]:
        answer = client(base).chat.completions.create(**ask)
        texts = [c.message.content or "" for c in sorted(answer.choices, key=lambda c: c.index)]
        logprobs = sum(len(c.logprobs.content or []) for c in answer.choices if c.logprobs)
        assert answer.usage is not None
        return texts, answer.usage.completion_tokens, logprobs

    with serve_process(tmp_path, bf16.url, "--shadow", vllm.candidate.url,
                       "--shadow-model", vllm.candidate.model) as url:
        assert httpx.get(url + "/readyz", timeout=30).status_code == 200
        through = [streamed_answer(url), whole_answer(url)]
        direct = [streamed_answer(bf16.url), whole_answer(bf16.url)]
        assert through == direct, (through, direct)
        for texts, tokens, logprobs in through:
            assert texts[0] and texts[1]
            assert logprobs == tokens   # one logprob entry per generated token, both choices
        wait_for(lambda: metric(url, "shadowdiff_pairs_total") == 2, seconds=300)   # the shadow answers after
    pairs = latest_pairs(tmp_path / "store", "serve")
    assert len(pairs) == 2
    for pair in pairs:
        baseline, candidate = pair.answers[Side.BASELINE], pair.answers[Side.CANDIDATE]
        assert len(baseline.choices) == 2 and len(candidate.choices) == 2   # the whole answer: every choice
        assert baseline.text == through[0][0][0] and baseline.model == bf16.model
        assert candidate.ok and candidate.text and candidate.model == vllm.candidate.model
        assert baseline.token_source == candidate.token_source == "usage"


def test_mirrored_traffic_reports_outcomes_agreement_and_speed(vllm: Trio, questions: Path, tmp_path: Path) -> None:
    """Greedy traffic from the openai client through ``serve`` (bf16 primary, the candidate
    shadow, the replica beside, every pair scored), then ``report`` on its store: what a
    rollout's shadow traffic reads in summary.json."""
    asked = [json.loads(line)["turns"][0] for line in questions.read_text().splitlines()]
    with serve_process(tmp_path, vllm.bf16.url, "--shadow", vllm.candidate.url, "--shadow-model", vllm.candidate.model,
               "--replica", vllm.replica.url, "--replica-rate", "1", "--score-rate", "100") as url:
        for question in asked:
            chunks = client(url).chat.completions.create(
                model=vllm.bf16.model, messages=[{"role": "user", "content": question}], temperature=0,
                max_tokens=MAX_TOKENS, stream=True, stream_options={"include_usage": True})
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        wait_for(lambda: metric(url, "shadowdiff_pairs_total") == len(asked), seconds=600)
        # scoring runs after the pair is stored: wait for the last score to land
        def scored() -> bool:
            pairs = latest_pairs(tmp_path / "store", "serve")
            return len(pairs) == len(asked) and all(p["score"] for p in pairs)

        wait_for(scored, seconds=600)
    result = run_shadowdiff("report", tmp_path / "store", "--out", tmp_path / "report")
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert result.returncode == DECISION_CODES[summary["acceptance"]["decision"]], result.stdout + result.stderr
    assert summary["pairs"] == len(asked) and summary["outcomes"]["error"] == 0
    assert sum(summary["noise"].values()) == len(asked)
    for name in ("baseline", "candidate", "replica"):
        side = summary["sides"][name]
        assert side["requests"] == len(asked) and side["tokens_per_second_p50"] > 0, (name, side)
    t = summary["token_agreement"]
    assert t["pairs"] == len(asked) and 0.9 <= t["baseline_agreement"] <= 1.0, t
    assert t["excess_disagreement"]["pairs"] == len(asked)

"""``shadowdiff bench`` against simulators over real HTTP (no timing is asserted)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from shadowdiff.replay import bench as bench_module
from shadowdiff.replay.bench import Level, Round, ratios
from shadowdiff.simulator import profiles
from shadowdiff.simulator.faults import Fault, FaultSettings
from shadowdiff.simulator.scheduler import LatencyModel
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
                   "--rounds", "4", "--max-tokens", "16", "--out", str(out))
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())
    # the models were asked for, not guessed; each side alone, at each level
    assert (figures["baseline"]["model"], figures["candidate"]["model"]) == (BASE, FP8)
    assert (figures["rounds"], figures["requests_per_round"]) == (4, {"1": 6, "4": 6})
    assert [(lv["concurrency"], lv["side"]) for lv in figures["levels"]] == [
        (1, "baseline"), (1, "candidate"), (4, "baseline"), (4, "candidate")]
    for level in figures["levels"]:
        assert (level["requests"], level["errors"], level["rounds"]) == (24, 0, 4)
        assert 0 < level["output_tokens"] <= 24 * 16 and len(level["round_tokens_per_second"]) == 4
        assert level["ttft_p50"] <= level["ttft_p95"] and level["latency_p50"] <= level["latency_p95"]
        assert level["tokens_per_second"] > 0
        assert level["token_sources"] == {"usage": 24}      # vLLM's usage: exact, no note
    assert figures["extra_body"] == {"ignore_eos": True}   # (two vLLM servers: equal work, every answer max_tokens)
    assert "not the server's own" not in result.stderr
    assert [(r["concurrency"], r["rounds"]) for r in figures["ratios"]] == [(1, 4), (4, 4)]
    for ratio in figures["ratios"]:
        low, high = ratio["tokens_per_second_interval"]
        assert low <= ratio["tokens_per_second"] <= high
    # a warm-up wave of `concurrency` requests, then the measured ones, per level
    assert served(base) == served(cand) == (1 + 24) + (4 + 24)
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["concurrency", "side", "requests"]
    assert any(line.startswith("4 ") and "x [" in line for line in lines[-3:])   # the speedup row, its interval


def test_a_faster_candidate_reads_faster_and_the_sides_swapped_slower(
        start_simulator: Callable[..., str], tmp_path: Path) -> None:
    """Simulators that sleep per token, one at three times the other's speed, benched both ways.

    Whether the 99 % interval leaves out 1.00 depends on how busy the machine is (beside the suite
    in CI one such bench read [0.83, 3.07]), so the calls themselves are tested on made-up rounds
    below; here the ratio must point the right way, invert when the sides swap, and never be
    called the wrong way."""
    slow = start_simulator(served_model_names=(BASE,), latency=LatencyModel(tpot=0.004))
    fast = start_simulator(served_model_names=(FP8,), latency=LatencyModel(tpot=0.004, speed=3.0))
    found = {}
    for name, (baseline, candidate) in {"faster": (slow, fast), "swapped": (fast, slow)}.items():
        out = tmp_path / f"{name}.json"
        result = bench("--baseline", baseline, "--candidate", candidate, "--concurrency", "1", "--requests", "3",
                       "--rounds", "6", "--max-tokens", "16", "--out", str(out))
        assert result.returncode == 0, result.stderr
        found[name] = json.loads(out.read_text())["ratios"][0]
    faster, swapped = found["faster"], found["swapped"]
    assert faster["tokens_per_second"] > 1.2 and faster["latency_p50"] < 1 / 1.2, faster
    assert swapped["tokens_per_second"] < 1 / 1.2 and swapped["latency_p50"] > 1.2, swapped
    assert faster["tokens_per_second_verdict"] in ("faster", "no measurable difference"), faster
    assert swapped["tokens_per_second_verdict"] in ("slower", "no measurable difference"), swapped
    for ratio in (faster, swapped):
        low, high = ratio["tokens_per_second_interval"]
        assert low <= ratio["tokens_per_second"] <= high
        assert (ratio["tokens_per_second_verdict"] == "no measurable difference") == (low <= 1 <= high), ratio
    # the swapped ratio is about the first's inverse (two runs, each with its own noise)
    assert 0.6 < swapped["tokens_per_second"] * faster["tokens_per_second"] < 1.6


def _rounds(tokens_per_second: list[float], answers: int = 4) -> tuple[Round, ...]:
    return tuple(Round(1.0, round(t), (0.1,) * answers, (1.0 / t * 100,) * answers) for t in tokens_per_second)


def _levels(base: list[float], cand: list[float], answers: int = 4) -> list[Level]:
    def level(side: str, rounds: tuple[Round, ...]) -> Level:
        return Level(side, 1, len(rounds) * answers, 0, sum(r.seconds for r in rounds),
                     sum(r.output_tokens for r in rounds), None, None, None, None, {}, rounds)
    return [level("baseline", _rounds(base, answers)), level("candidate", _rounds(cand, answers))]


def test_a_ratio_is_called_only_where_its_interval_leaves_out_one() -> None:
    # the same server both ways: the rounds vary, the ratio's interval holds 1.00
    same = ratios(_levels([100, 104, 97, 101, 99], [101, 98, 103, 99, 100]))[0]
    low, high = same["tokens_per_second_interval"]
    assert low < 1 < high and same["tokens_per_second_verdict"] == "no measurable difference"
    # 1.5x in every round, give or take: faster; its times shorter
    faster = ratios(_levels([100, 104, 97, 101, 99], [150, 149, 152, 148, 151]))[0]
    assert faster["tokens_per_second_verdict"] == "faster" and faster["tokens_per_second_interval"][0] > 1.35
    assert faster["confidence"] == 0.99   # (a call a rollout is decided on: 99 %, not 95 %)
    assert faster["latency_p50_verdict"] == "faster" and faster["latency_p50"] < 1
    # one fast round among slow ones is no difference, however fast
    once = ratios(_levels([100, 100, 100, 100, 100], [100, 99, 101, 300, 100]))[0]
    assert once["tokens_per_second"] > 1.2 and once["tokens_per_second_verdict"] == "no measurable difference"
    # two rounds give no interval: nothing is called
    two = ratios(_levels([100, 100], [150, 150]))[0]
    assert two["tokens_per_second_interval"] is None and two["tokens_per_second_verdict"] == "too few rounds to tell"
    # swapping the sides inverts the ratio and its interval exactly
    swapped = ratios(_levels([150, 149, 152, 148, 151], [100, 104, 97, 101, 99]))[0]
    assert swapped["tokens_per_second"] * faster["tokens_per_second"] == pytest.approx(1)
    assert [1 / x for x in reversed(swapped["tokens_per_second_interval"])] == pytest.approx(
        faster["tokens_per_second_interval"])
    # the same rounds give the same interval
    assert ratios(_levels([100, 104, 97], [101, 98, 103])) == ratios(_levels([100, 104, 97], [101, 98, 103]))


def test_a_p95_needs_twenty_answers() -> None:
    few = bench_module.level("baseline", 1, list(_rounds([100] * 4, answers=4)), [])
    enough = bench_module.level("baseline", 1, list(_rounds([100] * 5, answers=4)), [])
    assert (few.latency_p50, few.latency_p95, few.ttft_p95) == (1.0, None, None)
    assert (enough.latency_p95, enough.ttft_p95) == (1.0, 0.1)
    assert "n<20" in bench_module.table([few, *_levels([100] * 4, [100] * 4)[1:]])


def test_errors_and_bad_input(start_simulator: Callable[..., str], tmp_path: Path) -> None:
    base = start_simulator(served_model_names=(BASE,))
    broken = start_simulator(served_model_names=(FP8,), faults=FaultSettings(rates={Fault.ERROR_500: 1.0}))
    result = bench("--baseline", base, "--candidate", broken, "--concurrency", "2", "--requests", "4",
                   "--max-tokens", "8")
    assert result.returncode == 1
    candidate_row = next(line for line in result.stdout.splitlines() if line.startswith("2 ") and "candidate" in line)
    assert candidate_row.split()[2:4] == ["48", "48"]      # 4 requests in each of 12 rounds, all errors: shown
    down = f"http://127.0.0.1:{free_port()}"
    result = bench("--baseline", base, "--candidate", down)
    assert result.returncode == 1 and "does not answer" in result.stderr
    for levels in ("0", "a,b", ""):
        result = bench("--baseline", base, "--candidate", base, "--concurrency", levels)
        assert result.returncode == 2 and "--concurrency" in result.stderr, result.stderr
    for rounds in ("0", "-1", "x"):
        result = bench("--baseline", base, "--candidate", base, "--rounds", rounds)
        assert result.returncode == 2 and "--rounds" in result.stderr, result.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = bench("--baseline", base, "--candidate", base, "--prompts", str(empty))
    assert result.returncode == 1 and "Error:" in result.stderr and "Traceback" not in result.stderr


def test_a_bench_file_is_the_reports_speed_figure_and_a_bad_one_is_refused(
        start_simulator: Callable[..., str], tmp_path: Path) -> None:
    """``replay --bench`` stores bench's figures with the run; its reports, and ``report`` on
    the run again, lead with them and keep the run's own beside them, as measured under load."""
    slow = start_simulator(served_model_names=(BASE,), latency=LatencyModel(tpot=0.002))
    fast = start_simulator(served_model_names=(FP8,), latency=LatencyModel(tpot=0.002, speed=2.0))
    figures = tmp_path / "bench.json"
    measured = bench("--baseline", slow, "--candidate", fast, "--concurrency", "1", "--requests", "3",
                     "--rounds", "6", "--max-tokens", "16", "--out", str(figures))
    assert measured.returncode == 0, measured.stderr
    log = tmp_path / "prompts.txt"
    log.write_text("".join(f"Say something about {topic}.\n" for topic in ("rain", "tea", "maps", "bees")))
    out = tmp_path / "run"
    ran = cli.shadowdiff("replay", log, "--baseline", slow, "--candidate", fast, "--out", out,
                         "--max-tokens", "8", "--bench", figures)
    assert ran.returncode == 0, ran.stderr
    report = (out / "report.md").read_text()
    # what bench called is the machine's business (on a loaded CI machine the interval may hold 1.00):
    # the report must show the call the file holds, whichever it is
    called = json.loads(figures.read_text())["ratios"][0]["tokens_per_second_verdict"]
    assert "speed (candidate/baseline, bench)" in report and f"output tokens/s, {called}" in report, report
    assert "This run's own:" in report and "both servers at one host, 127.0.0.1" in report
    assert "measured other servers" not in report
    stored = json.loads((out / "summary.json").read_text())["bench"]
    assert stored["file"] == "bench.json" and stored["ratios"][0]["tokens_per_second_verdict"] == called
    assert "speed by shadowdiff bench (bench.json" in ran.stdout
    again = cli.shadowdiff("report", out, "--out", tmp_path / "again")
    assert "speed by shadowdiff bench (bench.json" in again.stdout, again.stdout + again.stderr

    # a bench of another server is shown, and said to be of another server
    other = json.loads(figures.read_text())
    other["candidate"]["url"] = "http://10.0.0.9:8000/v1"
    (tmp_path / "other.json").write_text(json.dumps(other))
    elsewhere = cli.shadowdiff("report", out, "--out", tmp_path / "other", "--bench", tmp_path / "other.json")
    assert elsewhere.returncode in (0, 2), elsewhere.stderr
    assert "measured other servers than this run: the candidate at http://10.0.0.9:8000/v1" in \
        (tmp_path / "other" / "report.md").read_text()

    # what bench never writes is refused, by report (no decision: 3) and by replay before any request
    inverted = json.loads(figures.read_text())
    low, high = inverted["ratios"][0]["tokens_per_second_interval"]
    inverted["ratios"][0]["tokens_per_second_interval"] = [high * 2, low]
    def edited(change: Callable[[dict[str, Any]], None]) -> str:
        data = json.loads(figures.read_text())
        change(data)
        return json.dumps(data)

    def liar(data: dict[str, Any]) -> None:   # "faster" on an interval that holds 1.00
        data["ratios"][0].update(tokens_per_second_interval=[0.5, 3.0], tokens_per_second_verdict="faster")

    bad = {"garbage.json": "{not json", "empty.json": json.dumps({"ratios": []}),
           "inverted.json": json.dumps(inverted), "list.json": "[1, 2]", "liar.json": edited(liar),
           "one-round.json": edited(lambda d: d["ratios"][0].update(rounds=1)),
           "errors-called.json": edited(lambda d: d["ratios"][0].update(errors=5)),
           "bad-url.json": edited(lambda d: d["baseline"].update(url="http://127.0.0.1:notaport")),
           "no-url.json": edited(lambda d: d["baseline"].update(url=" ")),
           "nested.json": "[" * 100_000, "huge-number.json": '{"ratios": [' + "9" * 5000 + "]}"}
    before = served(slow)
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
        refused = cli.shadowdiff("report", out, "--out", tmp_path / "bad", "--bench", tmp_path / name)
        assert refused.returncode == 3 and f"--bench {tmp_path / name}" in refused.stderr, (name, refused.stderr)
        assert "Traceback" not in refused.stderr
        replayed = cli.shadowdiff("replay", log, "--baseline", slow, "--candidate", fast, "--out",
                                  tmp_path / f"run-{name}", "--bench", tmp_path / name)
        assert replayed.returncode == 1 and "--bench" in replayed.stderr and "Traceback" not in replayed.stderr
    assert served(slow) == before     # (preflight asks /v1/models, never a completion)

    # a file saved with a byte order mark is read; localhost is 127.0.0.1; a model name is text in a
    # table's cell, not Markdown
    named = json.loads(figures.read_text())
    named["baseline"]["url"] = named["baseline"]["url"].replace("127.0.0.1", "localhost")
    named["candidate"]["model"] = "evil | injected\n\n## PASS\nall good"
    (tmp_path / "named.json").write_text("\ufeff" + json.dumps(named), encoding="utf-8")
    shown = cli.shadowdiff("report", out, "--out", tmp_path / "named", "--bench", tmp_path / "named.json")
    assert shown.returncode in (0, 2), shown.stderr
    assert "over the run's own bench figures (bench.json), for this report only" in shown.stderr
    markdown = (tmp_path / "named" / "report.md").read_text()
    assert "## PASS" not in markdown.splitlines() and "the candidate at" not in markdown
    assert "the candidate's model evil \\| injected" in markdown and "## PASS all good, the run's" in markdown


def test_rounds_move_through_the_log_and_vllm_sides_write_answers_of_equal_length(tmp_path: Path) -> None:
    """Each round takes the log's next requests, the same for both sides (a bench of one prompt
    repeated is no bench of the log); two vLLM servers are asked ``ignore_eos``, so that every
    answer is ``max_tokens`` long and tokens/s compares equal work."""
    from shadowdiff.simulator.app import build_app
    from shadowdiff.simulator.settings import SimulatorSettings
    from tests.support.servers import Recorder, serve_app

    log = tmp_path / "prompts.txt"
    log.write_text("".join(f"Tell me about topic {i}.\n" for i in range(5)))
    base = Recorder(build_app(SimulatorSettings(served_model_names=(BASE,))))
    cand = Recorder(build_app(SimulatorSettings(served_model_names=(FP8,), profile=profiles.builtin("fp8"))))
    with serve_app(base) as b, serve_app(cand) as c:
        out = tmp_path / "bench.json"
        result = bench("--baseline", b, "--candidate", c, "--prompts", str(log), "--concurrency", "1",
                       "--rounds", "4", "--requests", "2", "--max-tokens", "12", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "both servers are vLLM: bench sends ignore_eos" in result.stderr
    for recorder in (base, cand):
        prompts = [body["messages"][-1]["content"] for _, body in recorder.seen]
        assert all(body["ignore_eos"] is True for _, body in recorder.seen)
        # a warm-up request, then 4 rounds of 2: the log's lines in turn, from its start again after the fifth
        assert [p.split()[-1] for p in prompts] == ["0."] + [f"{i % 5}." for i in range(8)], prompts
    figures = json.loads(out.read_text())
    assert [level["tokens_per_answer"] for level in figures["levels"]] == [12.0, 12.0]
    assert figures["ratios"][0]["length_ratio"] == 1.0 and figures["requests_per_round"] == {"1": 2}


def test_a_level_with_errors_or_answers_of_unequal_length_is_not_called() -> None:
    def level(side: str, seconds: float, tokens: int, errors: int = 0) -> Level:
        """Six rounds of four requests, each round ``tokens`` long in all, in ``seconds``."""
        answered = 4 - errors
        rounds = tuple(Round(seconds * (1 + 0.01 * i), tokens, (0.1,) * answered, (seconds,) * answered, answered)
                       for i in range(6))
        return Level(side, 1, 24, errors * 6, sum(r.seconds for r in rounds), tokens * 6, None, None, None, None,
                     {}, rounds)
    # the same answers' lengths, written in two thirds of the time: faster
    faster = ratios([level("baseline", 1.5, 100), level("candidate", 1.0, 100)])[0]
    assert faster["tokens_per_second_verdict"] == "faster" and faster["length_ratio"] == pytest.approx(1.0)
    # answers 1.5x as long in the same time: tokens/s says 1.5x, but the work was not the same: no call
    longer = ratios([level("baseline", 1.0, 100), level("candidate", 1.0, 150)])[0]
    assert longer["tokens_per_second"] == pytest.approx(1.5) and longer["length_ratio"] == pytest.approx(1.5)
    assert longer["tokens_per_second_verdict"] == longer["latency_p50_verdict"] == "answers of unequal length"
    assert longer["ttft_p50_verdict"] == "no measurable difference"   # (the first token's wait is not length's)
    assert "1.50x the baseline's length" in bench_module.table([level("baseline", 1.0, 100),
                                                                level("candidate", 1.0, 150)])
    # a side whose requests failed timed less work: nothing is called
    failed = ratios([level("baseline", 1.5, 100, errors=1), level("candidate", 1.0, 100)])[0]
    assert {failed[f"{name}_verdict"] for name in ("tokens_per_second", "ttft_p50", "latency_p50")} == {
        "not measured: requests failed"}
    assert "6 requests failed" in bench_module.table([level("baseline", 1.5, 100, errors=1),
                                                      level("candidate", 1.0, 100)])

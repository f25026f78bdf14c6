"""``shadowdiff replay`` end to end, against real simulators on loopback."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from shadowdiff.answers.client import RetryPolicy, Upstream
from shadowdiff.errors import InputError, ShadowdiffError
from shadowdiff.replay.cli import run_replay
from shadowdiff.replay.logs import CHAT
from shadowdiff.replay.runner import Overrides, ReplaySettings
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.faults import Fault, FaultSettings
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import STORE_FILE, Store
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.replaying import numbered_log, replay_settings, slow_sides
from tests.support.servers import serve_app
from tests.support.simulating import expected_outcomes

ROOT = Path(__file__).resolve().parents[2]
MT_BENCH = ROOT / "examples" / "mt_bench_questions.jsonl"


def test_mt_bench_replays_without_edits(sides: dict[Side, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    # not scored: teacher forcing on the simulators (tests/replay/test_scoring_e2e.py) was
    # two thirds of this replay's time, and none of what is asserted here
    run_replay(replay_settings(MT_BENCH, sides, score=False), out, None, resume=False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pairs"] == 80
    assert summary["skipped"] == []
    questions = [json.loads(line)["turns"][0] for line in MT_BENCH.read_text().splitlines()]
    expected = expected_outcomes(questions)
    outcomes = summary["outcomes"]
    assert outcomes["identical"] == expected["identical"]
    assert outcomes["equivalent"] == expected["equivalent"]
    assert outcomes["near"] + outcomes["divergent"] == expected["changed"]
    assert outcomes["error"] == 0
    # the noise floor is far below the candidate's divergence
    assert summary["noise_rate"] < summary["changed_rate"] / 3
    assert {c["category"] for c in summary["categories"]} == {
        "writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"}
    assert set(summary["sides"]) == {"baseline", "candidate", "replica"}
    assert summary["settings"]["overrides"] == {"temperature": 0.0, "max_tokens": 256, "stream": True, "logprobs": 2,
                                                "extra": {}}
    # the reports and their formats
    base_texts = json.loads((out / "baseline.texts.json").read_text())
    cand_texts = json.loads((out / "candidate.texts.json").read_text())
    assert len(base_texts) == len(cand_texts) == 80
    assert all(isinstance(t, str) and t for t in base_texts)
    rows = list(csv.DictReader((out / "pairs.csv").open()))
    assert len(rows) == 80
    assert [r["key"] for r in rows][:3] == ["81", "82", "83"]
    lines = (out / "pairs.jsonl").read_text().splitlines()
    assert len(lines) == 80
    first = json.loads(lines[0])
    assert first["answers"]["baseline"]["text"] == base_texts[0]
    assert first["request"]["messages"][0]["content"].startswith("Compose an engaging travel blog post")
    html = (out / "report.html").read_text()
    changed = outcomes["near"] + outcomes["divergent"] + outcomes["equivalent"]
    assert html.count('<article class="pair"') == changed
    assert html.count("<script") == 1   # (the page's own search, and no other: tests/support/reporting.py)
    md = (out / "report.md").read_text()
    assert md.count("\n### ") == changed


def test_replay_store_holds_tokens_and_margins(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("\n".join(f"Question {i}: explain rivers and bridges." for i in range(30)) + "\n")
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides), out, None, resume=False)
    store = Store.open(out)
    run = store.latest_run("replay")
    assert run is not None
    pairs = list(store.pairs(run.id))
    assert len(pairs) == 30
    for pair in pairs:
        base = pair.answers[Side.BASELINE]
        # logprobs cover every generated token, the end of sequence too (as vLLM 0.34 sends them)
        eos = "<|im_end|>" if base.finish_reason == "stop" else ""
        assert base.tokens is not None and "".join(base.tokens) == base.text + eos
        assert base.margins is not None and len(base.margins) == len(base.tokens)
        assert base.ttft is not None and base.duration is not None and base.ttft <= base.duration
        assert base.completion_tokens == len(base.tokens)
        if pair["outcome"] in ("near", "divergent"):
            assert pair["first_token"] is not None
            assert pair["margin"] == base.margins[pair["first_token"]]
    store.close()


def test_errors_are_recorded_not_fatal(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("\n".join(f"Prompt {i} about gardens." for i in range(40)) + "\n")
    flaky = FaultSettings(rates={Fault.ERROR_500: 0.2, Fault.RESET: 0.1, Fault.MALFORMED: 0.1,
                                 Fault.ERROR_FRAME: 0.1, Fault.ERROR_503: 0.1}, seed=5)
    with serve_app(build_app(SimulatorSettings(served_model_names=("b",)))) as base, \
            serve_app(build_app(SimulatorSettings(served_model_names=("c",), faults=flaky))) as cand:
        settings = ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, base),
                                  candidate=Upstream(Side.CANDIDATE, cand),
                                  retry=RetryPolicy(attempts=2, backoff=0.01))
        out = tmp_path / "out"
        run_replay(settings, out, None, resume=False)
    store = Store.open(out)
    run = store.latest_run()
    assert run is not None
    pairs = list(store.pairs(run.id))
    assert len(pairs) == 40
    errors = [p.answers[Side.CANDIDATE].error for p in pairs if p["outcome"] == "error"]
    assert errors
    assert any(e and e.startswith("HTTP 500") for e in errors)
    assert any(e and e.startswith("malformed event") for e in errors)
    assert any(e and e.startswith("error event after the 200") for e in errors)
    assert all(p.answers[Side.BASELINE].ok for p in pairs)
    retried = [p.answers[Side.CANDIDATE] for p in pairs if p.answers[Side.CANDIDATE].attempts > 1]
    assert retried  # 503s and resets were tried again
    store.close()


def test_a_pair_that_cannot_be_made_costs_that_pair_only(sides: dict[Side, str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in making one pair (here: the comparison raising on one prompt) is recorded as an
    error pair; the run goes on, ends, and counts it, even with one worker."""
    from shadowdiff.replay import runner

    real = runner.compare_off_loop

    async def failing(a: Any, b: Any, thresholds: Any) -> Any:
        if "third" in a.text or "third" in b.text:
            raise RuntimeError("boom")
        return await real(a, b, thresholds)

    monkeypatch.setattr(runner, "compare_off_loop", failing)
    log = tmp_path / "log.txt"
    log.write_text("Repeat the word first.\nRepeat the word second.\nRepeat the word third.\nRepeat the word fourth.\n")
    settings = ReplaySettings(log=log, baseline=Upstream(Side.BASELINE, sides[Side.BASELINE]),
                              candidate=Upstream(Side.CANDIDATE, sides[Side.CANDIDATE]), concurrency=1)
    run_replay(settings, tmp_path / "out", None, resume=False)
    store = Store.open(tmp_path / "out")
    try:
        run = store.latest_run()
        assert run is not None
        outcomes = {p["key"]: p["outcome"] for p in store.pairs(run.id)}
        errors = [p.answers[Side.BASELINE].error for p in store.pairs(run.id) if p["outcome"] == "error"]
    finally:
        store.close()
    assert len(outcomes) == 4
    assert errors and all(e is not None and "RuntimeError: boom" in e for e in errors)


def test_malformed_lines_are_skipped_or_stop_the_run(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "bodies.jsonl"
    good = {"messages": [{"role": "user", "content": "hello"}]}
    log.write_text("\n".join([json.dumps(good), "{broken", json.dumps({"model": "x"}),
                              json.dumps(good | {"id": "b"})]) + "\n")
    out = tmp_path / "out"
    run_replay(replay_settings(log, {k: v for k, v in sides.items() if k is not Side.REPLICA}), out, None, False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pairs"] == 2
    assert [s["line"] for s in summary["skipped"]] == [2, 3]
    assert summary["skipped"][0]["reason"].startswith("not valid JSON")
    with pytest.raises(InputError, match="line 2: not valid JSON"):
        run_replay(replay_settings(log, sides, strict=True), tmp_path / "strict", None, False)


def test_cli_errors_are_clear(sides: dict[Side, str], tmp_path: Path) -> None:
    weird = tmp_path / "weird.jsonl"
    weird.write_text(json.dumps({"input": "embed me"}) + "\n")
    result = cli.shadowdiff("replay", str(weird), "--baseline",
                            sides[Side.BASELINE], "--candidate", sides[Side.CANDIDATE], "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    assert "match no log format" in result.stderr
    assert "Traceback" not in result.stderr
    # report's exit codes 1 and 2 mean FAIL and INCOMPLETE: a report it cannot make exits 3
    (tmp_path / "a-file").write_text("")
    store = Store.open(tmp_path / "store")
    store.create_run("replay", {})
    store.close()
    for args, message in (([str(tmp_path / "nothing")], "no store at"),
                          ([str(tmp_path / "nothing"), "--bogus"], "No such option"),
                          ([], "Missing argument"),
                          ([str(tmp_path / "store"), "--out", str(tmp_path / "a-file" / "x")], "no report:")):
        result = cli.shadowdiff("report", *args)
        assert result.returncode == 3, (args, result.stderr)
        assert message in result.stderr


def test_extra_body_fields_are_sent_and_recorded(sides: dict[Side, str], tmp_path: Path) -> None:
    """--extra-body: an engine's own fields (llama.cpp's repeat_penalty) in every request,
    over the log's, recorded with the run; never one of replay's own fields."""
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}], "repeat_penalty": 1.3}) + "\n")
    result = cli.shadowdiff("replay", str(log), "--baseline", sides[Side.BASELINE],
                            "--candidate", sides[Side.CANDIDATE], "--out", str(tmp_path / "out"),
                            "--extra-body", "repeat_penalty=1.0", "--extra-body", 'stop=["\\n\\n"]')
    assert result.returncode == 0, result.stderr
    store = Store.open(tmp_path / "out")
    run = store.latest_run("replay")
    assert run is not None and run.settings["overrides"]["extra"] == {"repeat_penalty": 1.0, "stop": ["\n\n"]}
    [pair] = list(store.pairs(run.id))
    assert pair["request"]["repeat_penalty"] == 1.0 and pair["request"]["stop"] == ["\n\n"]
    store.close()
    for command in ("replay", "bench"):
        for values, message in ((["temperature=1"], "it comes from --temperature"),
                                ([" Temperature=1"], "it comes from --temperature"),
                                (["seed=seven"], "is not JSON"), (["=1"], "expects FIELD=JSON"),
                                (["seed=NaN"], "NaN and infinities"), (["seed=-Infinity"], "NaN and infinities"),
                                (["seed=1", "seed=2"], "given twice"), (["api_key=\"sk-1\""], "use --api-key"),
                                (['extra_body={"repeat_penalty": 1.0}'], "give each field as FIELD=JSON")):
            args = [str(log)] if command == "replay" else []
            options = [part for value in values for part in ("--extra-body", value)]
            result = cli.shadowdiff(command, *args, "--baseline",
                                    sides[Side.BASELINE], "--candidate", sides[Side.CANDIDATE],
                                    "--out", str(tmp_path / "o2"), *options)
            assert result.returncode != 0 and message in result.stderr, (command, values, result.stderr)
            assert "Traceback" not in result.stderr


def test_report_regenerates_the_files(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("\n".join(f"Question {i}: explain clouds." for i in range(12)) + "\n")
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides), out, None, resume=False)
    before = {name: (out / name).read_text() for name in ("summary.json", "pairs.csv", "report.md")}
    for name in ("summary.json", "pairs.csv", "report.md", "report.html", "pairs.jsonl"):
        (out / name).unlink()
    result = cli.shadowdiff("report", str(out))
    assert result.returncode == 2, result.stderr  # changed pairs, nobody has reviewed them yet: incomplete
    assert "verdict: INCOMPLETE" in result.stdout
    assert "12 pairs" in result.stdout
    for name, text in before.items():
        assert (out / name).read_text() == text, name
    result = cli.shadowdiff("report", str(out / STORE_FILE), "--out",
                            str(tmp_path / "elsewhere"), "--min-reviewed", "0", "--min-compared", "12")
    # --min-reviewed 0 lets the wording changes go unreviewed, not the pair whose number changed
    assert result.returncode == 2, result.stdout
    assert re.search(r"verdict: INCOMPLETE - \d+ unreviewed pairs show a sign of a factual regression",
                     result.stdout), result.stdout
    assert "min reviewed 0 = 0 % (given to report)" in result.stdout
    # (asking for reviews over a run that never waived them is no --with-review given)
    assert "without review off (default)" in result.stdout
    assert (tmp_path / "elsewhere" / "report.html").exists()


def test_side_by_side_shows_the_worst_and_says_where_the_rest_are(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("\n".join(f"Question {i}: explain clouds." for i in range(12)) + "\n")
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides), out, None, resume=False, side_by_side=None)
    rows = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    changed = [r for r in rows if r["outcome"] != "identical"]
    assert len(changed) >= 3
    html = (out / "report.html").read_text()
    assert html.count('<article class="pair"') == len(changed)
    assert "worst of" not in html

    def report(*args: str) -> cli.Ran:
        return cli.shadowdiff("report", str(out), *args)

    assert report("--side-by-side", "2").returncode == 2
    html, md = (out / "report.html").read_text(), (out / "report.md").read_text()
    assert html.count('<article class="pair"') == 2
    failed = sum(r["outcome"] == "error" for r in changed)
    said = f"The first 2 of {len(changed) - failed} changed pairs, and {min(failed, 2)} of {failed} failed ones"
    assert said in html and said in md
    # the review queue's order: highest priority first, then the worst (errors, lowest similarity)
    rank = {"error": 0, "divergent": 1, "near": 2, "equivalent": 3}
    first = min(changed, key=lambda r: (-r["priority"], rank[r["outcome"]],
                                        r["similarity"] if r["similarity"] is not None else -1.0, r["seq"]))
    assert f'<span class="rank">#1</span> <bdi>{first["key"]}</bdi> — ' in html
    assert f'### 1. `{first["key"]}` — ' in md
    assert len((out / "pairs.jsonl").read_text().splitlines()) == 12    # every pair, whatever is shown
    assert report("--side-by-side", "0").returncode == 2    # incomplete: nobody has reviewed
    html = (out / "report.html").read_text()
    assert '<article class="pair"' not in html and "byte-for-byte identical" not in html
    for bad, message in (("-1", "is negative"), ("many", "is not a number or 'all'")):
        result = report("--side-by-side", bad)
        assert result.returncode == 3 and message in result.stderr, result.stderr


def test_sampled_pairs_never_count_in_the_rates(sides: dict[Side, str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """With --temperature keep, greedy requests (temperature 0, top_k 1) are compared
    and sampled ones are recorded, labelled, and left out of every rate (the progress
    bar's counts too)."""
    log = tmp_path / "log.jsonl"
    bodies = [{"messages": [{"role": "user", "content": f"Explain topic {i} in detail."}], **extra}
              for i, extra in enumerate([{"temperature": 0}, {"top_k": 1, "temperature": 0.7}, {"temperature": 0},
                                         {"temperature": 0.9}, {"temperature": 1.0, "top_p": 0.9}, {}])]
    log.write_text("".join(json.dumps(b) + "\n" for b in bodies))
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides, overrides=Overrides(temperature=None)), out, None, resume=False)
    rows = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert [r["comparable"] for r in rows] == [True, True, True, False, False, False]
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()
    assert any("sampled=3 " in line for line in bar), bar
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["pairs"], summary["comparable"]) == (6, 3)
    greedy = Counter(r["outcome"] for r in rows if r["comparable"])
    assert summary["comparable_outcomes"] == {o: greedy.get(o, 0) for o in summary["outcomes"]}
    changed = greedy["near"] + greedy["divergent"]
    assert summary["substantive_rate"] == pytest.approx(changed / (3 - greedy["error"]))
    assert summary["changed_rate"] == pytest.approx((changed + greedy["equivalent"]) / (3 - greedy["error"]))
    assert sum(summary["noise"].values()) == 3                      # the floor: greedy pairs only
    assert sum(b["pairs"] for b in summary["histogram"]) == changed
    md = (out / "report.md").read_text()
    assert "| sampled (not compared) | 3 | — |" in md
    assert "of 3 comparable pairs" in md and "left out of the changed rate" in md


def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    lines = 60
    log = numbered_log(tmp_path / "log.jsonl", lines)
    out = tmp_path / "out"
    with slow_sides() as (base, cand):
        command = [sys.executable, "-m", "shadowdiff", "replay", str(log), "--baseline", base, "--candidate", cand,
                   "--out", str(out), "--concurrency", "4"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        engine = None
        deadline = time.monotonic() + 60
        stored = 0
        while time.monotonic() < deadline:
            if (out / STORE_FILE).exists():
                engine = engine or sa.create_engine(f"sqlite:///{out / STORE_FILE}")
                try:
                    with engine.connect() as c:
                        stored = c.execute(sa.text("SELECT count(*) FROM pairs")).scalar_one()
                except sa.exc.OperationalError:
                    stored = 0  # tables not created yet
                if stored >= 10:
                    break
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        assert 10 <= stored < lines, "the run must be killed midway"
        resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert "already done" in resumed.stderr
    store = Store.open(out)
    runs = store.runs()
    assert len(runs) == 1
    keys = [p["key"] for p in store.pairs(runs[0].id)]
    assert sorted(keys) == sorted(f"q{i}" for i in range(lines))
    assert len(keys) == len(set(keys))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pairs"] == lines
    store.close()


def test_resume_refuses_another_log(sides: dict[Side, str], tmp_path: Path) -> None:
    first = tmp_path / "a.txt"
    first.write_text("one\n")
    second = tmp_path / "b.txt"
    second.write_text("two\n")
    out = tmp_path / "out"
    run_replay(replay_settings(first, sides), out, None, resume=False)
    with pytest.raises(Exception, match="resume needs the same log"):
        run_replay(replay_settings(second, sides), out, None, resume=True)
    # nor other sides or settings: their pairs would be mixed into the run
    without_replica = {k: v for k, v in sides.items() if k is not Side.REPLICA}
    for other, differ in ((replay_settings(first, without_replica), r"sides \(the URLs and models\)"),
                          (replay_settings(first, sides, overrides=Overrides(max_tokens=8)),
                           r"overrides \(--temperature, --max-tokens, --stream, --logprobs, --extra-body\)"),
                          (replay_settings(first, sides, overrides=Overrides(extra={"seed": 1})), "--extra-body"),
                          (replay_settings(first, sides, redact=("one",)), "--redact")):
        with pytest.raises(Exception, match=f"--resume: .*{differ}.* differ"):
            run_replay(other, out, None, resume=True)
    run_replay(replay_settings(first, sides, labels={"gpu": "H100"}), out, None, resume=True)   # a note only


def test_resume_refuses_a_log_rewritten_or_appended_since_the_run_began(sides: dict[Side, str],
                                                                       tmp_path: Path) -> None:
    """A text log's ids are its line numbers: rewritten in place, a resume would take every
    line for done and PASS on answers to prompts the log no longer holds."""
    log = tmp_path / "log.txt"
    log.write_text("What is 2 + 2?\nName a colour.\n")
    out = tmp_path / "out"
    command = ["replay", str(log), "--baseline", sides[Side.BASELINE], "--candidate", sides[Side.CANDIDATE],
               "--out", str(out), "--gate"]
    cli.shadowdiff(*command)
    fingerprint = {"bytes": log.stat().st_size, "sha256": hashlib.sha256(log.read_bytes()).hexdigest()}
    store = Store.open(out)
    run = store.latest_run("replay")
    assert run is not None
    store.finish_run(run.id, finished=False)    # as a run stopped part-way is left
    store.close()
    log.write_text("Name a river.\nName a sea.\n")
    rewritten = cli.shadowdiff(*command, "--resume")
    assert rewritten.returncode == 3, rewritten.stdout + rewritten.stderr
    assert f"--resume: {log} is not the log the run began with: its contents changed" in rewritten.stderr
    assert "restore it, or start a new run without --resume" in rewritten.stderr
    log.write_text("What is 2 + 2?\nName a colour.\nName a river.\n")
    appended = cli.shadowdiff(*command, "--resume")
    assert appended.returncode == 3 and "it was appended to: 30 bytes when the run began, 44 now" in appended.stderr
    log.write_text("What is 2 + 2?\nName a colour.\n")    # restored: the resume goes on
    restored = cli.shadowdiff(*command, "--resume")
    assert "already done" in restored.stderr and "verdict:" in restored.stdout, restored.stderr
    store = Store.open(out)
    [run] = store.runs()
    store.close()
    assert run.settings["log_fingerprint"] == fingerprint   # recorded when the run began, kept by its resumes


def test_resume_refuses_a_run_that_recorded_no_fingerprint_of_its_log(sides: dict[Side, str],
                                                                      tmp_path: Path) -> None:
    """A run an earlier version began cannot be checked: its resume is refused, not trusted."""
    log = tmp_path / "log.txt"
    log.write_text("What is 2 + 2?\n")
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides), out, None, resume=False)
    with sa.create_engine(f"sqlite:///{out / STORE_FILE}").begin() as c:
        settings = json.loads(c.execute(sa.text("SELECT settings FROM runs")).scalar_one())
        settings.pop("log_fingerprint", None)
        c.execute(sa.text("UPDATE runs SET settings = :s, finished_at = NULL"), {"s": json.dumps(settings)})
    with pytest.raises(ShadowdiffError, match=r"--resume: the run being resumed recorded no fingerprint of .*"
                                              r"start a new run without --resume"):
        run_replay(replay_settings(log, sides), out, None, resume=True)
    run_replay(replay_settings(log, sides), out, None, resume=False)   # a new run is made as ever


def test_completions_logs_replay(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "batch.jsonl"
    log.write_text("".join(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/completions",
                                       "body": {"model": "x", "prompt": f"Once upon a time {i}", "max_tokens": 5}})
                           + "\n" for i in range(5)))
    out = tmp_path / "out"
    run_replay(replay_settings(log, sides), out, None, resume=False)
    store = Store.open(out)
    run = store.latest_run()
    assert run is not None
    pairs = list(store.pairs(run.id))
    assert [p["endpoint"] for p in pairs] == ["/v1/completions"] * 5
    # the log asked for 5 tokens; the replay's max_tokens override (256) won
    assert all((p.answers[Side.BASELINE].completion_tokens or 0) > 5 for p in pairs)
    assert all(p["request"]["max_tokens"] == 256 for p in pairs)  # the request stored is the one sent
    assert CHAT not in {p["endpoint"] for p in pairs}
    store.close()


def test_replay_never_exits_0_when_nothing_was_compared(sides: dict[Side, str], tmp_path: Path) -> None:
    """A base URL under a path the server does not have: every request is a 404, which names
    the URL called; replay exits 1 (nothing compared), and with --gate report's INCOMPLETE.
    (A route's URL given as the base is refused before any request: test_preflight.py.)"""
    log = tmp_path / "log.txt"
    log.write_text("What is 2 + 2?\nName a colour.\n")
    wrong = sides[Side.CANDIDATE] + "/nowhere"
    command = ["replay", str(log), "--baseline", sides[Side.BASELINE],
               "--candidate", wrong, "--candidate-model", "Qwen/Qwen3-8B-FP8", "--retries", "0"]
    result = cli.shadowdiff(*command, "--out", str(tmp_path / "a"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nothing could be compared" in result.stderr and "Traceback" not in result.stderr
    # the pairs were made, never "compared", beside "nothing was compared"
    assert "2 pairs made, 2 with errors" in result.stderr and "pairs compared" not in result.stderr
    # why, on the terminal too, not only in the reports
    assert f"candidate's first error: HTTP 404 from {wrong}/v1/chat/completions" in result.stderr
    [row, *_] = [json.loads(line) for line in (tmp_path / "a" / "pairs.jsonl").read_text().splitlines()]
    error = row["answers"]["candidate"]["error"]
    assert error.startswith(f"HTTP 404 from {wrong}/v1/chat/completions (give each side's base URL"), error
    gated = cli.shadowdiff(*command, "--out", str(tmp_path / "b"), "--gate")
    assert gated.returncode == 2, gated.stderr
    ok = cli.shadowdiff("replay", str(log), "--baseline", sides[Side.BASELINE],
                        "--candidate", sides[Side.REPLICA], "--out", str(tmp_path / "c"), "--gate")
    assert ok.returncode in (0, 2), ok.stderr   # PASS if the replica agreed on both, INCOMPLETE if not
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["acceptance"]["decision"] == (
        "PASS" if ok.returncode == 0 else "INCOMPLETE")
    # a bad option decides nothing: 3, never click's 2 (which would read as INCOMPLETE)
    for bad in (["--timeout", "0"], ["--timeout", "nan"], ["--temperature", "nan"], ["--near", "nan"],
                ["--retries", "-1"], ["--logprobs", "-1"], ["--concurrency", "x"], ["--no-such-option"]):
        usage = cli.shadowdiff(*command, "--out", str(tmp_path / "d"), "--gate", *bad)
        assert usage.returncode == 3, (bad, usage.stderr)



def test_replay_gate_takes_the_confidence_gates(sides: dict[Side, str], tmp_path: Path) -> None:
    """replay --gate decides as report does, with --max-excess-divergence and --max-factual-rate."""
    def replay(out: str, *options: str) -> cli.Ran:   # (not scored: neither gate reads the scores)
        return cli.shadowdiff("replay", str(MT_BENCH), "--baseline",
                              sides[Side.BASELINE], "--candidate", sides[Side.CANDIDATE], "--replica",
                              sides[Side.REPLICA], "--out", str(tmp_path / out), "--max-tokens", "64", "--gate",
                              "--no-score", *options)

    surely = replay("a", "--max-excess-divergence", "0.01")
    excess = json.loads((tmp_path / "a" / "summary.json").read_text())["excess_divergence"]
    assert excess["low"] > 0.01, excess
    assert surely.returncode == 1 and "more answers than the noise floor" in surely.stdout
    # the run keeps its gate: report on the same store decides alike, and says where the gate came from
    reported = cli.shadowdiff("report", str(tmp_path / "a"))
    assert reported.returncode == 1, reported.stdout
    assert "more answers than the noise floor" in reported.stdout
    assert ("max excess divergence 0.01 = 1 point (from the run: replay --max-excess-divergence 0.01)"
            in reported.stdout)
    loose = replay("b", "--max-excess-divergence", "0.99", "--max-factual-rate", "0.05")
    assert loose.returncode == 2                                  # unreviewed, and the bound not yet met
    assert "59 more reviewed pairs without a factual regression" in loose.stdout


def test_a_log_rewritten_while_it_is_replayed_never_passes(sides: dict[Side, str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The log is rewritten in place after the run read it and before it finished: its pairs
    may answer two versions of it. The run says so and is INCOMPLETE, from replay --gate and
    from report alike."""
    from shadowdiff.replay import runner

    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"Topic {i}?"}]})
                           + "\n" for i in range(6)))
    original = runner.Replay.run

    async def run_then_rewrite(self: Any, fmt: Any) -> Any:
        tally = await original(self, fmt)
        log.write_text(log.read_text().replace("Topic 5?", "Topic 9?"))   # the same size, other bytes
        return tally

    monkeypatch.setattr(runner.Replay, "run", run_then_rewrite)
    out = tmp_path / "out"
    verdict = run_replay(replay_settings(log, sides), out, None, resume=False, gates={"min_compared": 1,
                                                                                     "min_reviewed": 0})
    assert verdict.decision.name == "INCOMPLETE"
    assert any("the log changed while the run read it" in r for r in verdict.reasons), verdict.reasons
    report = cli.shadowdiff("report", str(out))
    assert report.returncode == 2 and "the log changed while the run read it" in report.stdout

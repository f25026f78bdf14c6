"""``shadowdiff replay`` on awkward input, run as users run it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.client import RETRY_STATUSES
from shadowdiff.errors import ConfigError
from shadowdiff.simulator import profiles
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import STORE_FILE, Store
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.replaying import numbered_log, slow_sides
from tests.support.servers import HTTP, Recorder, serve_app


def replay(log: Path, sides: dict[Side, str], out: Path, *options: str) -> cli.Ran:
    return cli.shadowdiff("replay", str(log), "--baseline", sides[Side.BASELINE],
                          "--candidate", sides[Side.CANDIDATE], "--out", str(out), *options)


def test_out_is_a_directory_whatever_its_name(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("What is 2 + 2?\n")
    for name in ("results.v2", "results.db"):
        result = replay(log, sides, tmp_path / name)
        assert result.returncode == 0, result.stderr
        assert (tmp_path / name / STORE_FILE).is_file()
        assert json.loads((tmp_path / name / "summary.json").read_text())["pairs"] == 1
        report = cli.shadowdiff("report", str(tmp_path / name))
        assert report.returncode in (0, 2), report.stderr


def report(out: Path, *options: str) -> cli.Ran:
    return cli.shadowdiff("report", str(out), *options)


def test_a_text_log_of_bracketed_prompts_replays_as_text(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "inst.txt"
    log.write_text("[INST] Write a haiku about rivers. [/INST]\n[INST] Name a colour. [/INST]\n")
    result = replay(log, sides, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]
    assert [r["prompt"] for r in rows] == log.read_text().splitlines()


def test_a_log_that_breaks_midway_is_an_error_and_never_passes(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "prompts.json"
    log.write_text('["What is 2 + 2?", "Name a colour.",\n "Name a river." "Name a sea."]')
    out = tmp_path / "out"
    result = replay(log, sides, out)
    assert result.returncode == 1, result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert "the JSON array breaks after item 3" in error and "replay it as a new run, without --resume" in error
    assert "Traceback" not in result.stderr
    # the pairs before the break are kept; the run is unfinished, so no PASS whatever is allowed
    decided = report(out, "--min-reviewed", "0", "--max-errors", "100")
    assert decided.returncode == 2, decided.stdout + decided.stderr
    assert "verdict: INCOMPLETE" in decided.stdout
    assert json.loads((out / "summary.json").read_text())["pairs"] == 3


def test_bytes_not_utf8_part_way_are_incomplete_from_replay_gate_as_from_report(sides: dict[Side, str],
                                                                                 tmp_path: Path) -> None:
    """The run is made and left unfinished: report calls it INCOMPLETE (2), and so must
    replay --gate, not 3 (which says no run was made)."""
    log = tmp_path / "log.txt"
    # blank lines put the bad byte past what format detection reads: the run begins, then breaks
    log.write_bytes(b"What is 2 + 2?\nName a colour.\n" + b"\n" * 12_000 + b"Name \xff river.\nName a sea.\n")
    gated = replay(log, sides, tmp_path / "gated", "--gate")
    assert gated.returncode == 2, gated.stdout + gated.stderr
    assert "line 12003 is not UTF-8" in gated.stderr and "left unfinished (INCOMPLETE)" in gated.stderr
    assert "Traceback" not in gated.stderr
    decided = report(tmp_path / "gated", "--min-reviewed", "0", "--max-errors", "100")
    assert decided.returncode == 2 and "verdict: INCOMPLETE" in decided.stdout, decided.stdout + decided.stderr
    # what to do, as replay said it: a resume would refuse the fixed log
    assert "the run stopped at its log" in decided.stdout and "replay it as a new run" in decided.stdout
    assert "continue it with the same" not in decided.stdout
    plain = replay(log, sides, tmp_path / "plain")
    assert plain.returncode == 1 and "line 12003 is not UTF-8" in plain.stderr, plain.stderr
    # bytes not UTF-8 where detection reads them: no run is made, and both say no decision (3)
    log.write_bytes(b"What is 2 + 2?\nName \xff colour.\n")
    early = replay(log, sides, tmp_path / "early", "--gate")
    assert early.returncode == 3 and "is not UTF-8" in early.stderr, early.stderr
    assert report(tmp_path / "early").returncode == 3


def test_skip_notices_go_to_stderr_in_order(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "bodies.jsonl"
    good = json.dumps({"messages": [{"role": "user", "content": "hello"}]})
    log.write_text("\n".join([good, "{broken", json.dumps({"model": "x"}), good.replace("hello", "hi"),
                              "[1, 2]"]) + "\n")
    result = replay(log, sides, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert not any(line.startswith("line ") for line in result.stdout.splitlines()), result.stdout
    notices = [line for line in result.stderr.splitlines() if line.startswith("line ")]
    assert [n.split(":")[0] for n in notices] == ["line 2", "line 3", "line 5"], result.stderr
    assert result.stderr.index("line 5:") < result.stderr.index("2 pairs made, 3 log lines skipped")


def stored_pairs(out: Path) -> int:
    try:
        store = Store.open_existing(out)
    except ConfigError:   # not there yet, or still being made
        return 0
    try:
        run = store.latest_run()
        return store.count_pairs(run.id) if run else 0
    finally:
        store.close()


def test_ctrl_c_says_how_to_resume_and_leaves_the_run_unfinished(tmp_path: Path) -> None:
    lines = 60
    log = numbered_log(tmp_path / "log.jsonl", lines)
    out = tmp_path / "my results"
    with slow_sides() as (base, cand):
        command = ["replay", str(log), "--baseline", base, "--candidate", cand, "--api-key", "sk-secret-123",
                   "--out", str(out), "--concurrency", "2"]
        # (Ctrl+C's signal as a terminal delivers it: a run started in the background, `nohup
        # .ci/run &`, ignores SIGINT and its children inherit that, as a user's `nohup shadowdiff` should)
        process = subprocess.Popen([sys.executable, "-m", "shadowdiff", *command], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while stored_pairs(out) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert "Aborted!" not in stderr and "Traceback" not in stderr, stderr
        assert "the run is unfinished (report: INCOMPLETE)" in stderr
        [resume] = [line.strip() for line in stderr.splitlines() if line.strip().endswith("--resume")]
        # the API key is left out of what goes to the terminal (and CI logs)
        assert "sk-secret-123" not in stderr
        assert resume.endswith(" ".join([*command[:-6], "--api-key", "'…'", "--out", f"'{out}'", *command[-2:],
                                         "--resume"])), resume
        stored = stored_pairs(out)
        assert 5 <= stored < lines, "the run must be stopped midway"
        store = Store.open_existing(out)
        run = store.latest_run()
        store.close()
        assert run is not None and run.finished_at is None
        decided = report(out, "--min-reviewed", "0")
        assert decided.returncode == 2 and "--resume" in decided.stdout, decided.stdout
        # the report of the unfinished run names the command that continues it, first
        nexts = [line.removeprefix("next: ").split("   (")[0] for line in decided.stdout.splitlines()
                 if line.startswith("next: ")]
        assert nexts and nexts[0] == resume, (nexts, resume)
        resumed = cli.shadowdiff(*command, "--resume")
        assert resumed.returncode == 0, resumed.stderr
    assert stored_pairs(out) == lines


# what the replay's output goes to: a reader that outlives Ctrl+C (`| tee -i`), one that dies
# of it as `| tee` does in a terminal (the pipe then closed under the run), and a file
READERS = {"a pipe": "2>&1 | (trap '' INT; cat > {log})", "a closed pipe": "2>&1 | cat > {log}",
           "a file": "> {log} 2>&1"}


@pytest.mark.parametrize("twice", [False, True], ids=["once", "twice"])
@pytest.mark.parametrize("reader", list(READERS))
def test_ctrl_c_through_a_pipe_stops_at_once_and_stores_what_it_says(tmp_path: Path, reader: str,
                                                                     twice: bool) -> None:
    """Ctrl+C goes to the whole process group, the reader of the pipe too: the run stops with
    130 whatever its output goes to, stores exactly the pairs it says (none made after the
    signal), and a --resume completes it. A second Ctrl+C exits at once, 130 too."""
    lines = 60
    log = numbered_log(tmp_path / "log.jsonl", lines)
    out, output = tmp_path / "out", tmp_path / "output.txt"
    with slow_sides() as (base, cand):
        command = ["replay", str(log), "--baseline", base, "--candidate", cand, "--out", str(out),
                   "--concurrency", "4"]
        # (bash itself traps the signal, so that it outlives a second Ctrl+C that comes after the run
        # exited, to say the run's status: the run's own handling is what is tested; a trap, unlike
        # an ignored signal, is not inherited by the commands it starts)
        shell = ("trap true INT; " + " ".join([sys.executable, "-m", "shadowdiff", *command]) + " "
                 + READERS[reader].format(log=output) + "; exit ${PIPESTATUS[0]}")
        # its own process group, SIGINT as a terminal's Ctrl+C sends it: to every process of the group
        process = subprocess.Popen(["bash", "-c", shell], start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while stored_pairs(out) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        signalled = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        if twice:
            time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) == 130
        print(f"{reader}, {'twice' if twice else 'once'}: out {time.monotonic() - signalled:.2f} s after Ctrl+C")
        stored = stored_pairs(out)
        assert 5 <= stored < lines, "the run must be stopped midway"
        said = output.read_text(errors="replace")
        assert "Traceback" not in said and "Exception ignored" not in said, said
        if reader != "a closed pipe" and not twice:
            assert re.search(f"interrupted: {stored} pairs? stored", said), said     # what it said is what it stored
            assert said.rstrip().endswith("--resume"), said
        resumed = cli.shadowdiff(*command, "--resume")
        assert resumed.returncode == 0, resumed.stderr
    assert stored_pairs(out) == lines


MT_BENCH = Path(__file__).resolve().parents[2] / "examples" / "mt_bench_questions.jsonl"


def first_turn_fails(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return len(messages) == 1 and "FAIL THE FIRST TURN" in messages[0]["content"]


@pytest.fixture(scope="module")
def recorded() -> Iterator[tuple[dict[Side, str], dict[Side, Recorder]]]:
    """A baseline and a candidate that keep every request they get (the baseline refuses a
    conversation's first turn when it says FAIL THE FIRST TURN)."""
    recorders = {Side.BASELINE: Recorder(build_app(SimulatorSettings(served_model_names=("Qwen/Qwen3-8B",))),
                                         fail=first_turn_fails),
                 Side.CANDIDATE: Recorder(build_app(SimulatorSettings(served_model_names=("Qwen/Qwen3-8B-FP8",),
                                                                      profile=profiles.builtin("fp8"))))}
    with serve_app(recorders[Side.BASELINE]) as base, serve_app(recorders[Side.CANDIDATE]) as cand:
        yield {Side.BASELINE: base, Side.CANDIDATE: cand}, recorders


def sent(recorder: Recorder) -> list[dict[str, Any]]:
    bodies = [body for path, body in recorder.seen if path.endswith("/completions")]
    recorder.seen.clear()
    return bodies


def test_the_stored_request_is_what_was_sent(recorded: tuple[dict[Side, str], dict[Side, Recorder]],
                                             tmp_path: Path) -> None:
    urls, recorders = recorded
    log = tmp_path / "bodies.jsonl"
    log.write_text("".join(json.dumps({"id": f"q{i}", "model": "the-log's-model", "temperature": 0.7,
                                       "max_completion_tokens": 400,
                                       "messages": [{"role": "user", "content": f"Explain topic {i} in detail."}]})
                           + "\n" for i in range(8)))
    sent(recorders[Side.BASELINE]), sent(recorders[Side.CANDIDATE])
    out = tmp_path / "out"
    # (not scored: the requests the replay makes are the subject, not teacher forcing's)
    result = replay(log, urls, out, "--concurrency", "1", "--no-score")
    assert result.returncode == 0, result.stderr
    to_baseline, to_candidate = sent(recorders[Side.BASELINE]), sent(recorders[Side.CANDIDATE])
    rows = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert [row["request"] for row in rows] == to_baseline     # the model name included: the baseline's
    assert to_candidate == [{**body, "model": "Qwen/Qwen3-8B-FP8"} for body in to_baseline]
    assert {(r["request"]["temperature"], r["request"]["max_completion_tokens"]) for r in rows} == {(0, 256)}
    # report.html's request view shows the same settings, for every pair (the identical ones on demand)
    changed = sum(row["outcome"] != "identical" for row in rows)
    assert changed and (out / "report.html").read_text().count(
        "sent with <bdi>temperature 0.0, n 1, max_completion_tokens 256</bdi>") == len(rows)


def test_turn_n_sends_the_conversation_up_to_it(recorded: tuple[dict[Side, str], dict[Side, Recorder]],
                                                tmp_path: Path) -> None:
    urls, recorders = recorded
    questions = [json.loads(line) for line in MT_BENCH.read_text().splitlines()[:3]]
    questions.append({"question_id": 999, "category": "test", "turns": ["FAIL THE FIRST TURN", "And then?"]})
    log = tmp_path / "questions.jsonl"
    log.write_text("".join(json.dumps(q) + "\n" for q in questions))
    sent(recorders[Side.BASELINE]), sent(recorders[Side.CANDIDATE])
    out = tmp_path / "out"
    result = replay(log, urls, out, "--turn", "2", "--retries", "0", "--concurrency", "1", "--no-score")
    assert result.returncode == 0, result.stderr
    to_baseline, to_candidate = sent(recorders[Side.BASELINE]), sent(recorders[Side.CANDIDATE])
    rows = {row["key"]: row for row in map(json.loads, (out / "pairs.jsonl").read_text().splitlines())}
    for question in questions[:3]:
        first, second = question["turns"]
        [asked] = [b for b in to_baseline if b["messages"] == [{"role": "user", "content": first}]]
        # the baseline's answer to turn 1, under the replay's overrides, as anyone asking it gets it
        again = HTTP.post(urls[Side.BASELINE] + "/v1/chat/completions",
                          json={**asked, "stream": False, "stream_options": None}).json()
        history = [{"role": "user", "content": first},
                   {"role": "assistant", "content": again["choices"][0]["message"]["content"]},
                   {"role": "user", "content": second}]
        [base_body] = [b for b in to_baseline if b["messages"] == history]
        [cand_body] = [b for b in to_candidate if b["messages"] == history]
        assert cand_body == {**base_body, "model": "Qwen/Qwen3-8B-FP8"}
        row = rows[str(question["question_id"])]
        assert row["request"] == base_body and row["prompt"] == second
        assert (asked["temperature"], asked["max_tokens"]) == (0, 256)
    # an earlier turn that fails makes the pair an error, recorded with what went wrong
    failed = rows["999"]
    assert failed["outcome"] == "error"
    assert failed["answers"]["candidate"]["error"].startswith(
        "turn 1, asked of the baseline for the conversation's history, failed: HTTP 500")
    assert not [b for b in to_candidate if "And then?" in json.dumps(b)]


@pytest.mark.parametrize(("log", "options", "message"), [
    ("log.txt", ("--turn", "2"), "only question logs (with turns) have turns; this log is text"),
    ("questions.jsonl", ("--turn", "2", "--endpoint", "completions"), "needs the chat endpoint"),
])
def test_a_turn_that_cannot_be_sent_is_refused(sides: dict[Side, str], tmp_path: Path, log: str,
                                               options: tuple[str, ...], message: str) -> None:
    path = tmp_path / log
    path.write_text(MT_BENCH.read_text().splitlines()[0] + "\n" if log.endswith(".jsonl") else "Hello\n")
    result = replay(path, sides, tmp_path / "out", *options)
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_help_and_docs_say_what_is_retried_and_which_model_is_sent() -> None:
    statuses = sorted(RETRY_STATUSES)
    said = ", ".join(map(str, statuses[:-1])) + f" and {statuses[-1]}"       # "429, 502, 503 and 504"
    help_text = " ".join(cli.shadowdiff("replay", "--help").stdout.split())
    assert f"Retries of HTTP {said}, timeouts, connection failures and streams cut short" in help_text
    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text().split())
    assert f"HTTP {said}, timeouts, connection failures and streams cut short are retried (`--retries 3`" in page
    for side in ("baseline", "candidate"):
        assert (f"--{side}-model TEXT Model name sent to the {side} (default: the log's, or the one model the "
                f"server serves)") in help_text
    assert "--replica-model TEXT Model name sent to the replica (default: --baseline-model, or as for the " \
           "baseline)" in help_text


def test_a_resume_never_takes_a_later_line_with_a_stored_id_for_done(sides: dict[Side, str],
                                                                      tmp_path: Path) -> None:
    """Line 1 stored, then the run killed before line 6, which repeats line 1's id: the
    resume must count line 6 as skipped (a duplicate), as an uninterrupted run does, not
    as done - it was never compared. And a resume reading the log again notes each
    skipped line once (a hostile review's finding)."""
    import sqlite3

    log = numbered_log(tmp_path / "log.jsonl", 5)
    with log.open("a") as f:
        f.write(json.dumps({"id": "q0", "messages": [{"role": "user", "content": "another prompt"}]}) + "\n")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "shadowdiff", "replay", str(log), "--baseline", sides[Side.BASELINE],
               "--candidate", sides[Side.REPLICA], "--candidate-model", "Qwen/Qwen3-8B", "--out", str(out)]
    assert subprocess.run(command, capture_output=True, text=True, timeout=120).returncode == 0
    whole = report(out, "--min-reviewed", "0")
    assert whole.returncode == 2 and "1 log lines made no pair (skipped)" in whole.stdout, whole.stdout
    # as if killed after line 1's pair was stored and before line 6 was read
    with sqlite3.connect(out / STORE_FILE) as db:
        db.execute("DELETE FROM skipped")
        db.execute("UPDATE runs SET finished_at = NULL")
    for _ in range(2):
        resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert "line 6: duplicate id 'q0': line 1 has it" in resumed.stderr
        decided = report(out, "--min-reviewed", "0")
        assert decided.returncode == 2 and "1 log lines made no pair (skipped)" in decided.stdout, decided.stdout


def test_the_resume_hint_leaves_out_passwords_in_urls() -> None:
    """The store's URL (and a side's) may carry a password: it goes to a terminal as ``…``."""
    import click

    from shadowdiff.replay.cli import _ARGV, _resume_command

    context = click.Context(click.Command("replay"), info_name="replay")
    context.meta[_ARGV] = ["log.jsonl", "--store", "postgresql://ci:S3cret@db:5432/shadow", "--baseline",
                           "http://u:p4ss@bf16:8000", "--api-key=sk-1"]
    hint = _resume_command(context)
    assert "S3cret" not in hint and "p4ss" not in hint and "sk-1" not in hint
    assert hint == ("replay log.jsonl --store 'postgresql://ci:…@db:5432/shadow' --baseline 'http://u:…@bf16:8000' "
                    "'--api-key=…' --resume")


@pytest.mark.parametrize(("where", "said"), [
    ("shadowdiff.replay.logs.count", "interrupted: 0 pairs stored; the run is unfinished (report: INCOMPLETE)"),
    ("shadowdiff.report.write.write_reports", "interrupted while the reports were written: every pair is stored "
                                               "and the run finished; write them with:"),
])
def test_ctrl_c_before_the_pairs_or_after_them_says_what_is_stored(tmp_path: Path, where: str, said: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    module, _, name = where.rpartition(".")
    monkeypatch.setattr(f"{module}.{name}", interrupted)
    log = numbered_log(tmp_path / "log.jsonl", 3)
    with slow_sides() as (base, cand):
        ran = cli.shadowdiff("replay", str(log), "--baseline", base, "--candidate", cand, "--out",
                             str(tmp_path / "out"))
    assert ran.returncode == 130 and said in ran.stderr, ran.stderr
    assert "nothing was stored" not in ran.stderr

"""Reference answers end to end: a replay against simulators on loopback, graded, its flips
in summary.json, first in the review queue, and the gate on them.

The references are patterns built from what the simulators answer (their text depends
only on the prompt, the profile and the seed, so the test computes it first): a word only
the baseline's answer has makes a correct→wrong flip, a word only the candidate's has a
wrong→correct one, a word both have a pair both get right.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.replay.cli import run_replay
from shadowdiff.simulator import profiles
from shadowdiff.simulator.prompts import render_chat
from shadowdiff.simulator.sampling import Generator, Sampling
from shadowdiff.simulator.vocab import vocabulary
from shadowdiff.store import STORE_FILE, Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.vocabulary import Decision, Side
from tests.support import cli
from tests.support.replaying import replay_settings

PROMPTS = [f"Question {i}: what is the capital, and why?" for i in range(30)]


def _answers(prompt: str) -> dict[Side, str]:
    """What the three simulators of ``conftest.sides`` answer (at replay's 256-token cap)."""
    vocab = vocabulary()
    rendered = render_chat([{"role": "user", "content": prompt}])
    sampling = Sampling(prompt=rendered, prompt_ids=tuple(vocab.ids(rendered)), max_tokens=256)
    made = {Side.BASELINE: ("baseline", 0), Side.CANDIDATE: ("fp8", 0), Side.REPLICA: ("baseline", 1)}
    return {side: Generator(profiles.builtin(p), seed, vocab).generate(sampling)[0].text
            for side, (p, seed) in made.items()}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]{3,}", text.lower()))


def _has(text: str, word: str) -> bool:
    return re.search(rf"\b{word}\b", text, re.IGNORECASE) is not None


def _plan() -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[Side, bool]]]:
    """The log (bodies, some with a reference), the references file's (by id), and each
    graded prompt's expected grade per side."""
    lines, in_file, expected = [], {}, {}
    flipped = 0
    for i, prompt in enumerate(PROMPTS):
        answers = _answers(prompt)
        base, cand = _words(answers[Side.BASELINE]), _words(answers[Side.CANDIDATE])
        # each way a pair can be graded, taking turns where a pair allows both flips
        ways = [pool for pool in ((base - cand, cand - base) if flipped % 2 else (cand - base, base - cand)) if pool]
        flipped += bool(ways)
        pool = sorted(ways[0] if ways else base & cand if i % 3 else ())   # every third unflipped: no reference
        line: dict[str, Any] = {"id": f"q{i}", "messages": [{"role": "user", "content": prompt}]}
        if pool:
            reference = rf"\b{pool[0]}\b"
            expected[f"q{i}"] = {side: _has(text, pool[0]) for side, text in answers.items()}
            if i % 2:
                in_file[f"q{i}"] = reference
                if i % 4 == 1:   # the log has one too, which the file overrides
                    line |= {"reference": "nothing-like-this", "grader": "exact"}
            else:
                line |= {"reference": reference, "grader": "regex"}
        lines.append(line)
    return lines, in_file, expected


def _write(tmp_path: Path) -> tuple[Path, Path, dict[str, dict[Side, bool]]]:
    lines, in_file, expected = _plan()
    log, refs = tmp_path / "log.jsonl", tmp_path / "refs.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    refs.write_text("".join(json.dumps({"id": key, "reference": ref, "grader": "regex"}) + "\n"
                            for key, ref in in_file.items()) + json.dumps({"id": "q-gone", "reference": "x"}) + "\n")
    return log, refs, expected


def _mcnemar(b: int, c: int) -> float:
    n = b + c
    return 1.0 if not n else min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n)


def test_a_replay_with_references_counts_its_flips_and_queues_them_first(
        sides: dict[Side, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, refs, expected = _write(tmp_path)
    flips = [k for k, e in expected.items() if e[Side.BASELINE] != e[Side.CANDIDATE]]
    c2w = sum(e[Side.BASELINE] and not e[Side.CANDIDATE] for e in expected.values())
    w2c = sum(e[Side.CANDIDATE] and not e[Side.BASELINE] for e in expected.values())
    assert c2w >= 3 and w2c >= 3 and len(expected) - len(flips) >= 3, expected   # the plan found its cases
    out = tmp_path / "out"
    verdict = run_replay(replay_settings(log, sides, references=refs), out, None, resume=False,
                         gates={"max_flips": 0})
    assert verdict.decision is Decision.FAIL
    assert any(f"{c2w} correct→wrong flips" in reason for reason in verdict.reasons)
    warned = capsys.readouterr().err
    assert "1 of the" in warned and "'q-gone'" in warned and "match no record" in warned
    assert "records have a reference or grader in the log and a reference in" in warned

    summary = json.loads((out / "summary.json").read_text())
    got = summary["flips"]
    assert got["graded"] == len(expected) == got["references"]
    assert got["baseline_correct"] == sum(e[Side.BASELINE] for e in expected.values())
    assert got["candidate_correct"] == sum(e[Side.CANDIDATE] for e in expected.values())
    assert (got["correct_to_wrong"], got["wrong_to_correct"]) == (c2w, w2c)
    assert got["mcnemar_p"] == pytest.approx(_mcnemar(c2w, w2c))
    assert got["graders"] == {"regex": len(expected)}
    noise = got["noise"]
    assert noise["correct_to_wrong"] == sum(e[Side.BASELINE] and not e[Side.REPLICA] for e in expected.values())
    assert noise["wrong_to_correct"] == sum(e[Side.REPLICA] and not e[Side.BASELINE] for e in expected.values())
    assert summary["settings"]["grading"]["references"] == str(refs.resolve())
    assert f"| correct→wrong flips | {c2w} |" in (out / "report.md").read_text()

    store = Store.open(out / STORE_FILE)
    try:
        rows = ReviewQueue(store).page(Filters(), limit=100)
        assert {r["key"] for r in rows[:len(flips)]} == set(flips)          # every flipped pair first
        assert min(r["priority"] for r in rows[:len(flips)]) > max(r["priority"] for r in rows[len(flips):])
        graded = {p["key"]: p for p in store.pairs(summary["run_id"]) if p["grade"]}
        assert {k: {s: graded[k]["grade"][s.value] for s in Side} for k in graded} == expected
        # the file's reference won over the log's own on q1 (the log's would grade both sides wrong)
        assert graded["q1"]["grade"]["grader"] == "regex"
    finally:
        store.close()


def test_replay_gate_on_flips(sides: dict[Side, str], tmp_path: Path) -> None:
    log, refs, _ = _write(tmp_path)

    def replay(out: str, log: Path, *options: str) -> cli.Ran:
        return cli.shadowdiff("replay", str(log), "--baseline",
                              sides[Side.BASELINE], "--candidate", sides[Side.CANDIDATE], "--out",
                              str(tmp_path / out), "--gate", *options)

    failed = replay("a", log, "--references", str(refs), "--max-flips", "0")
    assert failed.returncode == 1, failed.stderr
    assert "correct→wrong flips" in failed.stdout and "above --max-flips 0" in failed.stdout
    loose = replay("b", log, "--references", str(refs), "--max-flips", "1000")
    assert loose.returncode == 2 and "above --max-flips" not in loose.stdout   # only the reviews are missing
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": p}]}) + "\n"
                             for i, p in enumerate(PROMPTS[:4])))
    ungraded = replay("c", plain, "--max-flips", "0")
    assert ungraded.returncode == 2 and "--max-flips needs pairs graded against a reference answer" in ungraded.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "q1", "reference": "a(b", "grader": "regex"}) + "\n")
    refused = replay("d", log, "--references", str(bad))
    assert refused.returncode == 3 and "bad.jsonl, line 1: the reference 'a(b' is not a valid regular expression" \
        in refused.stderr
    assert not (tmp_path / "d" / STORE_FILE).exists()      # refused before anything was sent or stored


def test_report_decides_as_replay_gate_did_with_the_gates_stored_with_the_run(
        sides: dict[Side, str], tmp_path: Path) -> None:
    """The gates given to replay are the run's: report on the same store exits as replay
    --gate did, before the reviews and after them (reviews cannot hide a flip the run's
    --max-flips counts), and a flag given to report overrides the run's, saying so."""
    log, refs, expected = _write(tmp_path)
    c2w = sum(e[Side.BASELINE] and not e[Side.CANDIDATE] for e in expected.values())
    out = tmp_path / "out"
    replayed = cli.shadowdiff("replay", str(log), "--baseline", sides[Side.BASELINE], "--candidate",
                              sides[Side.CANDIDATE], "--out", str(out), "--references", str(refs), "--max-flips", "0",
                              "--min-reviewed", "0.5", "--gate")
    assert replayed.returncode == 1, replayed.stderr
    assert "max flips 0 (from the run: replay --max-flips 0)" in replayed.stdout

    def report(*options: str) -> cli.Ran:
        return cli.shadowdiff("report", str(out), *options)

    before = report()
    assert before.returncode == 1, before.stdout
    assert f"{c2w} correct→wrong flips" in before.stdout and "above --max-flips 0" in before.stdout
    assert "max flips 0 (from the run: replay --max-flips 0)" in before.stdout
    assert "min reviewed 0.5 = 50 % (from the run: replay --min-reviewed 0.5)" in before.stdout
    assert "max errors 0 (default)" in before.stdout
    store = Store.open(out / STORE_FILE)
    try:
        queue = ReviewQueue(store)
        for row in queue.page(Filters(), limit=100):
            queue.add_review(row["id"], "ana", "wording")
    finally:
        store.close()
    reviewed = report()
    assert reviewed.returncode == 1, reviewed.stdout          # every pair reviewed: the flips still count
    assert "above --max-flips 0" in reviewed.stdout
    loosened = report("--max-flips", "1000")
    assert loosened.returncode == 0, loosened.stdout
    assert "max flips 1000 (given to report, over the run's --max-flips 0)" in loosened.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["acceptance"]["gates"]["max_flips"] | {"text": ""} == {
        "flag": "--max-flips", "value": 1000, "source": "given, over the run's", "command": "report", "stored": 0,
        "text": ""}
    assert summary["acceptance"]["gates"]["min_reviewed"]["source"] == "from the run"
    for name in ("report.md", "report.html"):
        text = (out / name).read_text()
        assert "max flips 1000 (given to report, over the run&#39;s --max-flips 0)" in text \
            or "max flips 1000 (given to report, over the run's --max-flips 0)" in text, name
        assert "min reviewed 0.5 = 50 % (from the run: replay --min-reviewed 0.5)" in text, name


def test_the_same_server_as_both_sides_is_refused_unless_asked_for(sides: dict[Side, str], tmp_path: Path) -> None:
    """One server and model as baseline and candidate agree on everything: refused as a
    slip, unless --allow-same-target (to measure its noise), and the report then says so.
    Nothing wrong in the run: replay --gate and report both PASS."""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": p}]}) + "\n"
                           for i, p in enumerate(PROMPTS)))
    base = sides[Side.BASELINE]

    def replay(out: str, candidate: str, *options: str) -> cli.Ran:
        return cli.shadowdiff("replay", str(log), "--baseline", base, "--candidate", candidate, "--out",
                              str(tmp_path / out), "--no-score", "--gate", *options)

    port = base.rsplit(":", 1)[1].rstrip("/")
    for candidate in (base, base + "/", base.replace("http://", "HTTP://").rstrip("/") + "/",
                      # the /v1 shadowdiff adds anyway, a dot segment, another name of the same host
                      base.rstrip("/") + "/v1", base.rstrip("/") + "/./v1/", f"http://localhost:{port}",
                      # addresses a connection reaches this machine through
                      f"http://0.0.0.0:{port}", f"http://[::ffff:127.0.0.1]:{port}"):
        refused = replay("a", candidate)
        assert refused.returncode == 3, refused.stderr
        assert "the baseline and the candidate are the same server and model" in refused.stderr
        assert "--allow-same-target" in refused.stderr
    assert not (tmp_path / "a" / STORE_FILE).exists()
    # the candidate as its own replica: the noise floor would be the candidate's own changes
    replica = replay("a", sides[Side.CANDIDATE], "--replica", sides[Side.CANDIDATE].rstrip("/") + "/v1")
    assert replica.returncode == 3 and "the replica and the candidate are the same server" in replica.stderr
    assert not (tmp_path / "a" / STORE_FILE).exists()
    noise = replay("b", base + "/", "--allow-same-target")
    assert noise.returncode == 0, noise.stdout + noise.stderr
    assert "same server and model" in noise.stdout
    report = cli.shadowdiff("report", str(tmp_path / "b"))
    assert report.returncode == 0, report.stdout
    assert "same server and model" in report.stdout and "same server and model" in \
        (tmp_path / "b" / "report.md").read_text()

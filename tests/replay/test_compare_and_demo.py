"""``shadowdiff compare`` on saved answer files, and ``shadowdiff demo``."""

from __future__ import annotations

import json
from pathlib import Path

from shadowdiff.replay.answers import BadAnswer, SavedAnswer, read
from shadowdiff.store import Store
from tests.support import cli
from tests.support.demo import Demo

ANSWERS = ["The answer is 42.", "Paris is the capital of France.", "Use a hash map.\n\nIt is O(1)."]
CHANGED = ["The answer is 43.", "Paris is the capital of France.", "Use a hash map.\nIt is O(1)."]


def run(*args: str) -> cli.Ran:
    return cli.shadowdiff(*args)


def test_lists_of_strings(tmp_path: Path) -> None:
    a, b = tmp_path / "baseline.json", tmp_path / "candidate.json"
    a.write_text(json.dumps(ANSWERS))
    b.write_text(json.dumps(CHANGED))
    result = run("compare", str(a), str(b), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "3 pairs: 3 compared (1 identical, 1 equivalent, 1 near, 0 divergent), 0 errors" in result.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["kind"] == "compare"
    assert json.loads((tmp_path / "out" / "candidate.texts.json").read_text()) == CHANGED


def test_jsonl_with_ids_and_batch_output(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(ANSWERS)))
    b = tmp_path / "b.jsonl"
    rows = [{"id": f"vllm-{i}", "custom_id": f"q{i}", "response": {"status_code": 200, "request_id": "x", "body": {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "total_tokens": 8, "completion_tokens": 5}}}, "error": None}
        for i, t in enumerate(reversed(CHANGED))]
    rows.append({"id": "vllm-x", "custom_id": "q9", "response": {"status_code": 400, "request_id": "y",
                                                                "body": None}, "error": {"error": {"message": "bad"}}})
    b.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parsed = list(read(b))
    assert isinstance(parsed[0], SavedAnswer)
    assert parsed[0].completion_tokens == 5
    assert parsed[-1].error is not None
    result = run("compare", str(a), str(b), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    # matched by id, not by position: q0's candidate answer is the last row; q9 has no partner
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["pairs"] == 4 and summary["outcomes"]["error"] == 1
    assert "1 unpartnered pairs, counted as errors" in result.stdout
    store = Store.open(tmp_path / "out")
    run_ = store.latest_run("compare")
    assert run_ is not None
    outcomes = {p["key"]: p["outcome"] for p in store.pairs(run_.id)}
    store.close()
    assert outcomes["q0"] == "divergent"  # "The answer is 42." vs "Use a hash map..."


def test_answers_without_a_partner_are_errored_pairs_and_no_two_records_merge(tmp_path: Path) -> None:
    """An answer only in A and one only in B on the same line, and a bad line of each on
    the same line: four records, none merged into another, every one counted against
    --max-errors (it counted one of each line, and a gate allowing some passed)."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"id": key, "text": "same"}) + "\n" for key in ("q1", "a-only-1", "a-only-2"))
                 + "not json\n" + json.dumps({"id": "q1", "text": "again"}) + "\n")
    b.write_text("".join(json.dumps({"id": key, "text": "same"}) + "\n" for key in ("q1", "b-only-1", "b-only-2"))
                 + "{broken\n")
    out = tmp_path / "out"
    result = run("compare", str(a), str(b), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert ("4 unpartnered pairs, counted as errors (--max-errors): 2 answers in a.jsonl have none in b.jsonl (the "
            "candidate's missing), 2 in b.jsonl have none in a.jsonl (the baseline's missing)") in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["unpartnered"] == {"no_candidate_answer": 2, "no_baseline_answer": 2}
    assert summary["pairs"] == 5 and summary["outcomes"]["error"] == 4 and summary["acceptance"]["errors"] == 4
    assert sorted(summary["skipped"], key=lambda s: s["reason"]) == [
        {"line": 5, "reason": "a.jsonl: duplicate id 'q1'"},
        {"line": 4, "reason": "a.jsonl: not valid JSON: Expecting value: line 1 column 1 (char 0)"},
        {"line": 4, "reason": "b.jsonl: not valid JSON: Expecting property name enclosed in double quotes: line 1 "
                              "column 2 (char 1)"}]
    rows = {row["key"]: row for row in map(json.loads, (out / "pairs.jsonl").read_text().splitlines())}
    missing = {key: {side: answer["error"] for side, answer in row["answers"].items() if answer["error"]}
               for key, row in rows.items() if row["outcome"] == "error"}
    assert missing == {
        "a-only-1": {"candidate": "unpartnered: no answer with id 'a-only-1' in b.jsonl (the candidate's file)"},
        "a-only-2": {"candidate": "unpartnered: no answer with id 'a-only-2' in b.jsonl (the candidate's file)"},
        "b-only-1": {"baseline": "unpartnered: no answer with id 'b-only-1' in a.jsonl (the baseline's file)"},
        "b-only-2": {"baseline": "unpartnered: no answer with id 'b-only-2' in a.jsonl (the baseline's file)"}}
    assert "unpartnered: no answer with id 'b-only-2' in a.jsonl" in (out / "report.md").read_text()
    # 4 unpartnered and 3 skipped lines: 7 against --max-errors, which fails by default
    lenient = ("--min-reviewed", "0", "--min-compared", "1")
    assert run("report", str(out), *lenient).returncode == 2
    decided = run("report", str(out), *lenient, "--max-errors", "6")
    assert decided.returncode == 2 and "4 pairs could not be compared (errors)" in decided.stdout, decided.stdout
    assert run("report", str(out), *lenient, "--max-errors", "7").returncode == 0
    # compare --gate exits with the verdict, as report does, and keeps its gates with the run
    gated = run("compare", str(a), str(b), "--out", str(tmp_path / "gated"), "--gate")
    assert gated.returncode == 2 and "verdict: INCOMPLETE" in gated.stdout, gated.stdout
    gated = run("compare", str(a), str(b), "--out", str(tmp_path / "kept"), "--gate", *lenient, "--max-errors", "7")
    assert gated.returncode == 0, gated.stdout
    kept = run("report", str(tmp_path / "kept"))
    assert kept.returncode == 0 and "max errors 7 (from the run: compare --max-errors 7)" in kept.stdout, kept.stdout
    missing_file = run("compare", str(a), str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "x"), "--gate")
    assert missing_file.returncode == 3   # no decision: click's 2 would read as INCOMPLETE


def test_bad_answer_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\nnot json\n')
    parsed = list(read(bad))
    # an id without a text is an errored answer (its pair counts as an error); no id: skipped
    assert isinstance(parsed[0], SavedAnswer) and parsed[0].error is not None and isinstance(parsed[1], BadAnswer)
    empty = tmp_path / "empty.json"
    empty.write_text("")
    result = run("compare", str(empty), str(bad), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "is empty" in result.stderr
    a = tmp_path / "a.json"
    a.write_text(json.dumps(["x"]))
    result = run("compare", str(a), str(bad), "--out", str(tmp_path / "out2"))
    assert result.returncode == 1
    assert "nothing to compare" in result.stderr


def test_demo_runs_everything_and_stops_it(demo: Demo) -> None:
    result = demo.ran
    assert result.returncode == 0, result.stderr
    assert "20 pairs:" in result.stdout
    assert "noise floor" in result.stdout
    assert "simulated servers stopped" in result.stderr
    assert "test doubles" in result.stderr
    report = demo.out / "report.html"
    assert f"report: {report}" in result.stdout
    summary = json.loads((demo.out / "summary.json").read_text())
    assert summary["pairs"] == 20
    assert {c["category"] for c in summary["categories"]} == {
        "reasoning", "code", "summarization", "translation", "extraction", "classification", "math",
        "instruction following"}
    # the servers it started are gone
    assert len(demo.servers) == 3
    assert demo.listening == ()


def test_the_same_answers_as_both_sides_are_refused(tmp_path: Path) -> None:
    """One file given twice (or a copy of it) would PASS without a candidate: refused, with
    --gate as no decision, unless --allow-same-target."""
    a = tmp_path / "a.json"
    a.write_text(json.dumps([f"Answer {i}." for i in range(40)]))
    copy = tmp_path / "copy.json"
    copy.write_bytes(a.read_bytes())
    for b in (a, copy):
        refused = run("compare", str(a), str(b), "--out", str(tmp_path / "out"), "--gate")
        assert refused.returncode == 3 and "hold the same bytes" in refused.stderr, refused.stderr
    allowed = run("compare", str(a), str(copy), "--out", str(tmp_path / "out"), "--gate", "--allow-same-target")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr

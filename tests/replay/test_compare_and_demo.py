"""``shadowdiff compare`` on saved answer files, and ``shadowdiff demo``."""

from __future__ import annotations

import json
from pathlib import Path

from replay.answers import BadAnswer, SavedAnswer, read
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
    assert "3 pairs: 1 identical, 1 equivalent, 1 near, 0 divergent, 0 error" in result.stdout
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
    # matched by id, not by position: q0's candidate answer is the last row
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["pairs"] == 3
    assert "1 answers had no partner" in result.stderr
    store = Store.open(tmp_path / "out")
    run_ = store.latest_run("compare")
    assert run_ is not None
    outcomes = {p["key"]: p["outcome"] for p in store.pairs(run_.id)}
    store.close()
    assert outcomes["q0"] == "divergent"  # "The answer is 42." vs "Use a hash map..."


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

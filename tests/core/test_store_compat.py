"""A store written by an earlier shadowdiff opens and reports what that version reported.

``data/store-0.1.0.sql`` is a SQLite store (schema 0004) written by shadowdiff 0.1.0
before the core moved out of ``proxy/`` and ``replay/``: a replay run (a malformed log
line, candidate errors, a replica, a label), a proxy's serve run (sampled pairs,
run counts), a compare run, reviews (two reviewers disagreeing, factual verdicts
against each side) and judge suggestions. ``data/store-0.1.0/<run>/`` holds what
``shadowdiff report`` of that version wrote for each run. Every value that version
reported must be reported again, unchanged; a later version may add to the reports,
never alter or drop what was there.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.store import Store

DATA = Path(__file__).parent / "data"
# run kind -> (run id, the decision that version's report exited with)
RUNS = {
    "replay": ("428bf49e5695454f84eb1a123017e72a", 1),    # FAIL: a factual verdict against the candidate
    "serve": ("f31a9e8717a740ec83a0ede9c85470de", 2),     # INCOMPLETE
    "compare": ("af471652e2c048548c083190f7964e47", 2),   # INCOMPLETE
}


def old_store(directory: Path) -> Path:
    path = directory / "shadowdiff.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript((DATA / "store-0.1.0.sql").read_text(encoding="utf-8"))
    connection.close()
    return path


def contains(actual: Any, expected: Any, where: str = "") -> list[str]:
    """Where ``actual`` lacks or alters something of ``expected`` (dicts may have gained keys)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: {actual!r} is no longer an object"]
        return [problem for key, value in expected.items()
                for problem in (contains(actual[key], value, f"{where}.{key}") if key in actual
                                else [f"{where}.{key}: missing"])]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: {actual!r} != {expected!r}"]
        return [problem for i, (a, e) in enumerate(zip(actual, expected, strict=True))
                for problem in contains(a, e, f"{where}[{i}]")]
    return [] if actual == expected else [f"{where}: {actual!r} != {expected!r}"]


def test_the_old_store_opens_at_the_current_schema(tmp_path: Path) -> None:
    store = Store.open_existing(old_store(tmp_path))
    try:
        assert [run.kind for run in store.runs()] and store.revision() is not None
        assert {run.id for run in store.runs()} == {run_id for run_id, _ in RUNS.values()}
    finally:
        store.close()


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_an_old_store_reports_what_it_reported(tmp_path: Path, kind: str) -> None:
    run_id, decision = RUNS[kind]
    path, out = old_store(tmp_path), tmp_path / "report"
    result = subprocess.run([sys.executable, "-m", "shadowdiff", "report", str(path), "--run", run_id,
                             "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == decision, result.stdout + result.stderr
    expected = DATA / "store-0.1.0" / kind

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert contains(summary, json.loads((expected / "summary.json").read_text(encoding="utf-8"))) == []

    rows = [json.loads(line) for line in (out / "pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    old_rows = [json.loads(line) for line in (expected / "pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert contains(rows, old_rows) == []

    with (out / "pairs.csv").open(encoding="utf-8", newline="") as new, \
            (expected / "pairs.csv").open(encoding="utf-8", newline="") as old:
        assert contains(list(csv.DictReader(new)), list(csv.DictReader(old))) == []

    for name in ("baseline.texts.json", "candidate.texts.json"):
        assert (out / name).read_text(encoding="utf-8") == (expected / name).read_text(encoding="utf-8")


def test_the_comparison_of_reports_can_fail() -> None:
    old = {"outcomes": {"near": 8, "error": 6}, "skipped": [[6, "not valid JSON"]]}
    assert contains({**old, "new": 1}, old) == []
    assert contains({"outcomes": {"near": 7, "error": 6}, "skipped": [[6, "not valid JSON"]]}, old) == [
        ".outcomes.near: 7 != 8"]
    assert contains({"outcomes": {"near": 8}, "skipped": []}, old) == [
        ".outcomes.error: missing", ".skipped: [] != [[6, 'not valid JSON']]"]

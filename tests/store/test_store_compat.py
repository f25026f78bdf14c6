"""A store written by an earlier shadowdiff opens, reports and reviews as it did.

``data/store-0.1.0.sql`` is a SQLite store (schema 0004) written by shadowdiff 0.1.0 at
commit 4232479, the last before the core moved out of ``proxy/`` and ``replay/``: a
replay run (a malformed log line, candidate errors, a replica, a label), a proxy's
serve run (sampled pairs, run counts), a compare run, reviews (two reviewers
disagreeing, factual verdicts against each side) and judge suggestions.
``data/store-0.1.0.postgresql.sql`` is the same store on PostgreSQL: that version's
migrations made the schema, its rows were copied in, and ``pg_dump --inserts`` wrote
it (psql's ``\\restrict`` lines removed).

``data/store-0.1.0/<run>/`` holds what ``shadowdiff report`` of that version wrote for
each run (``postgresql/<run>/summary.json`` where PostgreSQL differs: its timestamps
carry a time zone). Every value in summary.json, pairs.jsonl, pairs.csv and the
texts files must be reported again, unchanged, with the same exit code; a later
version may add to them, never alter or drop what was there, except for the deliberate
corrections listed in ``CORRECTED``, each with why it was made. report.md and
report.html are left free to change.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from shadowdiff.review.app import build_review_app
from shadowdiff.store import Store
from shadowdiff.store.members import RunMembers
from tests.support import cli
from tests.support.fixtures import postgres_database
from tests.support.servers import HTTP, serve_app

DATA = Path(__file__).parent / "data"
# run kind -> (run id, the decision that version's report exited with)
RUNS = {
    "replay": ("428bf49e5695454f84eb1a123017e72a", 1),    # FAIL: a factual verdict against the candidate
    "serve": ("f31a9e8717a740ec83a0ede9c85470de", 2),     # INCOMPLETE
    "compare": ("af471652e2c048548c083190f7964e47", 2),   # INCOMPLETE
}


@pytest.fixture(params=["sqlite", "postgresql"])
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The 0.1.0 store, loaded into a new SQLite file or PostgreSQL database; yields its location."""
    if request.param == "sqlite":
        path = tmp_path / "shadowdiff.sqlite"
        connection = sqlite3.connect(path)
        connection.executescript((DATA / "store-0.1.0.sql").read_text(encoding="utf-8"))
        connection.close()
        yield str(path)
        return
    with postgres_database() as url:
        # no parameters: psycopg sends the dump's statements in one simple query
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute((DATA / "store-0.1.0.postgresql.sql").read_text(encoding="utf-8").encode())
        yield url


def expected_file(location: str, kind: str, name: str) -> Path:
    on_postgresql = DATA / "store-0.1.0" / "postgresql" / kind / name
    if location.startswith("postgresql") and on_postgresql.exists():
        return on_postgresql
    return DATA / "store-0.1.0" / kind / name


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


def test_the_old_store_opens_at_the_current_schema(old_store: str) -> None:
    store = Store.open_existing(old_store)
    try:
        assert [run.kind for run in store.runs()] and store.revision() is not None
        assert {run.id for run in store.runs()} == {run_id for run_id, _ in RUNS.values()}
    finally:
        store.close()


def test_an_old_proxys_open_run_closes_as_before(old_store: str) -> None:
    """Runs written before runs had members (0008) have no name and no member; a proxy's
    run left open (its proxy was killed) is closed by `shadowdiff close` with nothing to wait for."""
    run_id, _ = RUNS["serve"]
    store = Store.open_existing(old_store)
    try:
        assert [run.name for run in store.runs()] == [None, None, None]
        assert RunMembers(store).members(run_id) == []
        store.finish_run(run_id, finished=False)    # as a proxy killed before it stopped left it
    finally:
        store.close()
    closed = cli.shadowdiff("close", old_store, "--run", run_id)
    assert closed.returncode == 0 and f"closed run {run_id} (serve" in closed.stdout, closed.stderr
    store = Store.open_existing(old_store)
    try:
        assert store.run(run_id).finished_at is not None
    finally:
        store.close()


# Values the old version reported wrongly, and why each was corrected.
CORRECTED = {
    # factual verdicts against the baseline were counted as the candidate's regressions;
    # they are now counted apart, as acceptance.verdicts.factual_baseline
    ".acceptance.verdicts.factual",
    # "changed" had two meanings (near or divergent in the rates, any pair not identical -
    # errors included - in the side-by-side count); it now means one thing everywhere:
    # answered by both sides and not identical. In substance (near or divergent) is
    # substantive_rate and noise_substantive_rate; failed pairs are stored_failed
    ".changed_rate", ".noise_rate", ".stored_changed",
    # ... and the reason an unreviewed run is INCOMPLETE names the pairs "changed in substance"
    ".acceptance.reasons",
    # decoding was timed to the end of the response, and over answers whose tokens all
    # came in one read (a serve run's 2,227,014 tokens/s): those stores did not record
    # when the last token came, so their speed per token is now unknown
    *(f".sides.{side}.tokens_per_second_p50" for side in ("baseline", "candidate", "replica")),
    ".speedup",
    # the run's start had microseconds and no zone; it is now ISO 8601 to the second, in UTC
    ".created_at",
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_an_old_store_reports_what_it_reported(old_store: str, tmp_path: Path, kind: str) -> None:
    run_id, decision = RUNS[kind]
    out = tmp_path / "report"
    result = cli.shadowdiff("report", old_store, "--run", run_id,
                            "--out", str(out))
    assert result.returncode == decision, result.stdout + result.stderr
    expected = DATA / "store-0.1.0" / kind

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    old_summary = json.loads(expected_file(old_store, kind, "summary.json").read_text(encoding="utf-8"))
    assert [d for d in contains(summary, old_summary) if d.split(":")[0].split("[")[0] not in CORRECTED] == []

    rows = [json.loads(line) for line in (out / "pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    old_rows = [json.loads(line) for line in (expected / "pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert contains(rows, old_rows) == []

    with (out / "pairs.csv").open(encoding="utf-8", newline="") as new, \
            (expected / "pairs.csv").open(encoding="utf-8", newline="") as old:
        assert contains(list(csv.DictReader(new)), list(csv.DictReader(old))) == []

    for name in ("baseline.texts.json", "candidate.texts.json"):
        assert (out / name).read_text(encoding="utf-8") == (expected / name).read_text(encoding="utf-8")


def test_an_old_store_is_reviewed_as_it_was(old_store: str) -> None:
    """Its verdicts, reviewers and notes are all exported, and its reviewed pairs open in the review UI."""
    store = Store.open_existing(old_store)
    try:
        with serve_app(build_review_app(store, "a-token-of-the-test")) as base:
            headers = {"Authorization": "Bearer a-token-of-the-test"}
            verdicts = [json.loads(line) for line in
                        HTTP.get(base + "/review/export.jsonl", headers=headers).text.splitlines()]
            assert sorted((v["key"], v["reviewer"], v["verdict"], v["wrong_side"], v["note"]) for v in verdicts) == [
                ("a9ef7f76-1", "dave", "wording", None, ""), ("a9ef7f76-7", "dave", "wording", None, ""),
                # every directional verdict names a side now (0010): improvement meant the
                # candidate better (the baseline worse), minor the candidate slightly worse
                ("classification-3", "carol", "improvement", "baseline", ""),
                ("code-1", "alice", "factual", "candidate", "number flipped"),
                ("extraction-1", "alice", "ambiguous", None, ""),
                ("extraction-2", "bob", "factual", "baseline", "the candidate fixed it"),
                ("summarization-1", "alice", "wording", None, ""),
                ("summarization-1", "bob", "minor", "candidate", "disagree"),
                ("translation-1", "bob", "minor", "candidate", "repeated word")]
            queue = HTTP.get(base + "/review/", headers=headers)
            assert queue.status_code == 200
            for verdict in verdicts:
                page = HTTP.get(f"{base}/review/pairs/{verdict['pair_id']}", headers=headers)
                assert page.status_code == 200 and verdict["key"] in page.text
    finally:
        store.close()


def test_the_comparison_of_reports_can_fail() -> None:
    old = {"outcomes": {"near": 8, "error": 6}, "skipped": [[6, "not valid JSON"]]}
    assert contains({**old, "new": 1}, old) == []
    assert contains({"outcomes": {"near": 7, "error": 6}, "skipped": [[6, "not valid JSON"]]}, old) == [
        ".outcomes.near: 7 != 8"]
    assert contains({"outcomes": {"near": 8}, "skipped": []}, old) == [
        ".outcomes.error: missing", ".skipped: [] != [[6, 'not valid JSON']]"]

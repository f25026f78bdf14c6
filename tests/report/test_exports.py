"""The per-pair exports (pairs.jsonl, pairs.csv, the texts files): written as asked, left
out by default beyond a size and said so, gzip-compressed and readable by gzip, streamed
into the report's staging directory so that a failed or killed export leaves no file
under an export's name, and no previous report's export beside a new report."""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.report import write
from shadowdiff.report.write import EXPORT_LIMIT, EXPORTS_WRITTEN, PAIRS_FILES, write_reports
from shadowdiff.store import Store
from tests.support.cli import shadowdiff
from tests.support.reporting import answered_pair as _pair

PLAIN = ["pairs.jsonl", "pairs.csv", "baseline.texts.json", "candidate.texts.json"]
REPORTS = ["summary.json", "report.md", "report.html"]


def _run(store: Store, pairs: int = 5) -> str:
    run = store.create_run("replay", {})
    store.add_pairs(run, [_pair(f"k{i}", i, "The total is 4.", f"The total is {i}.") for i in range(pairs)])
    store.finish_run(run)
    return run


def _files(out: Path) -> list[str]:
    return sorted(f.name for f in out.iterdir() if not f.name.startswith("."))


@pytest.mark.parametrize(("choice", "files"), [
    ("both", PLAIN), ("jsonl", ["pairs.jsonl", "baseline.texts.json", "candidate.texts.json"]),
    ("csv", ["pairs.csv"]), ("none", [])])
def test_each_choice_writes_its_files_and_no_other(store: Store, tmp_path: Path, choice: str,
                                                   files: list[str]) -> None:
    run = _run(store)
    out = tmp_path / "out"
    paths = write_reports(store, run, out, pairs_export=choice)
    assert _files(out) == sorted([*REPORTS, *files])
    if "pairs.jsonl" in files:
        assert len((out / "pairs.jsonl").read_text().splitlines()) == 5
    assert ("--pairs-export none" in paths.summary_text) == (choice == "none")


def test_by_default_a_small_run_is_exported_whole_and_plain(store: Store, tmp_path: Path) -> None:
    run = _run(store)
    out = tmp_path / "out"
    paths = write_reports(store, run, out)
    assert _files(out) == sorted([*REPORTS, *PLAIN])
    assert "per-pair" not in paths.summary_text


def test_by_default_a_large_run_is_reported_without_exports_and_says_how_to_get_them(
        store: Store, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(write, "EXPORT_LIMIT", 3)
    run = _run(store)
    out = tmp_path / "out"
    paths = write_reports(store, run, out, side_by_side=1)
    assert _files(out) == sorted(REPORTS)
    assert "not written: the run stores 5 pairs, over the 3 --pairs-export auto writes" in paths.summary_text
    html, md = (out / "report.html").read_text(), (out / "report.md").read_text()
    assert "Every pair is in the review UI" in html and "<code>--pairs-export</code> writes them" in html
    assert "Every pair is in the review UI" in md and "(`--pairs-export` writes them).\n\n" in md   # a paragraph
    assert "pairs.jsonl" not in html


def test_asked_for_a_large_runs_exports_are_gzip_readable_and_hold_what_the_plain_ones_do(
        store: Store, tmp_path: Path, monkeypatch: Any) -> None:
    run = _run(store)
    plain, packed, again = tmp_path / "plain", tmp_path / "packed", tmp_path / "again"
    write_reports(store, run, plain)
    monkeypatch.setattr(write, "EXPORT_LIMIT", 3)
    paths = write_reports(store, run, packed, pairs_export="both", side_by_side=1)
    assert _files(packed) == sorted([*REPORTS, *(f + ".gz" for f in PLAIN)])
    assert "gzip-compressed: pairs.jsonl.gz, pairs.csv.gz" in paths.summary_text
    assert "<code>pairs.jsonl.gz</code> and <code>pairs.csv.gz</code>" in (packed / "report.html").read_text()
    for name in PLAIN:
        # the gzip command reads it (not only Python's module), and it holds the plain file's bytes
        unpacked = subprocess.run(["gzip", "-dc", str(packed / f"{name}.gz")], capture_output=True, check=True)
        assert unpacked.stdout == (plain / name).read_bytes(), name
    with gzip.open(packed / "pairs.csv.gz", "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["key"] for r in rows] == [f"k{i}" for i in range(5)]
    # the same pairs, the same bytes (no time in the gzip header)
    write_reports(store, run, again, pairs_export="both")
    assert all((again / f"{n}.gz").read_bytes() == (packed / f"{n}.gz").read_bytes() for n in PLAIN)
    # and --no-compress writes them plain whatever the size
    write_reports(store, run, again, pairs_export="jsonl", compress=False)
    assert [json.loads(line)["key"] for line in (again / "pairs.jsonl").read_text().splitlines()] == [
        f"k{i}" for i in range(5)]


def test_a_small_run_is_compressed_when_asked(store: Store, tmp_path: Path) -> None:
    run = _run(store)
    out = tmp_path / "out"
    write_reports(store, run, out, pairs_export="csv", compress=True)
    assert _files(out) == sorted([*REPORTS, "pairs.csv.gz"])
    assert gzip.decompress((out / "pairs.csv.gz").read_bytes()).startswith(b'"key","seq"')


def test_a_new_report_leaves_no_previous_export_beside_it(store: Store, tmp_path: Path) -> None:
    run = _run(store)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    write_reports(store, run, out)
    write_reports(store, run, out, pairs_export="csv", compress=True)
    assert _files(out) == sorted([*REPORTS, "notes.txt", "pairs.csv.gz"])
    write_reports(store, run, out, pairs_export="none")
    assert _files(out) == sorted([*REPORTS, "notes.txt"])
    assert {*PLAIN, *(f + ".gz" for f in PLAIN)} == PAIRS_FILES


def test_a_file_no_report_wrote_is_left_alone_under_an_exports_name(store: Store, tmp_path: Path) -> None:
    """Only the exports a previous report wrote (its list, EXPORTS_WRITTEN) are removed: a
    user's own pairs.jsonl or texts file beside the store is not a stale export."""
    run = _run(store)
    out = tmp_path / "out"
    out.mkdir()
    mine = {"pairs.jsonl": "my log\n", "baseline.texts.json": "{}", "pairs.csv.gz": "not gzip"}
    for name, text in mine.items():
        (out / name).write_text(text)
    write_reports(store, run, out, pairs_export="csv")
    assert {name: (out / name).read_text() for name in mine} == mine
    assert (out / EXPORTS_WRITTEN).read_text().split() == ["pairs.csv"]
    write_reports(store, run, out, pairs_export="none")
    assert not (out / "pairs.csv").exists()                 # the report's own, removed
    assert {name: (out / name).read_text() for name in mine} == mine


@pytest.mark.parametrize("compress", [False, True])
def test_an_export_that_fails_part_way_leaves_the_previous_set_whole(store: Store, tmp_path: Path, monkeypatch: Any,
                                                                      compress: bool) -> None:
    run = _run(store)
    out = tmp_path / "out"
    write_reports(store, run, out, pairs_export="csv")
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    rows = 0

    def failing(*args: Any) -> dict[str, Any]:
        nonlocal rows
        rows += 1
        if rows == 3:
            raise OSError("disk full")
        return original(*args)

    original = write._json_row
    monkeypatch.setattr(write, "_json_row", failing)
    with pytest.raises(OSError, match="disk full"):
        write_reports(store, run, out, pairs_export="both", compress=compress)
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before   # no staging directory left either


KILLED = """
import sys, time
from pathlib import Path
from shadowdiff.report import write
from shadowdiff.store import Store

original = write._json_row
def slow(*args):
    time.sleep(0.2)     # long enough to be killed mid-export
    return original(*args)
write._json_row = slow
store = Store.open_existing(sys.argv[1])
write.write_reports(store, store.latest_run().id, Path(sys.argv[2]), pairs_export="both", compress=True)
"""


def test_a_killed_export_leaves_no_file_under_an_exports_name(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "store")
    _run(store, pairs=50)
    store.close()
    out = tmp_path / "out"
    out.mkdir()
    process = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path / "store"), str(out)],
                               env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob(".shadowdiff-report-*/pairs.jsonl.gz")):
            assert process.poll() is None and time.monotonic() < deadline, "the export never started"
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    assert [f.name for f in out.iterdir() if not f.name.startswith(".shadowdiff-report-")] == []


def test_the_report_command_takes_the_choices(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "store")
    _run(store)
    store.close()
    out = tmp_path / "out"
    ran = shadowdiff("report", tmp_path / "store", "--out", out, "--pairs-export", "jsonl", "--compress")
    assert ran.returncode in (0, 2), ran.stderr
    assert _files(out) == sorted([*REPORTS, "pairs.jsonl.gz", "baseline.texts.json.gz", "candidate.texts.json.gz"])
    assert "gzip-compressed" in ran.stdout
    ran = shadowdiff("report", tmp_path / "store", "--out", out, "--pairs-export", "none")
    assert _files(out) == sorted(REPORTS) and "--pairs-export none" in ran.stdout
    assert "--compress" not in ran.stderr
    ran = shadowdiff("report", tmp_path / "store", "--out", out, "--pairs-export", "none", "--compress")
    assert "--compress does nothing with --pairs-export none" in ran.stderr
    assert shadowdiff("report", tmp_path / "store", "--pairs-export", "xml").returncode == 3
    helped = " ".join(shadowdiff("report", "--help").stdout.split())
    assert f"up to {EXPORT_LIMIT:,} stored pairs" in helped and f"more than {EXPORT_LIMIT:,} pairs" in helped
    for choice in write.PairsExport:
        assert choice.value in helped


def test_an_estimated_similarity_is_stored_and_said_so_in_every_report(store: Store, tmp_path: Path) -> None:
    run = store.create_run("replay", {})
    exact = _pair("k0", 0, "The total is 4.", "The total is 5.")
    estimated = _pair("k1", 1, "The total is 4.", "The total is 6.")
    estimated = dataclasses.replace(estimated, comparison=dataclasses.replace(estimated.comparison,
                                                                              similarity_estimated=True))
    store.add_pairs(run, [exact, estimated])
    store.finish_run(run)
    stored = {p["key"]: p["similarity_estimated"] for p in store.pairs(run)}
    assert stored == {"k0": False, "k1": True}
    out = tmp_path / "out"
    write_reports(store, run, out, pairs_export="both")
    rows = {r["key"]: r for r in map(json.loads, (out / "pairs.jsonl").read_text().splitlines())}
    assert rows["k1"]["similarity_estimated"] is True and rows["k0"]["similarity_estimated"] is False
    with (out / "pairs.csv").open() as f:
        assert {r["key"]: r["similarity_estimated"] for r in csv.DictReader(f)} == {"k0": "False", "k1": "True"}
    for name in ("report.md", "report.html"):
        assert (out / name).read_text().count("(estimated, a lower bound)") == 1, name

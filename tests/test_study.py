"""The study script's own parts (study/llamacpp_smollm2.py), on a simulated run: verdicts
are stored only on the answers they were given about, exported, and counted in RESULTS.md.
(The study itself runs the real engine for 40 minutes: it is run by hand, not here.)"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from shadowdiff.records import Side
from shadowdiff.store import Store

ROOT = Path(__file__).resolve().parents[1]


def study() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llamacpp_smollm2", ROOT / "study" / "llamacpp_smollm2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verdicts_are_stored_only_on_the_answers_reviewed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study"
    demo = subprocess.run([sys.executable, "-m", "shadowdiff", "demo", "--out", str(out / "run")],
                          capture_output=True, text=True, timeout=300)
    assert demo.returncode in (0, 2), demo.stderr
    s = study()
    store = Store.open(out / "run")
    run = store.latest_run("replay")
    assert run is not None
    changed = [p for p in store.pairs(run.id) if p.row["outcome"] in ("near", "divergent")][:2]
    store.close()
    digest = [s.answers_digest(p.answers[Side.BASELINE].text, p.answers[Side.CANDIDATE].text) for p in changed]
    verdicts = {changed[0].row["key"]: {"verdict": "minor", "side": "candidate", "note": "read",
                                        "answers_sha256": digest[0]},
                changed[1].row["key"]: {"verdict": "factual", "side": "candidate", "note": "about other texts",
                                        "answers_sha256": "0" * 16}}
    (tmp_path / "verdicts.json").write_text(json.dumps(verdicts))
    for _ in range(2):      # a second application stores nothing twice
        s.apply_verdicts(out, tmp_path / "verdicts.json")
    assert f"verdict on {changed[1].row['key']} not stored" in capsys.readouterr().err
    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [(r["key"], r["verdict"], r["wrong_side"]) for r in rows] == [(changed[0].row["key"], "minor", "candidate")]
    results = s.results(out)
    assert "## Reviewed: 1 pairs" in results and "minor (against the candidate) 1" in results
    assert "| identical |" in results and "noise floor" in results

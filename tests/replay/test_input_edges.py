"""``shadowdiff replay`` on awkward input, run as users run it (issue 15, input edges)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shadowdiff.records import Side
from shadowdiff.store import STORE_FILE


def replay(log: Path, sides: dict[Side, str], out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shadowdiff", "replay", str(log), "--baseline", sides[Side.BASELINE],
                           "--candidate", sides[Side.CANDIDATE], "--out", str(out), *options],
                          capture_output=True, text=True, timeout=120)


def test_out_is_a_directory_whatever_its_name(sides: dict[Side, str], tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("What is 2 + 2?\n")
    for name in ("results.v2", "results.db"):
        result = replay(log, sides, tmp_path / name)
        assert result.returncode == 0, result.stderr
        assert (tmp_path / name / STORE_FILE).is_file()
        assert json.loads((tmp_path / name / "summary.json").read_text())["pairs"] == 1
        report = subprocess.run([sys.executable, "-m", "shadowdiff", "report", str(tmp_path / name)],
                                capture_output=True, text=True, timeout=60)
        assert report.returncode in (0, 2), report.stderr

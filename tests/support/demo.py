"""``shadowdiff demo`` run once per session (three simulated servers, a replay, the reports):
the ``demo`` fixture. Tests read its directory as it is; a test that reviews pairs or writes
reports again copies it first (``Demo.copy``), so every test sees the demo as a user gets it."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from tests.support.cli import Ran, shadowdiff


@dataclasses.dataclass(frozen=True)
class Demo:
    """The demo's directory and what the command said."""

    out: Path
    ran: Ran

    def copy(self, to: Path) -> Path:
        """A copy of the run's directory at ``to``, for a test that changes it."""
        shutil.copytree(self.out, to)
        return to


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    out = tmp_path_factory.mktemp("demo") / "out"
    ran = shadowdiff("demo", "--out", str(out), "--latency", "zero")
    assert ran.returncode in (0, 2) and (out / "report.html").exists(), ran.stdout + ran.stderr
    return Demo(out, ran)

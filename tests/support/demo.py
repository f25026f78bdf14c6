"""``shadowdiff demo`` run once per session (three simulated servers, a replay, the reports):
the ``demo`` fixture. Tests read its directory as it is; a test that reviews pairs or writes
reports again copies it first (``Demo.copy``), so every test sees the demo as a user gets it."""

from __future__ import annotations

import dataclasses
import re
import shutil
import socket
from pathlib import Path

import pytest

from tests.support.cli import Ran, shadowdiff


@dataclasses.dataclass(frozen=True)
class Demo:
    """The demo's directory and what the command said."""

    out: Path
    ran: Ran
    servers: tuple[str, ...]     # the simulated servers' URLs, as the demo printed them
    listening: tuple[str, ...]   # those still accepting connections once the demo returned


    def copy(self, to: Path) -> Path:
        """A copy of the run's directory at ``to``, for a test that changes it."""
        shutil.copytree(self.out, to)
        return to


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    out = tmp_path_factory.mktemp("demo") / "out"
    ran = shadowdiff("demo", "--out", str(out), "--latency", "zero")
    assert ran.returncode in (0, 2) and (out / "report.html").exists(), ran.stdout + ran.stderr
    servers = tuple(re.findall(r"(?:baseline|candidate|replica) (http://127\.0\.0\.1:\d+)", ran.stderr))
    # Probed at once: later in a run another test's server may have been given the same port.
    return Demo(out, ran, servers, tuple(url for url in servers if _accepts(url)))


def _accepts(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError:
        return False
    return True

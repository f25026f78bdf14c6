"""The oracle: vLLM's own models, in their own environment, one process for the session.

The fixture ``oracle`` is a plugin listed in tests/conftest.py."""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.conformance import environment
from tests.support.tools import required

HERE = Path(__file__).parent
TIMEOUT = 120.0   # seconds for one answer: the slowest, a build of a long stream, takes well under one


class Oracle:
    """Talks to ``oracle.py`` running in the conformance environment (one JSON line each way)."""

    def __init__(self, python: Path) -> None:
        self.process = subprocess.Popen([str(python), str(HERE / "oracle.py")], cwd=HERE, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.version: str = self("version")

    def __call__(self, op: str, **arguments: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        # one line answers one line, so nothing is left buffered between calls: select sees it all
        if not select.select([self.process.stdout], [], [], TIMEOUT)[0]:
            self.process.kill()
            raise RuntimeError(f"the oracle did not answer {op} within {TIMEOUT:g} s")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the oracle exited with {self.process.wait()}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"the oracle failed on {op}:\n{answer['error']}")
        return answer["ok"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    version = environment.wanted_version()
    try:
        python = environment.prepare(version)
    except environment.BuildError as exc:
        if required():
            pytest.fail(f"the conformance environment for vLLM {version} could not be built: {exc}")
        pytest.skip(f"the conformance environment for vLLM {version} could not be built: {exc}")
    running = Oracle(python)
    assert running.version == version
    yield running
    running.close()

"""Building what the real-engine tiers need, once per machine, safely: shared by tests/support/realengine.py
(llama.cpp) and tests/support/vllm_cpu.py (vLLM on the CPU).

A build runs one at a time per name (a lock file), in a work directory of its own that
takes its real name only once finished and marked ``ready`` with a stamp naming what it
was built from: a build killed at any moment never leaves something half-made under the
real name, a changed stamp redoes it, and a warm run costs a file read. A failed build's
log is kept beside it (``NAME.failed.log``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.conformance.environment import BuildError
from tests.support.tools import required


@contextlib.contextmanager
def locked(home: Path, name: str) -> Iterator[None]:
    """One build of ``name`` under ``home`` at a time on this machine (a second waits, then finds it done)."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ready(directory: Path, stamp: str) -> bool:
    marker = directory / "ready"
    return marker.exists() and marker.read_text() == stamp


@contextlib.contextmanager
def building(directory: Path) -> Iterator[Path]:
    """A fresh work directory that becomes ``directory`` only if the block finishes.
    The block writes ``ready`` last; a failed build's log (``build.log``) is kept beside it."""
    for stale in directory.parent.glob(f"{directory.name}.building-*"):   # left by a killed build
        shutil.rmtree(stale, ignore_errors=True)
    work = directory.with_name(f"{directory.name}.building-{os.getpid()}")
    work.mkdir(parents=True)
    try:
        yield work
    except BaseException:
        log = work / "build.log"
        if log.exists():
            shutil.copy(log, directory.with_name(f"{directory.name}.failed.log"))
        shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(directory, ignore_errors=True)
    work.rename(directory)


def once(directory: Path, stamp: str, build: Callable[[Path], None]) -> Path:
    """``directory``, made by ``build(work)`` (then marked ready with ``stamp``) unless it is
    ready with ``stamp`` already."""
    try:
        if not ready(directory, stamp):
            with locked(directory.parent, directory.name):
                if not ready(directory, stamp):
                    with building(directory) as work:
                        build(work)
                        (work / "ready").write_text(stamp)
    except OSError as exc:
        raise BuildError(f"cannot build in {directory.parent}: {exc}") from exc
    return directory


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def unavailable(what: str, exc: Exception) -> None:
    """Skip the test (fail it under CI, ``SHADOWDIFF_REQUIRE_TOOLS=1``): ``what`` could not be built."""
    if required():
        pytest.fail(f"{what} could not be built (SHADOWDIFF_REQUIRE_TOOLS=1): {exc}")
    pytest.skip(f"{what} could not be built: {exc}")

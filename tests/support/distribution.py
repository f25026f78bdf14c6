"""Running the suite on several workers at once (pytest-xdist, ``-n auto`` in pyproject.toml),
and which tests must share one.

Most of the suite's time is spent waiting, not computing: on processes starting, on
uvicorn servers answering on loopback, on real engines generating. Measured on two cores
with one worker, the machine was busy a third to a half of the time. Several workers fill
that time; ``-n 0`` runs everything in one process, as before (and ``--pdb`` implies it).

A group runs on one worker, in collection order:

* ``engines`` (tests/engines/): the real-engine tiers, vLLM's then llama.cpp's, one after
  the other on one worker. The real vLLM tier (test_vllm_cpu*.py): its three servers
  (tests/engines/conftest.py) hold 7 GB; on two workers they would be started twice. The checkpoint tests'
  own servers run before them (tests/support/vllm_cpu.py), which only one worker can order.
  The real llama.cpp tier (test_realengine*.py), whose session servers answer one request at
  a time. Run beside each other, on two workers, the two tiers fought over the two cores (the
  llama.cpp servers run at nice 10, tests/support/realengine.py): one llama.cpp test took 280 s
  where it takes 24 s after vLLM's, and the run 713 s where it takes 472 s. Alone, the vLLM
  tier takes 113 s and the llama.cpp tier 55 s.
* ``conformance`` (tests/conformance/): vLLM's own models, one ``oracle`` process a session.
* every other module on its own, so that its module-scoped simulators and proxies start once.

Workers take the groups in collection order, and on several workers the real engines'
tests are collected first (tests/support/fixtures.py): the longest group starts at once, on
a worker of its own, while the other workers share out the rest.

The groups are read from the test's file, not from an ``xdist_group`` mark: xdist 3.8 marks
a test's group by rewriting its id, which pytest 9.2 no longer reads (the groups were
silently ignored: three workers each started vLLM servers of their own, 21 GB in all).
Collection checks that every test of a real-engine tier stands in its tier's files.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from xdist.scheduler import LoadScopeScheduling

GROUPS = (("tests/engines/test_vllm_cpu", "engines", "vllmcpu"),
          ("tests/engines/test_realengine", "engines", "realengine"),
          ("tests/conformance/", "conformance", None))


def group(nodeid: str) -> str:
    """The group of the test ``nodeid``: its tier's, or its module's."""
    path = nodeid.split("::", 1)[0]
    return next((name for prefix, name, _ in GROUPS if path.startswith(prefix)), path)


class ByGroup(LoadScopeScheduling):
    """xdist's scheduling by scope, with ``group`` as the scope."""

    def _split_scope(self, nodeid: str) -> str:
        return group(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling:
    return ByGroup(config, log)   # type: ignore[arg-type]   (xdist's Producer)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the machine has cores (the workers mostly wait),
    at least three (the engines' group and the rest, on two); ``PYTEST_XDIST_AUTO_NUM_WORKERS``
    if set."""
    if named := os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(named)
    return max(3, (os.cpu_count() or 1) + 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A real-engine test outside its tier's files would be scheduled beside the tier, on a
    worker starting servers of its own: refused."""
    for item in items:
        for prefix, name, marker in GROUPS:
            if marker and item.get_closest_marker(marker) and group(item.nodeid) != name:
                raise pytest.UsageError(f"{item.nodeid} is marked {marker}: it belongs in {prefix}*.py")


def pytest_configure(config: pytest.Config) -> None:
    """No property test is timed: several workers on two cores slow an example down by load
    alone, which is not what those tests check (hypothesis's deadline and too-slow check)."""
    settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("suite")

"""Running the suite on several workers at once (pytest-xdist: ``-n auto --dist loadgroup``
in pyproject.toml), and which tests must share one.

Most of the suite's time is spent waiting, not computing: on processes starting, on
uvicorn servers answering on loopback, on real engines generating. Measured on two cores
with one worker, the machine was busy a third to a half of the time. Several workers fill
that time; ``-n 0`` runs everything in one process, as before (and ``--pdb`` implies it).

A group runs on one worker, in collection order:

* ``vllm``: the real vLLM tier. Its session's three servers hold 10 GB; on two workers they
  would be started twice. The checkpoint tests' own servers run before them (see
  tests/support/vllm_cpu.py), which only one worker can order.
* ``llamacpp``: the real llama.cpp tier, whose session servers answer one request at a time.
* ``conformance``: the tests asking vLLM's own models (one ``oracle`` process a session).
* every other module on its own, so that its module-scoped simulators and proxies start once.

The two engine groups are the longest and run beside each other and beside the rest
(xdist hands out the largest groups first).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings


def pytest_configure(config: pytest.Config) -> None:
    """No property test is timed: several workers on two cores slow an example down by load
    alone, which is not what those tests check (hypothesis's deadline and too-slow check)."""
    settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("suite")


def group(item: pytest.Item) -> str:
    if item.get_closest_marker("vllmcpu"):
        return "vllm"
    if item.get_closest_marker("realengine"):
        return "llamacpp"
    if "oracle" in getattr(item, "fixturenames", ()):
        return "conformance"
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook reads the marks into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group(item)))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the machine has cores (the workers mostly wait),
    at least three (the two engine groups and the rest), ``PYTEST_XDIST_AUTO_NUM_WORKERS``
    if set."""
    if named := os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(named)
    return max(3, (os.cpu_count() or 1) + 1)

"""The real-vLLM tier's three servers, for as long as the tier's tests run.

Package-scoped, which only a conftest can make a fixture (a plugin's would be session-scoped):
a worker stops the servers when its next test is outside tests/engines, not when its session
ends. The tier is one group on one worker (tests/support/distribution.py), so they start
once; on several workers (the default) they had stayed up idle for the rest of a run, some
400 s on two cores, each about 1.6 % of a core (0.15-0.18 CPU-s every 10 s, measured) and
3.3 GB of memory. In one process (``-n 0``) the engine tiers run last and nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.vllm_cpu import Checkpoints, Trio, trio


@pytest.fixture(scope="package")
def vllm(vllm_python: Path, vllm_checkpoints: Checkpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trio]:
    """Three real vLLM servers for the tier: ``bf16`` (the baseline), ``replica`` (bf16 again,
    identical flags: the noise floor) and ``candidate`` (bf16 weights with an FP8 KV cache, or the
    INT8 W8A8 checkpoint on a CPU without AVX-512 or AMX: ``candidate_precision``)."""
    with trio(vllm_python, vllm_checkpoints, tmp_path_factory.mktemp("vllm")) as servers:
        yield servers

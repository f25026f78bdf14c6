"""Make vLLM's protocol modules importable without torch or a GPU.

Runs inside the conformance environment's interpreter only (``environment.py``), never in
the test process. ``install()`` puts a finder first on ``sys.meta_path`` that answers
for the modules below with stand-ins; every other module, vLLM's protocol, serving
helpers, logprobs and run-batch models included, is vLLM's own, imported as shipped.

What is stood in for, and why (the import chain from the protocol modules reaches them):

* ``torch``: not installed (several GB, and what it computes is not on the wire).
* ``vllm.env_override``: sets torch and CUDA environment up at ``import vllm``.
* ``vllm.utils.torch_utils``: torch dtype tables, checked at import.
* ``vllm.config`` (all but ``vllm.config.utils``): engine, device, parallel and
  compilation configuration, reaching the model executor and CUDA graphs; the
  protocol modules use ``ModelConfig`` only in methods that build sampling parameters.
* ``vllm.distributed``: collective communication between GPUs.
* ``xgrammar``: the grammar compiler behind structured outputs and tool-call structural
  tags; the parsers import it, but only to constrain decoding, which the oracle never does.
* ``mistral_common``: Mistral's tokenizer and request types, imported with every parser
  (``parser/engine/registered_adapters.py`` imports the Mistral one); used by it alone.

A stand-in is a class that answers any attribute with another stand-in, and that
returns the function it is called on (so that decorators leave functions alone). If
a vLLM release needs one more, the import fails loudly; add it here with its reason.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STOOD_IN = ("torch", "vllm.env_override", "vllm.utils.torch_utils", "vllm.config", "vllm.distributed", "xgrammar",
            "mistral_common")
REAL = ("vllm.config.utils",)   # vLLM's own, though under a stood-in package


class _StandIn(type):
    """A stand-in class: any attribute is another stand-in; calling it with a function
    returns the function (a decorator), calling it otherwise returns itself."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stand_in(f"{cls.__qualname__}.{name}")

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return cls

    def __iter__(cls) -> Any:
        return iter(())


def _stand_in(qualname: str) -> type:
    return _StandIn(qualname.rsplit(".", 1)[-1], (), {"__qualname__": qualname, "__module__": "vllm_shim"})


class _Module(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _stand_in(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, site: Path) -> None:
        self.site = site   # the directory holding the vllm package

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in REAL:   # a real module under a stood-in package: look where vLLM keeps it
            return importlib.machinery.PathFinder.find_spec(
                fullname, [str(self.site.joinpath(*fullname.split(".")[:-1]))])
        if any(fullname == name or fullname.startswith(name + ".") for name in STOOD_IN):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _Module(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


def install() -> None:
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        raise ImportError("vllm is not installed in this environment")
    sys.meta_path.insert(0, _Finder(Path(spec.origin).parent.parent))

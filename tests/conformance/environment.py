"""The conformance tier's environment: vLLM's wheel, without its engine, in a venv of its own.

``prepare(version)`` builds, once per vLLM version, a virtual environment under the
cache directory (``$SHADOWDIFF_CACHE``, default ``~/.cache/shadowdiff``) holding:

* the ``vllm`` wheel of that version from PyPI, installed with ``--no-deps``: no torch,
  no CUDA, no kernels are installed, only its Python modules;
* the light packages its protocol modules import (``IMPORTED`` below), at the versions
  *vLLM's own metadata* asks for, so that what its models import is what a real vLLM
  server imports.

What needs torch or a GPU is stubbed at import time by ``vllm_shim.py``, inside that
environment's interpreter only: the test process never imports vLLM. A finished
environment is marked by a file written last, naming what it was built from, so an
interrupted build or a changed package list is redone, and a warm run costs nothing
but the check. The version comes from the ``vllm``
extra in pyproject.toml unless ``VLLM_VERSION`` names another.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Distributions whose modules vLLM's protocol modules import (directly or through the
# vLLM modules they import), by vLLM's own requirement names; their version
# specifiers are read from the wheel's metadata. Found by importing the protocol
# modules in an empty environment until nothing was missing.
IMPORTED = ("pydantic", "openai", "fastapi", "regex", "numpy", "psutil", "pyzmq", "pillow", "pybase64",
            "aiohttp", "requests", "transformers", "cachetools", "prometheus_client", "oss-harmony", "cbor2",
            "msgspec", "cloudpickle", "py-cpuinfo", "orjson")
# Imported too, but not a direct requirement of vLLM (it arrives through another one).
ALSO = ("uvloop", "packaging")


class BuildError(RuntimeError):
    """The environment could not be built (no network, no such version...)."""


def pinned_version() -> str:
    """The vLLM version of the ``vllm`` extra in pyproject.toml (``vllm==X``)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    [spec] = extras["vllm"]
    match = re.fullmatch(r"vllm==([\w.]+)", spec.replace(" ", ""))
    if match is None:
        raise BuildError(f"the vllm extra must pin one version (vllm==X), not {spec!r}")
    return match.group(1)


def wanted_version() -> str:
    return os.environ.get("VLLM_VERSION") or pinned_version()


def cache_dir() -> Path:
    return Path(os.environ.get("SHADOWDIFF_CACHE") or Path.home() / ".cache" / "shadowdiff")


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _requirements(wheel: Path) -> list[str]:
    """vLLM's own specifiers for the ``IMPORTED`` distributions, plus ``ALSO``."""
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    wanted = {n.replace("_", "-") for n in IMPORTED}
    found: dict[str, str] = {}
    for line in lines:
        if not line.startswith("Requires-Dist: "):
            continue
        requirement = line.removeprefix("Requires-Dist: ")
        spec, _, marker = requirement.partition(";")
        if "extra ==" in marker:
            continue
        if _name(spec) in wanted:
            found[_name(spec)] = spec.strip()
    missing = sorted(wanted - set(found))
    if missing:   # a later vLLM may drop or rename one: install it unpinned, and say so in the log
        print(f"vLLM's metadata names no {', '.join(missing)}; installing unpinned", file=sys.stderr)
    return [*found.values(), *missing, *ALSO]


def _run(*command: str | Path, log: Path) -> None:
    with log.open("a") as out:
        out.write("+ " + " ".join(map(str, command)) + "\n")
        out.flush()
        done = subprocess.run([str(c) for c in command], stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise BuildError(f"{' '.join(map(str, command[:4]))}… failed (see {log}):\n{tail}")


def prepare(version: str | None = None) -> Path:
    """The Python interpreter of a ready environment for ``version``; built if needed."""
    version = version or wanted_version()
    home = cache_dir() / "conformance" / f"vllm-{version}"
    python = home / "venv" / "bin" / "python"
    ready = home / "ready"
    # what the environment was built from: a changed list of packages rebuilds it
    stamp = f"vllm {version}; {', '.join(IMPORTED + ALSO)}\n"
    if ready.exists() and python.exists() and ready.read_text() == stamp:
        return python
    shutil.rmtree(home, ignore_errors=True)
    (home / "wheels").mkdir(parents=True)
    log = home / "build.log"
    started = time.monotonic()
    venv.EnvBuilder(with_pip=True).create(home / "venv")
    pip = (python, "-m", "pip", "--disable-pip-version-check", "-q")
    _run(*pip, "download", "--no-deps", "-d", home / "wheels", f"vllm=={version}", log=log)
    [wheel] = (home / "wheels").glob("vllm-*.whl")
    _run(*pip, "install", "--no-deps", "--no-compile", wheel, log=log)
    _run(*pip, "install", *_requirements(wheel), log=log)
    wheel.unlink()   # installed; the venv holds it now
    (home / "built").write_text(f"built in {time.monotonic() - started:.0f} s\n")
    ready.write_text(stamp)
    return python


if __name__ == "__main__":   # python tests/conformance/environment.py [VERSION]
    print(prepare(sys.argv[1] if len(sys.argv) > 1 else None))

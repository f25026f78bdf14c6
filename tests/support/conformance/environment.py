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

import fcntl
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

ROOT = Path(__file__).resolve().parents[3]

# Distributions whose modules vLLM's protocol modules import (directly or through the
# vLLM modules they import), by vLLM's own requirement names; their version
# specifiers are read from the wheel's metadata. Found by importing the protocol
# modules in an empty environment until nothing was missing.
IMPORTED = ("pydantic", "openai", "fastapi", "regex", "numpy", "psutil", "pyzmq", "pillow", "pybase64",
            "aiohttp", "requests", "transformers", "cachetools", "prometheus_client", "oss-harmony", "cbor2",
            "msgspec", "cloudpickle", "py-cpuinfo", "orjson",
            # the reasoning and tool parsers (vllm.parser, vllm.tool_parsers)
            "partial-json-parser", "ijson")
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
            found[_name(spec)] = requirement.strip()   # with its environment marker, if any
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
        raise BuildError(f"{' '.join(map(str, command[:4]))}… failed:\n{tail}")


# Imported once a build is done, before it is marked ready: a build that installed but
# cannot import is never used.
_CHECK = ("import sys; sys.path.insert(0, sys.argv[1]); import vllm_shim; vllm_shim.install(); "
          "import vllm.entrypoints.openai.chat_completion.protocol, vllm.entrypoints.openai.completion.protocol, "
          "vllm.entrypoints.openai.chat_completion.stream_processor, vllm.parser.parser_manager")


def prepare(version: str | None = None) -> Path:
    """The Python interpreter of a ready environment for ``version``; built if needed.

    Builds run one at a time (a lock file), each in a directory of its own that becomes
    the environment only once it installed and imported: a build killed at any moment,
    or a second one started beside it, never leaves a broken environment marked ready.
    """
    version = version or wanted_version()
    base = cache_dir() / "conformance"
    home = base / f"vllm-{version}"
    # what the environment was built from: a changed list of packages rebuilds it
    stamp = f"vllm {version}; {', '.join(IMPORTED + ALSO)}\n"
    try:
        if _ready(home, stamp):
            return home / "venv" / "bin" / "python"
        base.mkdir(parents=True, exist_ok=True)
        with (base / f"vllm-{version}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _ready(home, stamp):   # another build may have finished while this one waited
                _build(home, version, stamp)
    except OSError as exc:
        raise BuildError(f"cannot build in {base}: {exc}") from exc
    return home / "venv" / "bin" / "python"


def _ready(home: Path, stamp: str) -> bool:
    ready = home / "ready"
    return ready.exists() and (home / "venv" / "bin" / "python").exists() and ready.read_text() == stamp


def _build(home: Path, version: str, stamp: str) -> None:
    for stale in home.parent.glob(f"{home.name}.building-*"):   # left by a build that was killed
        shutil.rmtree(stale, ignore_errors=True)
    work = home.with_name(f"{home.name}.building-{os.getpid()}")
    (work / "wheels").mkdir(parents=True)
    log = work / "build.log"
    started = time.monotonic()
    try:
        venv.EnvBuilder(with_pip=True).create(work / "venv")
        python = work / "venv" / "bin" / "python"
        pip = (python, "-m", "pip", "--disable-pip-version-check", "-q")
        _run(*pip, "download", "--no-deps", "-d", work / "wheels", f"vllm=={version}", log=log)
        [wheel] = (work / "wheels").glob("vllm-*.whl")
        _run(*pip, "install", "--no-deps", "--no-compile", wheel, log=log)
        _run(*pip, "install", *_requirements(wheel), log=log)
        wheel.unlink()   # installed; the venv holds it now
        _run(python, "-c", _CHECK, Path(__file__).parent, log=log)
    except BaseException:   # a failure, or an interruption: keep the log, not the half-built directory
        if log.exists():
            shutil.copy(log, home.with_name(f"{home.name}.failed.log"))
        shutil.rmtree(work, ignore_errors=True)
        raise
    (work / "built").write_text(f"built in {time.monotonic() - started:.0f} s\n")
    (work / "ready").write_text(stamp)
    shutil.rmtree(home, ignore_errors=True)
    # A virtual environment finds its packages from where its interpreter is, so it
    # works under its new name (nothing here runs its console scripts).
    work.rename(home)


if __name__ == "__main__":   # python tests/support/conformance/environment.py [VERSION]
    print(prepare(sys.argv[1] if len(sys.argv) > 1 else None))

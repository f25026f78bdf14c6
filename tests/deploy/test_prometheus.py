"""The Prometheus rules and the Grafana dashboard, checked by promtool and a real Prometheus.

The end-to-end test runs the shipped rules in a real Prometheus server scraping two
proxies, each in front of simulators: one with a badly broken candidate
(``fp8-heavy``), one with a candidate that barely differs; both score every pair
(``--score-rate``), so that the token agreement rules see real histograms. Only the time windows are
shortened (15 minutes and an hour to 20 seconds), so that the alert can fire within a test; the
expressions are the shipped ones.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from shadowdiff.simulator import profiles
from shadowdiff.simulator.profiles import DriftKind, Profile
from tests.support.proxying import FP8, chat
from tests.support.servers import free_port, wait_ready
from tests.support.tools import tool

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "shadowdiff.rules.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "shadowdiff.json"
SHORT = {"[1h]": "[20s]", "[15m]": "[20s]", "[5m]": "[20s]",
         "for: 15m": "for: 5s", "for: 10m": "for: 5s", "for: 1h": "for: 5s", "for: 2m": "for: 5s",
         "for: 30m": "for: 5s"}
ALERT = "ShadowdiffDivergenceAboveNoiseFloor"


def promtool() -> str:
    return tool("promtool", "apt-get install prometheus")


def test_rules_are_valid() -> None:
    checked = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 18 rules found" in checked.stdout   # 8 recording rules, 10 alerts


def test_every_alert_has_unit_tests_that_pass() -> None:
    tests = DEPLOY / "prometheus" / "tests" / "shadowdiff.test.yml"
    run = subprocess.run([promtool(), "test", "rules", str(tests)], capture_output=True, text=True,
                         cwd=tests.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    alerts = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r}
    tested = {t["alertname"] for case in yaml.safe_load(tests.read_text())["tests"]
              for t in case.get("alert_rule_test", []) if t["exp_alerts"]}
    assert tested == alerts                                 # each alert is shown firing at least once
    readme = (DEPLOY / "README.md").read_text()
    for alert in alerts:                                    # and has a runbook
        assert f"### {alert}" in readme


def test_short_windows_change_only_durations() -> None:
    shortened = _shortened(RULES.read_text())
    assert re.sub(r"\[\w+\]|for: \w+", "", shortened) == re.sub(r"\[\w+\]|for: \w+", "", RULES.read_text())


def _shortened(text: str) -> str:
    for long, short in SHORT.items():
        text = text.replace(long, short)
    return text


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two proxies (a broken and a nearly-equal candidate) under traffic, and a Prometheus scraping both."""
    prometheus = tool("prometheus", "apt-get install prometheus")
    from shadowdiff.proxy.app import build_app as build_proxy
    from shadowdiff.proxy.settings import ProxySettings
    from shadowdiff.simulator.app import build_app as build_simulator
    from shadowdiff.simulator.settings import SimulatorSettings
    from tests.support.servers import serve_app

    tmp = tmp_path_factory.mktemp("prometheus")
    light = Profile("fp8-light", {DriftKind.WORDING: 0.02, DriftKind.FORMATTING: 0.02}, speed=1.5)
    contexts: list[Any] = []

    def serve(app: Any, **options: Any) -> str:
        context = serve_app(app, **options)
        contexts.append(context)
        return context.__enter__()

    def simulator(**settings: Any) -> str:
        settings.setdefault("served_model_names", ("Qwen/Qwen3-8B",))
        return serve(build_simulator(SimulatorSettings(**settings)))

    baseline, replica = simulator(), simulator(seed=7)
    proxies = {}
    for name, profile in (("high", profiles.builtin("fp8-heavy")), ("low", light)):
        candidate = simulator(served_model_names=(FP8,), profile=profile)
        proxies[name] = serve(build_proxy(ProxySettings(
            primary=baseline, shadow=candidate, shadow_model=FP8, replica=replica, replica_rate=1.0,
            score_rate=1000.0, store=str(tmp / f"store-{name}"), review_token="prometheus-test-token")),
            lifespan="on", server_header=False, date_header=False)
    (tmp / "rules.yml").write_text(_shortened(RULES.read_text()))
    port = free_port()
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp / "rules.yml")],
        "scrape_configs": [{"job_name": f"shadowdiff-{name}", "static_configs": [
            {"targets": [url.removeprefix("http://")]}]} for name, url in proxies.items()],
    }))
    process = subprocess.Popen([prometheus, f"--config.file={tmp / 'prometheus.yml'}",
                                f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                                "--log.level=error"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    api = f"http://127.0.0.1:{port}"
    stop = threading.Event()

    def traffic(url: str, offset: int) -> None:
        i = offset
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                client.post(url + "/v1/chat/completions", json=chat(f"Give three figures about topic {i}."))
                i += 2
                time.sleep(0.1)   # 3-4 pairs a second a proxy were measured (the CPU's pace): 20 in 20 s is the guard

    threads = [threading.Thread(target=traffic, args=(url, k), daemon=True)
               for url in proxies.values() for k in range(2)]
    try:
        wait_ready(api + "/-/ready", process, timeout=30)
        for thread in threads:
            thread.start()
        yield {"api": api, "proxies": proxies, "stop": stop}
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        process.terminate()
        process.wait(30)
        for context in reversed(contexts):
            context.__exit__(None, None, None)


def query(api: str, expr: str) -> list[dict[str, Any]]:
    answer = httpx.get(api + "/api/v1/query", params={"query": expr}).json()
    assert answer["status"] == "success", (expr, answer)
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def poll(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether ``condition`` holds within ``seconds``, asked once a second (and at least once)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(1)
    return True


def firing(api: str) -> set[str]:
    alerts = httpx.get(api + "/api/v1/alerts").json()["data"]["alerts"]
    return {f'{a["labels"]["alertname"]}/{a["labels"].get("job")}' for a in alerts if a["state"] == "firing"}


def test_high_divergence_fires_the_alert_and_low_does_not(stack: dict[str, Any]) -> None:
    api = stack["api"]
    assert poll(lambda: f"{ALERT}/shadowdiff-high" in firing(api), 120), firing(api)
    # the low candidate was measured over the same time, and stays within the margin
    above = {r["metric"]["job"]: float(r["value"][1])
             for r in query(api, "shadowdiff:divergence_above_noise:ratio_rate15m")}
    floor = {r["metric"]["job"]: float(r["value"][1]) for r in query(api, "shadowdiff:noise_floor:ratio_rate1h")}
    assert above["shadowdiff-high"] > 0.3 and above["shadowdiff-low"] < 0.05, above
    assert set(floor) == {"shadowdiff-high", "shadowdiff-low"}
    pairs = query(api, 'sum by (job) (increase(shadowdiff_pairs_total{comparable="true"}[20s]))')
    assert all(float(r["value"][1]) >= 20 for r in pairs)  # enough traffic that the guard lets it through
    assert f"{ALERT}/shadowdiff-low" not in firing(api)
    labels = next(a["labels"] for a in httpx.get(api + "/api/v1/alerts").json()["data"]["alerts"]
                  if a["labels"]["alertname"] == ALERT)
    assert labels["candidate"] == FP8 and labels["severity"] == "warning"
    assert not {a for a in firing(api) if a.startswith(("ShadowdiffShadowFailing", "ShadowdiffProxyDown"))}


def test_token_agreement_is_recorded_per_side_and_scoring_does_not_alert(stack: dict[str, Any]) -> None:
    api = stack["api"]

    def means() -> dict[tuple[str, str], float]:
        return {(r["metric"]["job"], r["metric"]["side"]): float(r["value"][1])
                for r in query(api, "shadowdiff:token_agreement:mean1h")}

    # (from 20 scored pairs a side in the window)
    assert poll(lambda: len(means()) == 4, 60), means()
    mean = means()
    # the broken candidate reads the baseline's answers worse than the nearly equal one;
    # the replicas, the baseline itself, read them better than the broken one
    assert mean["shadowdiff-high", "candidate"] < mean["shadowdiff-low", "candidate"], mean
    assert min(mean["shadowdiff-high", "replica"], mean["shadowdiff-low", "replica"]) > \
        mean["shadowdiff-high", "candidate"], mean
    below = {r["metric"]["job"]: float(r["value"][1])
             for r in query(api, "shadowdiff:token_agreement_below_noise:mean1h")}
    assert set(below) == {"shadowdiff-high", "shadowdiff-low"} and below["shadowdiff-high"] > 0, below
    scored = query(api, 'sum by (job) (rate(shadowdiff_scores_total{result="scored"}[20s]))')
    assert len(scored) == 2 and all(float(r["value"][1]) > 0 for r in scored), scored
    assert not {a for a in firing(api) if a.startswith("ShadowdiffScoringFailing")}
    # and that is not for want of evaluating: Prometheus ran every rule without an error
    groups = httpx.get(api + "/api/v1/rules").json()["data"]["groups"]
    health = {r["name"]: (r["health"], r.get("lastError")) for g in groups for r in g["rules"]}
    assert len(health) == 18 and all(h == "ok" for h, _ in health.values()), health


# queries with data only after a verdict, a failure or a skip, none of which this stack makes
NEEDS_EVENTS = r"verdicts|result!=\"mirrored\""


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_every_dashboard_query_runs_on_real_data(stack: dict[str, Any]) -> None:
    api = stack["api"]
    poll(lambda: bool(query(api, "shadowdiff:divergence:ratio_rate15m")), 60)
    empty = []
    for expr in dashboard_queries():
        concrete = expr.replace("$__rate_interval", "20s").replace("$job", ".*")
        # (an instant query of a gauge is empty while both targets' last scrape failed, which
        # a loaded machine can make happen with the 1 s scrape timeout: a few seconds more
        # are allowed before a query counts as empty, but only for those that should have data)
        patience = 0 if re.search(NEEDS_EVENTS, expr) else 15
        if not poll(lambda q=concrete: bool(query(api, q)), patience):
            empty.append(expr)
    # everything has data here except what needs a verdict, a failure or a skip
    assert all(re.search(NEEDS_EVENTS, e) for e in empty), empty


def test_dashboard_and_rules_name_only_exported_metrics(stack: dict[str, Any]) -> None:
    scraped = httpx.get(stack["proxies"]["high"] + "/metrics").text
    samples = {line.split("{")[0].split(" ")[0] for line in scraped.splitlines() if line and line[0] != "#"}
    rules = yaml.safe_load(RULES.read_text())
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    exprs = dashboard_queries() + [r["expr"] for g in rules["groups"] for r in g["rules"]]
    names = {n for e in exprs for n in re.findall(r"\b(shadowdiff[_:][A-Za-z0-9_:]*)", e)}
    unknown = {n for n in names if n not in samples and n not in recorded}
    assert not unknown, unknown
    assert len(names) > 15

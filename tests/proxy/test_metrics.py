"""The proxy's metrics as Prometheus scrapes them: the full set, promtool, several workers."""

from __future__ import annotations

import logging
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from shadowdiff.simulator import profiles
from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.vocabulary import Side
from tests.support.proxying import FP8, chat, scrape, settled, value, wait_for
from tests.support.servers import free_port, wait_ready
from tests.support.tools import tool

Start = Callable[..., Any]

FAMILIES = {
    "shadowdiff_requests": "counter", "shadowdiff_shadow_requests": "counter", "shadowdiff_pairs": "counter",
    "shadowdiff_noise_pairs": "counter", "shadowdiff_pair_similarity": "histogram",
    "shadowdiff_pair_first_divergence_characters": "histogram", "shadowdiff_pair_signals": "counter",
    "shadowdiff_upstream_request_duration_seconds": "histogram",
    "shadowdiff_upstream_time_to_first_token_seconds": "histogram",
    "shadowdiff_upstream_time_to_first_answer_token_seconds": "histogram",
    "shadowdiff_upstream_output_tokens": "counter", "shadowdiff_upstream_generation_seconds": "counter",
    "shadowdiff_upstream_retries": "counter", "shadowdiff_token_agreement": "histogram", "shadowdiff_scores": "counter",
    "shadowdiff_shadow_requests_in_flight": "gauge", "shadowdiff_pairs_stored": "counter",
    "shadowdiff_pairs_dropped": "counter", "shadowdiff_store_up": "gauge",
    "shadowdiff_store_queue_pairs": "gauge", "shadowdiff_store_queue_bytes": "gauge",
    "shadowdiff_review_state_age_seconds": "gauge",
    "shadowdiff_build_info": "gauge", "shadowdiff_model_pair_info": "gauge",
    "shadowdiff_alert_divergence_margin_ratio": "gauge", "shadowdiff_review_queue_pairs": "gauge",
    "shadowdiff_review_verdicts": "gauge", "shadowdiff_score_rate_pairs_per_second": "gauge",
}


def test_the_full_set_with_a_noise_floor(start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    baseline = start_simulator()
    candidate = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8-heavy"))
    replica = start_simulator(seed=7)      # the same baseline on another "replica": near-ties only
    url, app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, replica=replica, replica_rate=1.0,
                           review_token="metrics-review-token", store=str(tmp_path / "s"), alert_margin=0.08)
    n = 24
    for i in range(n):
        assert httpx.post(url + "/v1/chat/completions", json=chat(f"Give three figures about topic {i}.")).is_success
    httpx.post(url + "/v1/chat/completions", json={**chat("sampled"), "temperature": 0.7})
    settled(app)
    app.state.review.fresh_for = 0
    _, families = scrape(url)
    assert {name: families[name].type for name in FAMILIES} == FAMILIES

    assert value(families, "shadowdiff_requests", route="chat", status_class="2xx") == n + 1
    changed = sum(value(families, "shadowdiff_pairs", outcome=o, comparable="true") for o in ("near", "divergent"))
    comparable = sum(value(families, "shadowdiff_pairs", outcome=o, comparable="true")
                     for o in ("identical", "equivalent", "near", "divergent"))
    assert comparable == n and changed > n / 3                     # fp8-heavy changes many answers
    assert value(families, "shadowdiff_pairs", comparable="false") == 1
    # every comparable request also went to the replica; the sampled one did not
    noise = {s.labels["outcome"]: s.value for s in families["shadowdiff_noise_pairs"].samples
             if s.name.endswith("_total")}
    assert sum(noise.values()) == n and noise["identical"] >= n * 0.8
    changed_all = changed + value(families, "shadowdiff_pairs", outcome="equivalent", comparable="true")
    assert value(families, "shadowdiff_pair_first_divergence_characters",
                 "shadowdiff_pair_first_divergence_characters_count") == changed_all
    assert value(families, "shadowdiff_pair_signals", kind="divergence") == changed_all
    for side in ("baseline", "candidate", "replica"):
        assert value(families, "shadowdiff_upstream_output_tokens", side=side) > 0
        assert value(families, "shadowdiff_upstream_generation_seconds", side=side) > 0
    assert value(families, "shadowdiff_model_pair_info", baseline=baseline.removeprefix("http://"),
                 candidate=FP8) == 1
    assert value(families, "shadowdiff_alert_divergence_margin_ratio") == 0.08
    assert value(families, "shadowdiff_score_rate_pairs_per_second") == 0     # scoring is off
    assert value(families, "shadowdiff_build_info") == 1

    # the review queue and verdicts come from the store
    wait_for(lambda: value(scrape(url)[1], "shadowdiff_review_queue_pairs") == changed)
    store = Store.open(tmp_path / "s")
    queue = ReviewQueue(store)
    first = queue.page(Filters(outcome="divergent"))[0]["id"]
    queue.add_review(first, "ana", "factual", "candidate")
    _, families = scrape(url)
    assert value(families, "shadowdiff_review_queue_pairs") == changed - 1
    assert value(families, "shadowdiff_review_verdicts", verdict="factual", wrong_side="candidate") == 1
    assert value(families, "shadowdiff_review_verdicts", verdict="wording", wrong_side="none") == 0
    stored = list(store.pairs(store.latest_run("serve").id))  # type: ignore[union-attr]
    assert all(p.row["noise_outcome"] is not None for p in stored if p.row["comparable"])
    store.close()


def test_promtool_finds_nothing_to_complain_about(start_simulator: Start, start_proxy: Start) -> None:
    promtool = tool("promtool", "apt-get install prometheus")
    baseline = start_simulator()
    url, app = start_proxy(primary=baseline, shadow=start_simulator(served_model_names=(FP8,),
                                                                    profile=profiles.builtin("fp8")),
                           shadow_model=FP8, score_rate=2.0)
    for i in range(5):
        httpx.post(url + "/v1/chat/completions", json=chat(f"topic {i}"))
    settled(app)
    text, families = scrape(url)
    assert value(families, "shadowdiff_score_rate_pairs_per_second") == 2.0
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert checked.returncode == 0 and not checked.stdout.strip() and not checked.stderr.strip(), \
        checked.stdout + checked.stderr


def test_several_workers_count_once(start_simulator: Start, tmp_path: Path) -> None:
    baseline = start_simulator()
    candidate = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "shadowdiff", "serve", "--primary", baseline, "--shadow", candidate,
         "--shadow-model", FP8, "--workers", "2", "--port", str(port), "--store", str(tmp_path / "s"),
         "--keep-rate", "1", "--score-rate", "1.5"], env=env, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + "/healthz", process)
        n = 40
        for i in range(n):
            # a connection each, so that both workers take requests
            with httpx.Client() as client:
                assert client.post(url + "/v1/chat/completions", json=chat(f"topic {i}")).is_success
        store = Store.open(tmp_path / "s")
        runs = [r for r in store.runs() if r.kind == "serve"]
        assert len(runs) == 1                              # the workers share one (tests/proxy/test_one_run.py)
        wait_for(lambda: sum(store.count_pairs(r.id) for r in runs) == n, seconds=20)
        store.close()
        # each worker scores up to --score-rate: the proxy's rate is their sum (once both have started)
        wait_for(lambda: value(scrape(url)[1], "shadowdiff_score_rate_pairs_per_second") == 3.0)
        for _ in range(4):                                 # whichever worker answers, the sum is the same
            text, families = scrape(url)
            assert value(families, "shadowdiff_requests", route="chat", status_class="2xx") == n
            assert value(families, "shadowdiff_pairs") == n
            assert value(families, "shadowdiff_build_info") == 1
            assert value(families, "shadowdiff_shadow_requests_in_flight") == 0
            assert value(families, "shadowdiff_score_rate_pairs_per_second") == 3.0
        promtool = shutil.which("promtool")
        if promtool:                                       # the multiprocess exposition is clean too
            checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
            assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked.stdout
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()


def test_a_hanging_replica_never_costs_the_shadow(start_simulator: Start, start_proxy: Start) -> None:
    from shadowdiff.simulator.faults import Fault, FaultSettings

    baseline = start_simulator()
    candidate = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    replica = start_simulator(faults=FaultSettings(rates={Fault.HANG: 1.0}, hang_seconds=60))
    # (the timeout is long enough for the six requests to be sent while the first two replica
    # calls still hang, however loaded the machine; each shadow call ends before the next
    # request, so only the replica's calls can hold a place)
    url, app = start_proxy(primary=baseline, shadow=candidate, shadow_model=FP8, replica=replica, replica_rate=1.0,
                           max_shadow_in_flight=2, shadow_timeout=6.0)
    n = 6
    for i in range(n):
        assert httpx.post(url + "/v1/chat/completions", json=chat(f"topic {i}")).is_success
        wait_for(lambda: app.mirror.in_flight == 0)
    settled(app, seconds=30)
    _, families = scrape(url)
    assert value(families, "shadowdiff_shadow_requests", result="mirrored") == n
    assert value(families, "shadowdiff_shadow_requests", result="failed") == 0
    # two replica calls held its two places until they timed out; the rest were not sent
    assert value(families, "shadowdiff_noise_pairs", outcome="error") == 2
    assert value(families, "shadowdiff_noise_pairs") == 2
    assert app.mirror.replica_in_flight == 0 and app.mirror.in_flight == 0


def test_the_replica_gets_the_baselines_credentials(start_simulator: Start, start_proxy: Start) -> None:
    baseline = start_simulator(api_keys=("base-key",))
    candidate = start_simulator(served_model_names=(FP8,), api_keys=("cand-key",))
    url, app = start_proxy(primary=candidate, primary_side=Side.CANDIDATE, shadow=baseline, shadow_api_key="base-key",
                           shadow_model="Qwen/Qwen3-8B", replica=baseline, replica_rate=1.0)
    for i in range(4):
        response = httpx.post(url + "/v1/chat/completions", json=chat(f"topic {i}", model=FP8),
                              headers={"authorization": "Bearer cand-key"})
        assert response.is_success
    settled(app)
    _, families = scrape(url)
    assert value(families, "shadowdiff_noise_pairs", outcome="identical") == 4


def test_a_killed_workers_in_flight_requests_leave_the_sum(tmp_path: Path) -> None:
    """A worker that dies without shutting down (SIGKILL, OOM) must not count forever."""
    from prometheus_client import CollectorRegistry, multiprocess

    from shadowdiff.proxy.metrics import _forget_dead_workers

    worker = ("from shadowdiff.proxy.metrics import ProxyMetrics\n"
              "m = ProxyMetrics()\nm.shadow_in_flight.inc(3)\nimport os\nos._exit(0)\n")
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", worker], env=env, check=True)
    # the survivor says when it has counted (its file exists before the increment)
    lives_on = worker.replace("os._exit(0)", "print('counted', flush=True)\nimport time; time.sleep(30)")
    survivor = subprocess.Popen([sys.executable, "-c", lives_on], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert survivor.stdout is not None and survivor.stdout.readline() == "counted\n"
        assert len(list(tmp_path.glob("gauge_livesum_*.db"))) == 2

        def in_flight() -> float:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry, path=str(tmp_path))  # type: ignore[no-untyped-call]
            return float(registry.get_sample_value("shadowdiff_shadow_requests_in_flight") or 0)

        assert in_flight() == 6
        _forget_dead_workers(str(tmp_path))
        assert in_flight() == 3                            # the living worker's still count
    finally:
        survivor.kill()
        survivor.wait()


def test_a_scrape_while_a_worker_creates_its_file_counts_the_others(tmp_path: Path) -> None:
    """A worker's file exists empty for a moment before it is sized: a scrape then sums the
    other workers' files, where prometheus_client's own collector fails the scrape."""
    from prometheus_client import CollectorRegistry, multiprocess

    from shadowdiff.proxy.metrics import WorkersCollector

    worker = "from shadowdiff.proxy.metrics import ProxyMetrics\nm = ProxyMetrics()\nm.shadow_in_flight.inc(3)\n"
    subprocess.run([sys.executable, "-c", worker], env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)},
                   check=True)
    (tmp_path / "counter_999999.db").touch()              # created, not yet sized
    with pytest.raises(struct.error):
        multiprocess.MultiProcessCollector(CollectorRegistry(), path=str(tmp_path)).collect()  # type: ignore[no-untyped-call]
    registry = CollectorRegistry()
    WorkersCollector(registry, path=str(tmp_path))
    assert registry.get_sample_value("shadowdiff_shadow_requests_in_flight") == 3


def test_verdicts_are_labelled_by_the_side_they_go_against(tmp_path: Path) -> None:
    """Every directional verdict by its side (improvement, wrong_side=baseline: the
    candidate better), zeros included; one from an older store without a side counts
    under the side it meant (minor: the candidate, improvement: the baseline)."""
    import sqlalchemy as sa

    from shadowdiff.proxy.metrics import StateCollector
    from shadowdiff.proxy.store_health import LastKnown
    from shadowdiff.store import schema
    from shadowdiff.store.review import serve_review_state
    from tests.support.reporting import answered_pair as _pair
    from tests.support.runs import flips

    store = Store.open(tmp_path)
    run = store.create_run("serve", {})
    store.add_pairs(run, [_pair(key, i, *texts) for i, (key, texts) in enumerate(flips(5).items())])
    ids = [p["id"] for p in store.pairs(run)]
    queue = ReviewQueue(store)
    queue.add_review(ids[0], "ana", "improvement", "baseline")
    queue.add_review(ids[1], "ana", "improvement", "candidate")
    queue.add_review(ids[2], "ana", "minor", "baseline")
    with store.engine.begin() as c:
        for pair, verdict in ((ids[3], "minor"), (ids[4], "improvement")):
            c.execute(schema.reviews.insert().values(pair_id=pair, reviewer="old", verdict=verdict, wrong_side=None,
                                                     note="", created_at=sa.func.now()))
    collector = StateCollector(version="t", baseline="b", candidate="c", margin=0.1,
                               review=LastKnown(lambda: serve_review_state(store), name="test-review"))
    (family,) = [f for f in collector.collect() if f.name == "shadowdiff_review_verdicts"]
    series = {(s.labels["verdict"], s.labels["wrong_side"]): s.value for s in family.samples}
    store.close()
    assert series == {
        ("equivalent", "none"): 0, ("wording", "none"): 0, ("ambiguous", "none"): 0,
        ("factual", "baseline"): 0, ("factual", "candidate"): 0,
        ("minor", "baseline"): 1, ("minor", "candidate"): 1,
        ("improvement", "baseline"): 2, ("improvement", "candidate"): 1,
    }
    assert "the worse side of a minor or improvement one" in family.documentation


def test_a_metrics_token_closes_metrics_to_reviewers(start_simulator: Start, start_proxy: Start,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """With the review UI on the same port, the verdict series would let a reviewer follow
    another's verdicts: --metrics-token closes /metrics to all but the scraper, and
    without it serve says so once."""
    baseline = start_simulator()
    with caplog.at_level(logging.WARNING, logger="shadowdiff.proxy"):
        url, _ = start_proxy(primary=baseline, shadow=start_simulator(), review_token="review-token-x",
                             metrics_token="metrics-token-x")
    assert not [r for r in caplog.records if "/metrics is open" in r.getMessage()]
    refused = httpx.get(url + "/metrics")
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert httpx.get(url + "/metrics", headers={"authorization": "Bearer wrong-token"}).status_code == 401
    scraped = httpx.get(url + "/metrics", headers={"authorization": "Bearer metrics-token-x"})
    assert scraped.status_code == 200 and "shadowdiff_review_verdicts" in scraped.text
    assert httpx.get(url + "/healthz").status_code == 200           # probes need no token
    with caplog.at_level(logging.WARNING, logger="shadowdiff.proxy"):
        url, _ = start_proxy(primary=baseline, shadow=start_simulator(), review_token="review-token-x")
    assert [r for r in caplog.records if "/metrics is open" in r.getMessage()]
    assert httpx.get(url + "/metrics").status_code == 200

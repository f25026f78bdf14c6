"""Mirroring: the shadow never hurts the client, and every pair is counted and stored."""

from __future__ import annotations

import resource
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from shadowdiff.simulator import profiles
from shadowdiff.simulator.faults import Fault, FaultSettings
from shadowdiff.simulator.scheduler import LatencyModel
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support.proxying import FP8, chat, counter, serve_run_stored, settled, wait_for
from tests.support.servers import HTTP
from tests.support.simulating import expected_outcomes

Start = Callable[..., Any]


@pytest.mark.parametrize(("fault", "reasons", "extra"), [
    ("error_500", ("http_error", "http_error"), {}),
    ("error_503", ("http_error", "http_error"), {}),
    ("error_429", ("http_error", "http_error"), {}),
    ("hang", ("timeout", "timeout"), {"shadow_timeout": 0.3}),
    ("slow", ("ok", "ok"), {}),
    ("reset", ("reset", "reset"), {}),
    ("error_frame", ("error_event", "http_error"), {}),  # not streamed, the engine failure is a 500
    ("malformed", ("malformed", "malformed"), {}),
    ("split_utf8", ("ok", "ok"), {}),
])
def test_a_misbehaving_shadow_changes_nothing_for_the_client(
        start_simulator: Start, start_proxy: Start, fault: str, reasons: tuple[str, str],
        extra: dict[str, Any]) -> None:
    primary = start_simulator()
    shadow = start_simulator(faults=FaultSettings(rates={Fault(fault): 1.0}, hang_seconds=30, slow_seconds=0.01))
    proxy, app = start_proxy(primary=primary, shadow=shadow, **extra)
    for body in (chat("Explain rivers.", stream=True), chat("Explain rivers.")):
        direct = HTTP.post(primary + "/v1/chat/completions", json=body, headers={"X-Request-Id": "r"})
        proxied = HTTP.post(proxy + "/v1/chat/completions", json=body, headers={"X-Request-Id": "r"})
        assert proxied.status_code == direct.status_code == 200
        assert _without_created(proxied.content) == _without_created(direct.content)
    settled(app)
    for reason in set(reasons):
        result = "mirrored" if reason == "ok" else "failed"
        assert counter(app, "shadow", result, reason) == reasons.count(reason)


def _without_created(raw: bytes) -> bytes:
    import re

    return re.sub(rb'"created":\d+', b"", raw)


def test_shadow_down(start_simulator: Start, start_proxy: Start) -> None:
    from tests.support.servers import free_port

    primary = start_simulator()
    proxy, app = start_proxy(primary=primary, shadow=f"http://127.0.0.1:{free_port()}")
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("hi")).status_code == 200
    settled(app)
    assert counter(app, "shadow", "failed", "connect_error") == 1
    assert counter(app, "pairs", "error", "true") == 1


def test_pairs_land_in_the_store_with_the_right_outcomes(start_simulator: Start, start_proxy: Start,
                                                         tmp_path: Path) -> None:
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8"))
    store = tmp_path / "store"
    proxy, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, store=str(store), keep_rate=0.0)
    prompts = [f"Question {i}: explain {t} for a newcomer." for i, t in enumerate(["rivers", "taxes", "gardens"] * 12)]
    for i, prompt in enumerate(prompts):
        r = HTTP.post(proxy + "/v1/chat/completions", json=chat(prompt, stream=i % 2 == 0, logprobs=True,
                                                                top_logprobs=2), headers={"X-Request-Id": f"q{i}"})
        assert r.status_code == 200
    settled(app)
    expected = expected_outcomes(prompts)
    assert counter(app, "pairs", "identical", "true") == expected["identical"]
    assert counter(app, "pairs", "equivalent", "true") == expected["equivalent"]
    changed = counter(app, "pairs", "near", "true") + counter(app, "pairs", "divergent", "true")
    assert changed == expected["changed"]
    opened = Store.open(store)
    run = opened.latest_run("serve")
    assert run is not None
    # the outcome counts reach the store on their own, about once a second
    wait_for(lambda: sum(opened.counts(run.id).values()) == len(prompts))
    app.writer.close()  # flush now (the fixture's shutdown would too, later)
    pairs = list(opened.pairs(run.id))
    # every non-identical comparable pair is stored, with both answers; no identical one (keep_rate 0)
    assert len(pairs) == expected["equivalent"] + expected["changed"]
    for pair in pairs:
        assert pair["comparable"]
        assert pair["outcome"] in ("equivalent", "near", "divergent")
        assert set(pair.answers) == {Side.BASELINE, Side.CANDIDATE}
        assert pair.answers[Side.CANDIDATE].model == FP8
        assert pair["key"].startswith("q")
        if pair["outcome"] != "equivalent":
            assert pair["first_token"] is not None
    # the identical pairs were not stored, but the run counted them: a report has the true mix
    from shadowdiff.report.summary import summarize
    from shadowdiff.report.write import summary_text
    from shadowdiff.verdict.acceptance import acceptance

    assert opened.counts(run.id) == {("pairs", o, True): n for o, n in expected.items() if n and o != "changed"} | {
        ("pairs", o, True): int(counter(app, "pairs", o, "true")) for o in ("near", "divergent")
        if counter(app, "pairs", o, "true")}
    summary = summarize(opened, run.id)
    assert (summary.pairs, summary.stored, summary.comparable) == (len(prompts), len(pairs), len(prompts))
    assert summary.outcomes["identical"] == expected["identical"]
    # "changed" is every pair not identical; "in substance" leaves out the formatting-only ones
    assert summary.changed_rate == pytest.approx((expected["changed"] + expected["equivalent"]) / len(prompts))
    assert summary.substantive_rate == pytest.approx(expected["changed"] / len(prompts))
    assert f"{len(pairs)} of them stored" in summary_text(summary)
    assert acceptance(opened, run.id).identical == expected["identical"]
    opened.close()
    app.writer = None  # closed above


def test_a_request_the_primary_refuses_is_no_candidate_error(start_simulator: Start, start_proxy: Start,
                                                            tmp_path: Path) -> None:
    """A client's bad request (the primary answers 400) is counted in the metrics, and
    in the run as a request that made no pair, never as an error against the candidate."""
    primary, shadow = start_simulator(), start_simulator()
    proxy, app = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=1.0)
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("fine")).status_code == 200
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("bad", max_tokens=-1)).status_code == 400
    settled(app)
    # the client's own error, apart from the upstreams' errors
    assert (counter(app, "pairs", "refused", "true"), counter(app, "pairs", "error", "true")) == (1, 0)
    app.pairs.flush_counts()
    app.writer.close()
    from shadowdiff.verdict.acceptance import acceptance

    opened = Store.open(tmp_path / "store")
    run = opened.latest_run("serve")
    assert run is not None
    assert opened.counts(run.id) == {("pairs", "identical", True): 1, ("not_compared", "primary_4xx", True): 1}
    assert acceptance(opened, run.id).errors == 0
    opened.close()
    app.writer = None  # closed above


def test_sampled_requests_are_labelled_not_counted(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator()
    shadow = start_simulator()
    proxy, app = start_proxy(primary=primary, shadow=shadow, keep_rate=1.0)
    for i in range(6):
        HTTP.post(proxy + "/v1/chat/completions", json=chat(f"p{i}", temperature=0.9))
    HTTP.post(proxy + "/v1/chat/completions", json=chat("seeded", temperature=0.9, seed=3))
    HTTP.post(proxy + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "default"}]})
    settled(app)
    not_comparable = sum(counter(app, "pairs", o, "false") for o in ("identical", "equivalent", "near", "divergent"))
    assert not_comparable == 7
    # the seeded one is comparable: same seed, same parameters, both sides baseline here
    assert counter(app, "pairs", "identical", "true") == 1
    assert app.metrics.similarity._sum.get() == 0  # sampled pairs never enter the similarity histogram


def test_sampling_rate_and_consistent_sampling(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator()
    shadow = start_simulator()
    proxy, app = start_proxy(primary=primary, shadow=shadow, sample_rate=0.0)
    HTTP.post(proxy + "/v1/chat/completions", json=chat("x"))
    settled(app)
    assert counter(app, "shadow", "skipped", "sampled_out") == 1
    proxy, app = start_proxy(primary=primary, shadow=shadow, sample_rate=0.5, sample_header="x-session-id")
    decisions: dict[str, set[bool]] = {}
    for session in (f"s{i}" for i in range(20)):
        for _ in range(3):
            before = counter(app, "shadow", "skipped", "sampled_out")
            HTTP.post(proxy + "/v1/chat/completions", json=chat("x"), headers={"x-session-id": session})
            settled(app)
            decisions.setdefault(session, set()).add(counter(app, "shadow", "skipped", "sampled_out") > before)
    assert all(len(d) == 1 for d in decisions.values())  # a session is always in, or always out
    assert 0 < sum(next(iter(d)) for d in decisions.values()) < 20


def test_what_is_not_mirrored(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator()
    shadow = start_simulator()
    proxy, app = start_proxy(primary=primary, shadow=shadow, max_mirror_body=10_000,
                             exclude_models=("Qwen/Qwen3-8B",))
    r = HTTP.post(proxy + "/v1/chat/completions", content=b"this is not json",
                  headers={"content-type": "application/json"})
    assert r.status_code == 400  # the primary's answer, forwarded
    assert "json_invalid" in r.text
    big = {"messages": [{"role": "user", "content": "word " * 50_000}], "max_tokens": 2}
    r = HTTP.post(proxy + "/v1/chat/completions", json=big)
    assert r.status_code == 400  # longer than the simulator's context: its answer, forwarded
    HTTP.post(proxy + "/v1/chat/completions", json=chat("x", model="Qwen/Qwen3-8B"))
    HTTP.get(proxy + "/v1/models")
    settled(app)
    assert counter(app, "shadow", "skipped", "unparsable") == 1
    assert counter(app, "shadow", "skipped", "too_large") == 1
    assert counter(app, "shadow", "skipped", "excluded") == 1
    assert HTTP.get(shadow + "/metrics").text.count("vllm:e2e_request_latency_seconds_count{") == 1
    assert 'vllm:e2e_request_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 0.0' in HTTP.get(
        shadow + "/metrics").text


def test_a_huge_body_is_forwarded_whole(start_proxy: Start) -> None:
    from tests.support.proxying import echo_app
    from tests.support.servers import serve_app

    with serve_app(echo_app()) as upstream:
        proxy, app = start_proxy(primary=upstream, shadow=upstream, max_mirror_body=1024, allow_same_target=True)
        body = b'{"messages": [{"role": "user", "content": "' + b"x" * (8 * 1024 * 1024) + b'"}]}'
        got = HTTP.post(proxy + "/v1/chat/completions", content=body,
                        headers={"content-type": "application/json"}).json()
        assert got["body_length"] == len(body)
        settled(app)
        assert counter(app, "shadow", "skipped", "too_large") == 1


def test_a_hanging_shadow_under_200_concurrent_streams(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(latency=LatencyModel(tpot=0.002))
    shadow = start_simulator(faults=FaultSettings(rates={Fault.HANG: 1.0}, hang_seconds=60))
    proxy, app = start_proxy(primary=primary, shadow=shadow, max_shadow_in_flight=16, shadow_timeout=60)
    rss_before = _rss_mib()
    failures: list[BaseException] = []

    def one(i: int) -> None:
        try:
            with httpx.Client(timeout=60) as client:
                r = client.post(proxy + "/v1/chat/completions", json=chat(f"q{i}", stream=True, max_tokens=30))
                assert r.status_code == 200
                assert r.text.endswith("data: [DONE]\n\n")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    rss_peak = rss_before
    while any(t.is_alive() for t in threads):
        rss_peak = max(rss_peak, _rss_mib())
        time.sleep(0.01)
    assert failures == []
    assert app.mirror.peak <= 16  # the high-water mark the mirror keeps itself
    assert counter(app, "shadow", "skipped", "in_flight_bound") >= 200 - 16
    assert rss_peak - rss_before < 200  # MiB, for 200 streams and 16 parked shadow requests


def _rss_mib() -> float:
    """This process's resident memory now (ru_maxrss would be the lifetime peak)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def test_primary_may_be_the_candidate(start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    baseline = start_simulator()
    candidate = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8-heavy"))
    proxy, app = start_proxy(primary=candidate, shadow=baseline, primary_side=Side.CANDIDATE,
                             shadow_model="Qwen/Qwen3-8B", store=str(tmp_path / "s"), keep_rate=1.0)
    for i in range(10):
        HTTP.post(proxy + "/v1/chat/completions", json=chat(f"Explain topic {i}.", model=FP8))
    settled(app)
    app.writer.close()
    opened = Store.open(tmp_path / "s")
    run = opened.latest_run()
    assert run is not None
    assert run.settings["primary_side"] == "candidate"
    models = Counter((p.answers[Side.BASELINE].model, p.answers[Side.CANDIDATE].model) for p in opened.pairs(run.id))
    assert models == {("Qwen/Qwen3-8B", FP8): 10}
    opened.close()
    app.writer = None


def test_the_primary_as_its_own_shadow_is_refused_unless_asked_for() -> None:
    """Every pair would agree and the run would PASS on no candidate: refused, however the
    one server is written, unless --allow-same-target (to measure its noise)."""
    from shadowdiff.errors import ConfigError
    from shadowdiff.proxy.settings import ProxySettings

    for shadow in ("http://127.0.0.1:8000/", "http://localhost:8000/v1", "http://0.0.0.0:8000"):
        with pytest.raises(ConfigError, match="--primary and --shadow are the same server and model"):
            ProxySettings(primary="http://127.0.0.1:8000", shadow=shadow)
        ProxySettings(primary="http://127.0.0.1:8000", shadow=shadow, allow_same_target=True)
    # one server serving the candidate under another model name is another target
    ProxySettings(primary="http://127.0.0.1:8000", shadow="http://127.0.0.1:8000", shadow_model="Qwen/Qwen3-8B-FP8")


def test_pairs_cut_by_the_token_cap_are_counted_stored_or_not(start_simulator: Start, start_proxy: Start,
                                                              tmp_path: Path) -> None:
    """A serve run keeps few identical pairs, so the share cut by the token cap on both sides
    comes from what the proxy saw: 8 of 10 requests capped at 3 tokens, stored or not, make
    a run that cannot pass (--max-capped 0.5)."""
    from shadowdiff.verdict.acceptance import acceptance
    from shadowdiff.vocabulary import Decision

    primary, shadow = start_simulator(), start_simulator()   # the same answers: identical, rarely stored
    proxy, app = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=0.0)
    for i in range(10):
        body = chat(f"Explain topic {i} in detail.", max_tokens=3 if i < 8 else 256)
        assert HTTP.post(proxy + "/v1/chat/completions", json=body).status_code == 200
    with serve_run_stored(app, tmp_path / "store") as (opened, run_id):
        assert opened.counts(run_id)[("capped", "identical", True)] == 8
        assert not list(opened.pairs(run_id))   # none stored: the share is from the counts
        verdict = acceptance(opened, run_id, min_compared=1)
        assert (verdict.capped["pairs"], verdict.capped["of"]) == (8, 10)
        assert verdict.decision is Decision.INCOMPLETE
        assert any("8 of 10 comparable pairs (80 %) hit the token cap on both sides" in r for r in verdict.reasons)


def test_pairs_cut_inside_the_thinking_are_unanswered_not_failed(start_simulator: Start, start_proxy: Start,
                                                                 tmp_path: Path) -> None:
    """A reasoning model cut by the token cap inside its thinking, alike on both sides: the
    pairs are "unanswered" (nothing of an answer compared), counted as such and kept like
    identical ones, never a failure of the proxy's own that counts against the run."""
    qwen3 = {"reasoning_parser": "qwen3"}
    primary, shadow = start_simulator(**qwen3), start_simulator(**qwen3)
    proxy, app = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=1.0)
    for i in range(4):
        body = chat(f"Explain topic {i} in detail.", max_tokens=3)
        assert HTTP.post(proxy + "/v1/chat/completions", json=body).status_code == 200
    with serve_run_stored(app, tmp_path / "store") as (opened, run_id):
        counts = opened.counts(run_id)
        assert counts[("pairs", "unanswered", True)] == 4, counts
        assert not any(of == "not_compared" for of, _, _ in counts), counts
        assert Counter(p["outcome"] for p in opened.pairs(run_id)) == {"unanswered": 4}   # kept at keep_rate
    assert counter(app, "pairs", "unanswered", "true") == 4

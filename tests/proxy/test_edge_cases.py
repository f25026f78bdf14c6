"""Edge cases of the proxy: odd bodies, odd upstreams, odd clients."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shadowdiff.proxy.settings import CaptureSettings
from shadowdiff.simulator import profiles
from shadowdiff.simulator.scheduler import LatencyModel
from shadowdiff.store import Store
from tests.support.proxying import FP8, chat, counter, raw_request, settled, wait_for
from tests.support.servers import HTTP, serve_app

Start = Callable[..., Any]


def test_a_body_too_deep_to_rewrite_is_forwarded_not_mirrored(start_simulator: Start, start_proxy: Start) -> None:
    primary, shadow = start_simulator(), start_simulator(served_model_names=(FP8,))
    proxy, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8)
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    r = HTTP.post(proxy + "/v1/chat/completions", json={**chat("hi"), "extra": deep})
    assert r.status_code == 200
    settled(app)
    assert counter(app, "shadow", "skipped", "unparsable") == 1


def test_a_client_leaving_during_the_upload_is_not_a_5xx(start_simulator: Start, start_proxy: Start) -> None:
    proxy, app = start_proxy(primary=start_simulator())
    raw_request(proxy, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: 100000\r\n\r\n" + b'{"messages": [' + b" " * 1000, read=False)
    time.sleep(0.3)
    assert counter(app, "requests", "chat", "5xx") == 0
    assert HTTP.get(proxy + "/healthz").status_code == 200


def test_a_client_leaving_before_the_answer_starts_aborts_it(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(latency=LatencyModel(tpot=0.02))
    shadow = start_simulator(latency=LatencyModel(tpot=0.02))
    proxy, app = start_proxy(primary=primary, shadow=shadow)
    # not streamed: vLLM sends nothing until the whole answer is generated (~40 s here)
    body = chat("Explain rivers.", max_tokens=2000, ignore_eos=True)
    with pytest.raises(httpx.ReadTimeout):
        HTTP.post(proxy + "/v1/chat/completions", json=body, timeout=0.5)
    wait_for(lambda: HTTP.get(primary + "/load").json()["server_load"] == 0, seconds=2)
    wait_for(lambda: counter(app, "pairs", "aborted", "true") == 1, seconds=2)
    assert HTTP.get(shadow + "/load").json() == {"server_load": 0}


def test_the_in_flight_bound_holds_when_bodies_complete_together(start_simulator: Start,
                                                                  start_proxy: Start, tmp_path: Path) -> None:
    """The bound holds, and the requests it left unmirrored are in the run: its report
    states the share of the traffic that made a pair."""
    primary = start_simulator()
    shadow = start_simulator(latency=LatencyModel(ttft=0.5))
    proxy, app = start_proxy(primary=primary, shadow=shadow, max_shadow_in_flight=2, store=str(tmp_path / "s"))
    host, port = proxy.removeprefix("http://").split(":")
    body = json.dumps(chat("x", max_tokens=2)).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    sockets = [socket.create_connection((host, int(port))) for _ in range(30)]
    for s in sockets:
        s.sendall(head + body[:-1])
    time.sleep(0.2)
    for s in sockets:  # the last byte of every body at once
        s.sendall(body[-1:])
    for s in sockets:
        s.settimeout(10)
        # (read whole: a client that leaves before its answer's end makes no pair)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        s.close()
    settled(app)
    assert app.mirror.peak <= 2
    assert counter(app, "shadow", "skipped", "in_flight_bound") == 28
    app.pairs.flush_counts()
    app.writer.close()
    app.writer = None
    from shadowdiff.report.summary import summarize
    from shadowdiff.report.write import summary_text

    store = Store.open(tmp_path / "s")
    try:
        run = store.latest_run("serve")
        assert run is not None
        summary = summarize(store, run.id)
        assert summary.not_mirrored == {"in_flight_bound": 28} and summary.pairs == 2
        assert ("2 of the 30 chat and completions requests the proxy saw made a pair (6.7%); 28 were not "
                "mirrored: 28 the shadow already had --max-shadow-in-flight requests") in summary_text(summary)
    finally:
        store.close()


def test_reused_request_ids_lose_no_pair(start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(FP8,), profile=profiles.builtin("fp8-heavy"))
    proxy, app = start_proxy(primary=primary, shadow=shadow, shadow_model=FP8, store=str(tmp_path / "s"))
    for i in range(8):
        HTTP.post(proxy + "/v1/chat/completions", json=chat(f"Explain topic {i}."), headers={"X-Request-Id": "same"})
    settled(app)
    app.writer.close()
    changed = sum(counter(app, "pairs", o, "true") for o in ("equivalent", "near", "divergent"))
    store = Store.open(tmp_path / "s")
    run = store.latest_run()
    assert run is not None
    keys = [p["key"] for p in store.pairs(run.id)]
    assert len(keys) == changed > 0
    assert all(k.startswith("same-") for k in keys)
    assert app.metrics.stored._value.get() == changed
    store.close()
    app.writer = None


def test_capture_survives_a_request_it_cannot_write(start_simulator: Start, start_proxy: Start,
                                                    tmp_path: Path) -> None:
    capture = tmp_path / "c.jsonl"
    proxy, app = start_proxy(primary=start_simulator(), capture=CaptureSettings(capture))
    deep: Any = "x"
    for _ in range(400):
        deep = [deep]
    HTTP.post(proxy + "/v1/chat/completions", json={**chat("one"), "extra": deep})
    HTTP.post(proxy + "/v1/chat/completions", json=chat("two"))
    app.capture.close()
    app.capture = None
    lines = [json.loads(line) for line in capture.read_text().splitlines()]
    assert [line["body"]["messages"][0]["content"] for line in lines] == ["two"]


def garbage_upstream() -> Starlette:
    """A shadow that answers 200 with bodies of the wrong shape."""

    async def chat_endpoint(request: Request) -> Response:
        body = await request.json()
        shapes = [{"choices": "abc"}, {"choices": [{"message": {"content": ["a list"]}}]}, {"usage": [1]}]
        return JSONResponse(shapes[len(body["messages"][0]["content"]) % len(shapes)])

    return Starlette(routes=[Route("/v1/chat/completions", chat_endpoint, methods=["POST"])])


def test_a_shadow_sending_the_wrong_shapes_is_contained(start_simulator: Start, start_proxy: Start) -> None:
    with serve_app(garbage_upstream()) as shadow:
        proxy, app = start_proxy(primary=start_simulator(), shadow=shadow)
        for prompt in ("a", "bb", "ccc"):
            assert HTTP.post(proxy + "/v1/chat/completions", json=chat(prompt)).status_code == 200
        settled(app)
        assert counter(app, "shadow", "failed", "malformed") == 3
        assert counter(app, "pairs", "error", "true") == 3


def test_a_shadow_speaking_invalid_http_is_contained(start_simulator: Start, start_proxy: Start) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def serve() -> None:
        while True:   # (the proxy's probe of /health at start-up gets the same)
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"THIS IS NOT HTTP\r\n\r\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    proxy, app = start_proxy(primary=start_simulator(), shadow=f"http://127.0.0.1:{port}")
    for _ in range(2):
        assert HTTP.post(proxy + "/v1/chat/completions", json=chat("x")).status_code == 200
    settled(app)
    assert counter(app, "shadow", "failed", "malformed") == 2
    server.shutdown(socket.SHUT_RDWR)   # wakes the accept
    server.close()
    thread.join(5)


def test_primary_model_rewrites_only_the_primary(start_proxy: Start) -> None:
    from tests.support.proxying import echo_app

    with serve_app(echo_app()) as upstream:
        proxy, _ = start_proxy(primary=upstream, primary_model="served-name")
        body = json.dumps({"model": "client-name", "messages": [{"role": "user", "content": "x"}]}).encode()
        got = HTTP.post(proxy + "/v1/chat/completions", content=body,
                        headers={"content-type": "application/json"}).json()
        expected = json.dumps({"model": "served-name", "messages": [{"role": "user", "content": "x"}]},
                              separators=(",", ":")).encode()
        import hashlib

        assert got["body_sha256"] == hashlib.sha256(expected).hexdigest()
        other = HTTP.post(proxy + "/v1/models/x", content=body, headers={"content-type": "application/json"}).json()
        assert other["body_sha256"] == hashlib.sha256(body).hexdigest()  # other routes untouched


def test_a_websocket_upgrade_is_served_as_plain_http(start_simulator: Start, start_proxy: Start) -> None:
    proxy, _ = start_proxy(primary=start_simulator())
    answer = raw_request(proxy, b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 404")   # the primary's own answer: it has no /ws


def test_long_response_headers_pass(start_proxy: Start) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-big", b"v" * 20000)]})
        await send({"type": "http.response.body", "body": b"ok"})

    with serve_app(app) as upstream:
        proxy, _ = start_proxy(primary=upstream)
        r = HTTP.get(proxy + "/anything")
        assert r.status_code == 200
        assert len(r.headers["x-big"]) == 20000


def test_connection_named_headers_are_hop_by_hop(start_proxy: Start) -> None:
    from tests.support.proxying import echo_app

    with serve_app(echo_app()) as upstream:
        proxy, _ = start_proxy(primary=upstream)
        got = HTTP.get(proxy + "/x", headers={"Connection": "keep-alive, x-secret-hop", "x-secret-hop": "1",
                                              "x-kept": "2"}).json()
        names = {k for k, _ in got["headers"]}
        assert "x-secret-hop" not in names
        assert "x-kept" in names


def test_primary_timings_are_recorded_without_a_shadow(start_simulator: Start, start_proxy: Start) -> None:
    proxy, app = start_proxy(primary=start_simulator())
    HTTP.post(proxy + "/v1/chat/completions", json=chat("x", stream=True))
    HTTP.post(proxy + "/v1/chat/completions", json=chat("y"))

    def counts() -> list[float]:
        return [s.value for m in app.metrics.registry.collect() for s in m.samples
                if s.name == "shadowdiff_upstream_request_duration_seconds_count" and s.labels["side"] == "baseline"]

    # (observed once the answer's last byte is sent: the client may read it a moment before)
    wait_for(lambda: counts() == [2.0])
    assert app.metrics.duration.labels("baseline")._sum.get() > 0
    ttfts = [s.value for m in app.metrics.registry.collect() for s in m.samples
             if s.name == "shadowdiff_upstream_time_to_first_token_seconds_count" and s.labels["side"] == "baseline"]
    assert ttfts == [2.0]


def test_stopping_with_streams_in_flight_aborts_their_pairs_promptly(start_simulator: Start, tmp_path: Path) -> None:
    from shadowdiff.commands.background import serve_in_thread
    from shadowdiff.proxy.app import build_app
    from shadowdiff.proxy.settings import ProxySettings

    primary = start_simulator(latency=LatencyModel(tpot=0.05))
    shadow = start_simulator(latency=LatencyModel(tpot=0.05))
    app = build_app(ProxySettings(primary=primary, shadow=shadow, store=str(tmp_path), drain_timeout=3))
    holder: dict[str, Any] = {}
    context = serve_in_thread(app, lifespan="on", timeout_graceful_shutdown=1)
    proxy = context.__enter__()

    def stream() -> None:
        with httpx.Client(timeout=30) as client:
            try:
                holder["answer"] = client.post(proxy + "/v1/chat/completions", json=chat(
                    "x", stream=True, max_tokens=500, ignore_eos=True))
            except httpx.HTTPError as exc:
                holder["error"] = exc

    thread = threading.Thread(target=stream)
    thread.start()
    wait_for(lambda: HTTP.get(primary + "/load").json()["server_load"] == 1)
    started = time.monotonic()
    context.__exit__(None, None, None)  # graceful timeout 1 s, then the streams are cut
    stopped = time.monotonic() - started
    thread.join()
    assert stopped < 3  # not stuck waiting on a pair that can never complete
    # the cut stream ends as vLLM ends a failed one: an error event, then [DONE]
    assert "error" not in holder
    events = holder["answer"].text.split("\n\n")
    assert events[-3:] == [
        'data: {"error":{"message":"the proxy is shutting down: the answer was cut","type":'
        '"ServiceUnavailableError","param":null,"code":503}}', "data: [DONE]", ""]
    # the pair is not compared, and the run says why: the proxy stopped (an error: not checked)
    assert counter(app, "pairs", "error", "true") == 1
    assert counter(app, "shadow", "skipped", "drained") == 1


def test_a_request_cut_by_the_drain_deadline_before_its_answer_gets_an_openai_error(
        start_simulator: Start, tmp_path: Path) -> None:
    """Not uvicorn's plain-text 500: the 503 and error body vLLM itself sends."""
    from shadowdiff.commands.background import serve_in_thread
    from shadowdiff.proxy.app import build_app
    from shadowdiff.proxy.settings import ProxySettings

    primary = start_simulator(latency=LatencyModel(tpot=0.05))   # 500 tokens, not streamed: 25 s to the headers
    app = build_app(ProxySettings(primary=primary, shadow=start_simulator(), store=str(tmp_path), drain_timeout=1))
    holder: dict[str, Any] = {}
    context = serve_in_thread(app, lifespan="on", timeout_graceful_shutdown=1)
    proxy = context.__enter__()
    thread = threading.Thread(target=lambda: holder.setdefault("answer", httpx.post(
        proxy + "/v1/chat/completions", json=chat("x", max_tokens=500, ignore_eos=True), timeout=30)))
    thread.start()
    wait_for(lambda: HTTP.get(primary + "/load").json()["server_load"] == 1)
    context.__exit__(None, None, None)
    thread.join()
    answer = holder["answer"]
    assert answer.status_code == 503 and answer.headers["content-type"] == "application/json"
    assert answer.json() == {"error": {"message": "the proxy is shutting down and the primary did not answer "
                                                  "in time", "type": "ServiceUnavailableError", "param": None,
                                       "code": 503}}
    assert counter(app, "shadow", "skipped", "drained") == 1


def test_requests_that_make_no_pair_are_counted_in_the_run(start_simulator: Start, start_proxy: Start,
                                                          tmp_path: Path) -> None:
    """A failing primary costs the run a pair (an error against --max-errors, as a failed
    side does in a replay); a client's bad request only shows. Both are in the report."""
    from shadowdiff.report.summary import summarize
    from shadowdiff.report.write import summary_text
    from shadowdiff.simulator.faults import Fault, FaultSettings
    from shadowdiff.verdict.acceptance import acceptance

    failing = start_simulator(faults=FaultSettings(rates={Fault("error_500"): 1.0}))
    proxy, app = start_proxy(primary=failing, shadow=start_simulator(served_model_names=(FP8,)),
                             shadow_model=FP8, store=str(tmp_path / "store"))
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("Explain rivers.")).status_code == 500
    assert HTTP.post(proxy + "/v1/chat/completions", json={"messages": "not a list"}).status_code == 400
    settled(app)
    app.pairs.flush_counts()   # (the proxy hands its counts over about once a second)
    store = Store.open(tmp_path / "store")
    run = store.latest_run("serve")
    assert run is not None
    wait_for(lambda: sum(summarize(store, run.id).not_compared.values()) >= 2)   # (in one batch or two)
    summary = summarize(store, run.id)
    assert summary.not_compared == {"primary_failed": 1, "primary_4xx": 1}
    assert "2 requests made no pair: 1 the primary refused the request (4xx); 1 the primary failed" \
        in summary_text(summary)
    verdict = acceptance(store, run.id)
    assert verdict.errors == 1 and verdict.compared == 0
    store.close()


def test_a_candidate_primary_refusing_requests_counts_against_the_run(start_simulator: Start, start_proxy: Start,
                                                                      tmp_path: Path) -> None:
    """With the candidate as primary, its 4xx is no client's bad request as far as anyone
    can tell: an error, so the gate cannot PASS over it (a hostile review's finding)."""
    from shadowdiff.verdict.acceptance import acceptance
    from shadowdiff.vocabulary import Decision, Side

    candidate = start_simulator(served_model_names=(FP8,), max_model_len=60)   # refuses long requests
    proxy, app = start_proxy(primary=candidate, primary_side=Side.CANDIDATE, shadow=start_simulator(),
                             store=str(tmp_path / "store"))
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("Explain rivers.", max_tokens=100)).status_code == 400
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("Explain rivers.", max_tokens=8)).status_code == 200
    settled(app)
    app.pairs.flush_counts()
    store = Store.open(tmp_path / "store")
    run = store.latest_run("serve")
    assert run is not None
    # (both requests' counts: the writer may store them in two batches)
    wait_for(lambda: ("not_compared", "candidate_4xx", True) in (counts := store.counts(run.id))
             and any(of == "pairs" for of, _, _ in counts))
    store.finish_run(run.id)
    verdict = acceptance(store, run.id, min_reviewed=0)
    assert verdict.errors == 1 and verdict.decision is Decision.INCOMPLETE
    store.close()


def test_a_pair_the_proxy_fails_to_complete_counts_against_the_run(start_simulator: Start, start_proxy: Start,
                                                                   tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault of the proxy's own while it compares: the client is served, one line is
    logged, and the request is in the run's counts as an error, not missing from them."""
    from shadowdiff.report.summary import summarize
    from shadowdiff.verdict.acceptance import acceptance

    def broken(*_: Any) -> Any:
        raise RuntimeError("a bug in the comparison")

    monkeypatch.setattr("shadowdiff.proxy.pairmaking.compare_answers", broken)
    proxy, app = start_proxy(primary=start_simulator(), shadow=start_simulator(served_model_names=(FP8,)),
                             shadow_model=FP8, store=str(tmp_path / "store"))
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("Explain rivers.")).status_code == 200
    settled(app)
    app.pairs.flush_counts()
    store = Store.open(tmp_path / "store")
    try:
        run = store.latest_run("serve")
        assert run is not None
        wait_for(lambda: bool(summarize(store, run.id).not_compared))
        assert summarize(store, run.id).not_compared == {"proxy_failed": 1}
        store.finish_run(run.id)
        assert acceptance(store, run.id, min_reviewed=0).errors == 1
    finally:
        store.close()


def test_a_bodiless_chat_request_and_a_mirror_that_fails_are_counted_as_not_mirrored(
        start_simulator: Start, start_proxy: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chat request the proxy saw is in its run: one with no body at all (no JSON
    object), and one whose mirroring failed on a fault of the proxy's own."""
    from shadowdiff.proxy.shadow import Mirror

    proxy, app = start_proxy(primary=start_simulator(), shadow=start_simulator(served_model_names=(FP8,)),
                             shadow_model=FP8, store=str(tmp_path / "store"))
    assert HTTP.post(proxy + "/v1/chat/completions", content=b"").status_code == 400   # (the primary's answer)

    def broken(*_: Any) -> Any:
        raise RuntimeError("a bug in the plan")

    monkeypatch.setattr(Mirror, "plan", broken)
    assert HTTP.post(proxy + "/v1/chat/completions", json=chat("Explain rivers.")).status_code == 200
    settled(app)
    assert not_mirrored_in_run(app, tmp_path / "store", 2) == {"unparsable": 1, "proxy_error": 1}
    assert counter(app, "shadow", "skipped", "unparsable") == counter(app, "shadow", "skipped", "proxy_error") == 1


def test_a_chat_request_cut_in_its_upload_or_refused_by_the_proxy_is_counted(
        start_simulator: Start, start_proxy: Start, tmp_path: Path) -> None:
    proxy, app = start_proxy(primary=start_simulator(), shadow=start_simulator(served_model_names=(FP8,)),
                             shadow_model=FP8, store=str(tmp_path / "store"))
    raw_request(proxy, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 500\r\n\r\n{\"model\":", read=False)   # and the client leaves
    refused = raw_request(proxy, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Name: caf\xe9\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    assert refused.startswith(b"HTTP/1.1 400")
    wait_for(lambda: counter(app, "shadow", "skipped", "upload_cut") == 1)
    assert not_mirrored_in_run(app, tmp_path / "store", 2) == {"upload_cut": 1, "unforwardable": 1}


def not_mirrored_in_run(app: Any, location: Path, total: int) -> dict[str, int]:
    """The run's not-mirrored counts, once ``total`` of them are stored (the proxy hands its
    counts over about once a second, and the writer may store them in two batches)."""
    from shadowdiff.report.summary import summarize

    app.pairs.flush_counts()
    store = Store.open(location)
    try:
        run = store.latest_run("serve")
        assert run is not None
        wait_for(lambda: sum(summarize(store, run.id).not_mirrored.values()) >= total)
        return summarize(store, run.id).not_mirrored
    finally:
        store.close()

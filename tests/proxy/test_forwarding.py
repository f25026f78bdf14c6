"""The proxy is transparent: what clients get through it is what they get directly."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from shadowdiff.simulator.faults import Fault, FaultSettings
from shadowdiff.simulator.scheduler import LatencyModel
from tests.support.fixtures import MODEL
from tests.support.proxying import echo_app
from tests.support.servers import HTTP, serve_app

CHAT: Any = [{"role": "user", "content": "Explain why the sky is blue."}]
Start = Callable[..., Any]


@pytest.fixture
def echo_upstream() -> Any:
    with serve_app(echo_app(), server_header=False, date_header=False) as url:
        yield url


def test_method_path_query_headers_and_body_pass_through(echo_upstream: str, start_proxy: Start) -> None:
    proxy, _ = start_proxy(primary=echo_upstream)
    body = b"\x00\x01 not json \xff" * 1000
    # one client a side: each keeps the cookie its own upstream set
    direct_client, proxied_client = httpx.Client(), httpx.Client()
    for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
        headers = {"x-custom": "Value With Spaces", "authorization": "Bearer secret", "x-want-status": "207"}
        url = "/some/%7Epath/with%20space?b=2&a=1&a=3"
        content = body if method in ("POST", "PUT", "PATCH") else None
        direct = direct_client.request(method, echo_upstream + url, headers=headers, content=content)
        proxied = proxied_client.request(method, proxy + url, headers=headers, content=content)
        assert proxied.status_code == direct.status_code == 207
        got, expected = proxied.json(), direct.json()
        for key in ("method", "path", "raw_path", "query", "body_sha256", "body_length"):
            assert got[key] == expected[key], key
        # every end-to-end header the client sent arrives (host names the upstream;
        # connection is hop-by-hop, for the proxy's own connection). aiohttp adds
        # "content-length: 0" to a bodiless DELETE, which says the same as no header.
        skip = ("host", "connection")
        sent = {k: v for k, v in expected["headers"] if k not in skip}
        arrived = {k: v for k, v in got["headers"] if k not in skip}
        if method == "DELETE":
            assert arrived.pop("content-length", "0") == "0"
        assert arrived == sent
        assert proxied.headers.get_list("set-cookie") == ["a=1; Path=/"]
        # the upstream's response headers come back as they are, in order (the echoed
        # body differs by the connection header, so its length does too)
        assert [(k, v) for k, v in proxied.headers.items() if k != "content-length"] == [
            (k, v) for k, v in direct.headers.items() if k != "content-length"]
        assert int(proxied.headers["content-length"]) == len(proxied.content)


def test_chunked_request_bodies_are_streamed(echo_upstream: str, start_proxy: Start) -> None:
    proxy, _ = start_proxy(primary=echo_upstream)

    def chunks():  # type: ignore[no-untyped-def]
        for i in range(50):
            yield f"chunk {i};".encode()

    got = HTTP.post(proxy + "/upload", content=chunks()).json()
    expected = b"".join(f"chunk {i};".encode() for i in range(50))
    assert got["body_sha256"] == hashlib.sha256(expected).hexdigest()


def test_openai_client_gets_the_same_bytes(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator()
    proxy, _ = start_proxy(primary=primary)
    for path, body in (("/v1/chat/completions", {"model": MODEL, "messages": CHAT, "temperature": 0}),
                       ("/v1/completions", {"model": MODEL, "prompt": "Hello", "temperature": 0}),
                       ("/v1/chat/completions", {"model": "nope", "messages": CHAT}),
                       ("/v1/chat/completions", {"messages": "broken"})):
        headers = {"X-Request-Id": "same-id"}
        direct = HTTP.post(primary + path, json=body, headers=headers)
        proxied = HTTP.post(proxy + path, json=body, headers=headers)
        assert proxied.status_code == direct.status_code
        mask = re.compile(rb'"created":\d+')
        assert mask.sub(b"", proxied.content) == mask.sub(b"", direct.content)
        assert proxied.headers["content-type"] == direct.headers["content-type"]
    client = openai.OpenAI(base_url=proxy + "/v1", api_key="x", max_retries=0)
    direct_client = openai.OpenAI(base_url=primary + "/v1", api_key="x", max_retries=0)
    a = client.chat.completions.create(model=MODEL, messages=CHAT, temperature=0, max_tokens=20)
    b = direct_client.chat.completions.create(model=MODEL, messages=CHAT, temperature=0, max_tokens=20)
    assert a.choices[0].message.content == b.choices[0].message.content
    streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model=MODEL, messages=CHAT, temperature=0, max_tokens=20, stream=True) if c.choices)
    assert streamed == a.choices[0].message.content
    text = client.completions.create(model=MODEL, prompt="Hello", temperature=0, max_tokens=5).choices[0].text
    assert text == direct_client.completions.create(model=MODEL, prompt="Hello", temperature=0,
                                                    max_tokens=5).choices[0].text
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=CHAT)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10**6)


def test_streams_flow_chunk_by_chunk(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(latency=LatencyModel(tpot=0.05))
    proxy, _ = start_proxy(primary=primary)
    body = {"messages": CHAT, "temperature": 0, "max_tokens": 12, "stream": True}
    arrivals: list[tuple[float, bytes]] = []
    started = time.perf_counter()
    with HTTP.stream("POST", proxy + "/v1/chat/completions", json=body) as r:
        for piece in r.iter_raw():
            arrivals.append((time.perf_counter() - started, piece))
    # not buffered into one piece: 12 tokens 50 ms apart came in 10 reads or more on a quiet
    # machine, and in 7 on a loaded one (reads coalesce when the reader falls behind); the
    # time between the first and the last read below is what tells a buffering proxy
    assert len(arrivals) >= 4
    # the first token reached the client about 11 decode steps before the primary finished
    assert arrivals[-1][0] - arrivals[0][0] > 0.3
    assert b"".join(p for _, p in arrivals).endswith(b"data: [DONE]\n\n")
    direct = HTTP.post(primary + "/v1/chat/completions", json={**body, "stream": False}).json()
    text = "".join(json.loads(f[6:])["choices"][0]["delta"].get("content", "")
                   for f in b"".join(p for _, p in arrivals).decode().split("\n\n")
                   if f.startswith("data: {") and json.loads(f[6:])["choices"])
    assert text == direct["choices"][0]["message"]["content"]


def test_other_streams_and_plain_bodies(echo_upstream: str, start_proxy: Start) -> None:
    proxy, _ = start_proxy(primary=echo_upstream)
    r = HTTP.get(proxy + "/stream")
    assert r.content == b"".join(f"piece {i}\n".encode() for i in range(5))
    assert r.headers["content-type"] == "text/plain; charset=utf-8"


def test_keep_alive_comments_and_error_frames_pass_through(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(latency=LatencyModel(ttft=0.25), sse_keep_alive_interval=0.05)
    proxy, _ = start_proxy(primary=primary)
    body = {"messages": CHAT, "temperature": 0, "max_tokens": 3, "stream": True}
    assert HTTP.post(proxy + "/v1/chat/completions", json=body).content.count(b": keep-alive\n\n") >= 3
    failing = start_simulator(faults=FaultSettings(rates={Fault.ERROR_FRAME: 1.0}))
    proxy, _ = start_proxy(primary=failing)
    raw = HTTP.post(proxy + "/v1/chat/completions", json=body).content
    assert b'data: {"error":{"message":"Simulated engine failure during generation."' in raw
    assert raw.endswith(b"data: [DONE]\n\n")


def test_primary_down_or_hanging_gives_openai_errors(start_proxy: Start, start_simulator: Start) -> None:
    from tests.support.servers import free_port

    proxy, _ = start_proxy(primary=f"http://127.0.0.1:{free_port()}")
    r = HTTP.post(proxy + "/v1/chat/completions", json={"messages": CHAT})
    assert r.status_code == 502
    error = r.json()["error"]
    assert error["type"] == "BadGatewayError"
    assert error["code"] == 502
    assert "Traceback" not in r.text
    with pytest.raises(openai.InternalServerError):
        openai.OpenAI(base_url=proxy + "/v1", api_key="x", max_retries=0).chat.completions.create(
            model=MODEL, messages=CHAT)
    hanging = start_simulator(faults=FaultSettings(rates={Fault.HANG: 1.0}, hang_seconds=30))
    proxy, _ = start_proxy(primary=hanging, primary_timeout=0.5)
    r = HTTP.post(proxy + "/v1/chat/completions", json={"messages": CHAT, "stream": True})
    assert r.status_code == 504
    assert r.json()["error"]["type"] == "GatewayTimeoutError"
    assert HTTP.get(proxy + "/readyz").status_code == 200
    proxy, _ = start_proxy(primary=f"http://127.0.0.1:{free_port()}")
    ready = HTTP.get(proxy + "/readyz")
    assert ready.status_code == 503
    assert ready.json()["status"] == "not ready"
    assert HTTP.get(proxy + "/healthz").json() == {"status": "ok"}


def test_primary_reset_mid_stream_reaches_the_client(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(faults=FaultSettings(rates={Fault.RESET: 1.0}))
    proxy, _ = start_proxy(primary=primary)
    # cut between two events: the stream ends as vLLM ends a failed one, an error event and
    # [DONE] (cut inside an event, the connection closes before the end, as a direct client sees)
    try:
        r = HTTP.post(proxy + "/v1/chat/completions", json={"messages": CHAT, "stream": True})
    except httpx.RemoteProtocolError:
        return
    assert r.content.endswith(b"data: [DONE]\n\n"), r.content[-300:]
    assert b'"type":"BadGatewayError"' in r.content and b'"code":502' in r.content


def test_client_disconnect_cancels_the_upstream_request(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(latency=LatencyModel(tpot=0.02))
    shadow = start_simulator(latency=LatencyModel(tpot=0.02))
    proxy, app = start_proxy(primary=primary, shadow=shadow)
    # 2,000 tokens at 20 ms: 40 s if nobody cancelled it
    body = {"messages": CHAT, "temperature": 0, "max_tokens": 2000, "ignore_eos": True, "stream": True}
    with HTTP.stream("POST", proxy + "/v1/chat/completions", json=body) as r:
        pieces = r.iter_raw()  # kept: a dropped iterator would close the stream itself
        next(pieces)
        time.sleep(0.1)
        assert HTTP.get(primary + "/load").json() == {"server_load": 1}
        assert HTTP.get(shadow + "/load").json() == {"server_load": 1}
    deadline = time.monotonic() + 1
    while HTTP.get(primary + "/load").json()["server_load"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert HTTP.get(primary + "/load").json() == {"server_load": 0}
    deadline = time.monotonic() + 5
    while app.metrics.pairs.labels("aborted", "true")._value.get() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert app.metrics.pairs.labels("aborted", "true")._value.get() == 1
    assert HTTP.get(shadow + "/load").json() == {"server_load": 0}


def test_many_concurrent_streams(start_simulator: Start, start_proxy: Start) -> None:
    primary = start_simulator(latency=LatencyModel(tpot=0.005))
    proxy, _ = start_proxy(primary=primary)
    failures: list[BaseException] = []
    texts: list[str] = []

    def one(i: int) -> None:
        try:
            with httpx.Client(timeout=30) as client:
                r = client.post(proxy + "/v1/completions", json={"prompt": f"p{i}", "max_tokens": 20,
                                                                 "temperature": 0, "stream": True})
                texts.append(r.text)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(texts) == 60
    assert all(t.endswith("data: [DONE]\n\n") for t in texts)


def test_a_primary_answering_garbage_never_puts_the_clients_credentials_in_the_log(
        start_proxy: Start, caplog: pytest.LogCaptureFixture) -> None:
    """aiohttp's error for an invalid answer carries the request, headers and all: the
    log says what went wrong, not what was sent."""
    import logging
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer_garbage() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 2x0 NOT A STATUS\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer_garbage, daemon=True).start()
    try:
        proxy, _ = start_proxy(primary=f"http://127.0.0.1:{server.getsockname()[1]}")
        with caplog.at_level(logging.WARNING):
            r = HTTP.post(proxy + "/v1/chat/completions?key=query-secret", json={"messages": CHAT},
                          headers={"Authorization": "Bearer sk-very-secret-1234567890"})
        assert r.status_code == 502
        logged = "\n".join(record.getMessage() for record in caplog.records)
        assert "primary request failed" in logged
        assert "sk-very-secret" not in logged and "query-secret" not in logged and "Authorization" not in logged
    finally:
        server.close()

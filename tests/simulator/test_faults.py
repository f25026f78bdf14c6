"""Every fault the simulator can inject, seen from a raw HTTP client."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from shadowdiff.errors import ProfileError
from shadowdiff.simulator.faults import Fault, FaultInjector, FaultSettings, parse_fault
from tests.support.servers import HTTP
from tests.support.simulating import CHAT, frames, post

STREAM = {"messages": CHAT, "temperature": 0, "max_tokens": 30, "stream": True}
PLAIN = {"messages": CHAT, "temperature": 0, "max_tokens": 30}


def faulty(start: Any, fault: str, **extra: Any) -> str:
    return str(start(faults=FaultSettings(rates={Fault(fault): 1.0}, seed=1, **extra)))


@pytest.mark.parametrize(("fault", "status", "kind"), [
    ("error_500", 500, "InternalServerError"),
    ("error_503", 503, "ServiceUnavailableError"),
    ("error_429", 429, "RateLimitError"),
])
def test_error_statuses(start_simulator: Any, fault: str, status: int, kind: str) -> None:
    url = faulty(start_simulator, fault)
    for body in (PLAIN, STREAM):
        r = post(url, "/v1/chat/completions", body)
        assert r.status_code == status
        assert r.json()["error"]["type"] == kind
        assert r.json()["error"]["code"] == status
    assert (r.headers.get("retry-after") == "1") == (status == 429)


def test_hang_before_first_byte_and_disconnect_frees_the_slot(start_simulator: Any) -> None:
    url = faulty(start_simulator, "hang", hang_seconds=30)
    with pytest.raises(httpx.ReadTimeout):
        HTTP.post(url + "/v1/chat/completions", json=STREAM, timeout=0.3)
    with pytest.raises(httpx.ReadTimeout):
        HTTP.post(url + "/v1/chat/completions", json=PLAIN, timeout=0.3)
    # Health stays up, and once the clients gave up nothing is left running.
    assert HTTP.get(url + "/health").status_code == 200
    deadline = time.monotonic() + 5
    while HTTP.get(url + "/load").json()["server_load"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert HTTP.get(url + "/load").json() == {"server_load": 0}
    metrics = HTTP.get(url + "/metrics").text
    assert 'finished_reason="abort"' in metrics


def test_slow_drip_sends_tokens_apart(start_simulator: Any) -> None:
    url = faulty(start_simulator, "slow", slow_seconds=0.02)
    body = {**STREAM, "max_tokens": 6}
    with HTTP.stream("POST", url + "/v1/chat/completions", json=body) as r:
        pieces = list(r.iter_raw())
    assert len(pieces) >= 6
    assert b"".join(pieces).endswith(b"data: [DONE]\n\n")


def test_reset_mid_stream(start_simulator: Any) -> None:
    url = faulty(start_simulator, "reset")
    received = bytearray()
    with pytest.raises(httpx.RemoteProtocolError), \
            HTTP.stream("POST", url + "/v1/chat/completions", json=STREAM) as r:
        for piece in r.iter_raw():
            received += piece
    assert r.status_code == 200
    found = frames(bytes(received))
    assert len(found) == 4  # role + 3 tokens (--fault-after-tokens)
    with pytest.raises(httpx.RemoteProtocolError):
        HTTP.post(url + "/v1/chat/completions", json=PLAIN)


def test_error_frame_after_200(start_simulator: Any) -> None:
    url = faulty(start_simulator, "error_frame")
    r = post(url, "/v1/chat/completions", STREAM)
    assert r.status_code == 200
    found = frames(r.content)
    assert found[-1] == "[DONE]"
    error = json.loads(found[-2])
    assert error == {"error": {"message": "Simulated engine failure during generation.",
                               "type": "InternalServerError", "param": None, "code": 500}}
    assert len(found) == 6  # role, 3 tokens, error, [DONE]
    # completions writes the error frame with json.dumps' default separators
    r = post(url, "/v1/completions", {"prompt": "x", "max_tokens": 10, "stream": True})
    assert b'data: {"error": {"message": "Simulated engine failure' in r.content
    assert post(url, "/v1/chat/completions", PLAIN).status_code == 500


def test_malformed_sse_and_body(start_simulator: Any) -> None:
    url = faulty(start_simulator, "malformed")
    r = post(url, "/v1/chat/completions", STREAM)
    found = frames(r.content)
    broken = [f for f in found[:-1] if not _is_json(f)]
    assert len(broken) == 1
    assert found[-1] == "[DONE]"
    plain = post(url, "/v1/chat/completions", PLAIN)
    assert plain.status_code == 200
    assert not _is_json(plain.text)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_utf8_character_split_across_chunks(start_simulator: Any) -> None:
    url = faulty(start_simulator, "split_utf8")
    for body in (STREAM, PLAIN):
        with HTTP.stream("POST", url + "/v1/chat/completions", json=body) as r:
            pieces = list(r.iter_raw())
        split = [p for p in pieces if not _decodes(p)]
        assert split, "no chunk ended inside a UTF-8 character"
        assert "—" in b"".join(pieces).decode()


def _decodes(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_fault_draws_follow_rates_and_seed() -> None:
    settings = FaultSettings(rates={Fault.ERROR_500: 0.2, Fault.RESET: 0.1}, seed=3)
    draws = [FaultInjector(settings).draw() for _ in range(1)]
    a = FaultInjector(settings)
    b = FaultInjector(settings)
    first = [a.draw() for _ in range(1000)]
    assert first == [b.draw() for _ in range(1000)]
    assert 150 < first.count(Fault.ERROR_500) < 250
    assert 60 < first.count(Fault.RESET) < 140
    assert draws[0] == first[0]
    assert FaultInjector(FaultSettings()).draw() is None


def test_fault_specs() -> None:
    assert parse_fault("reset=0.25") == (Fault.RESET, 0.25)
    assert parse_fault("hang") == (Fault.HANG, 1.0)
    with pytest.raises(ProfileError, match="kind must be one of"):
        parse_fault("explode=1")
    with pytest.raises(ProfileError, match="add up to at most 1"):
        FaultSettings(rates={Fault.RESET: 0.7, Fault.HANG: 0.7})


def test_faults_do_not_touch_other_routes(start_simulator: Any) -> None:
    url = faulty(start_simulator, "error_500")
    assert HTTP.get(url + "/v1/models").status_code == 200
    assert HTTP.post(url + "/tokenize", json={"prompt": "x"}).status_code == 200


def test_hang_holds_a_place_until_the_client_gives_up(start_simulator: Any) -> None:
    url = faulty(start_simulator, "hang", hang_seconds=30)
    import threading

    outcome: list[type[BaseException]] = []

    def give_up_after_a_second() -> None:
        try:
            HTTP.post(url + "/v1/chat/completions", json=STREAM, timeout=1.0)
        except httpx.ReadTimeout as exc:
            outcome.append(type(exc))

    thread = threading.Thread(target=give_up_after_a_second)
    thread.start()
    deadline = time.monotonic() + 5
    while HTTP.get(url + "/load").json()["server_load"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert HTTP.get(url + "/load").json() == {"server_load": 1}
    thread.join()
    assert outcome == [httpx.ReadTimeout]
    while HTTP.get(url + "/load").json()["server_load"] and time.monotonic() < deadline + 5:
        time.sleep(0.02)
    assert HTTP.get(url + "/load").json() == {"server_load": 0}
    assert _counter(HTTP.get(url + "/metrics").text, "abort") == 1.0


def _counter(metrics: str, reason: str) -> float:
    line = next(line for line in metrics.splitlines()
                if line.startswith("vllm:request_success_total") and f'finished_reason="{reason}"' in line)
    return float(line.rsplit(" ", 1)[1])


def test_a_client_that_leaves_mid_stream_is_recorded_as_aborted(start_simulator: Any) -> None:
    from shadowdiff.simulator.scheduler import LatencyModel

    url = start_simulator(latency=LatencyModel(tpot=0.02))
    with HTTP.stream("POST", url + "/v1/chat/completions", json={**STREAM, "max_tokens": 100}) as r:
        next(r.iter_raw())
    deadline = time.monotonic() + 5
    while _counter(HTTP.get(url + "/metrics").text, "abort") == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    metrics = HTTP.get(url + "/metrics").text
    assert _counter(metrics, "abort") == 1.0
    assert _counter(metrics, "length") == 0.0
    generated = next(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                     if line.startswith("vllm:generation_tokens_total"))
    assert 0 < generated < 100
    assert HTTP.get(url + "/load").json() == {"server_load": 0}


@pytest.mark.parametrize("fault", ["reset", "error_frame"])
def test_mid_stream_faults_fire_on_short_answers(start_simulator: Any, fault: str) -> None:
    url = faulty(start_simulator, fault)
    body = {**STREAM, "max_tokens": 2}
    if fault == "reset":
        with pytest.raises(httpx.RemoteProtocolError):
            HTTP.post(url + "/v1/chat/completions", json=body)
    else:
        assert b'"error"' in post(url, "/v1/chat/completions", body).content

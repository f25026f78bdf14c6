"""uvicorn's warnings that any client sets off come one line per window, with a count."""

from __future__ import annotations

import logging
import signal
import socket
from pathlib import Path

from shadowdiff.proxy.repeats import RepeatedWarnings
from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from tests.support.proxying import FP8, chat
from tests.support.servers import HTTP, serve_app, shadowdiff_process

INVALID = "Invalid HTTP request received."


def record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, msg, args or None, None)


def test_a_repeated_client_warning_is_shown_once_a_window_with_the_count_left_out() -> None:
    now = [0.0]
    repeats = RepeatedWarnings(window=60, clock=lambda: now[0])
    first = record(INVALID)
    assert repeats.filter(first) and first.getMessage() == INVALID
    shown = []
    for _ in range(188):
        now[0] += 0.1
        shown.append(repeats.filter(record(INVALID)))
    assert not any(shown)
    now[0] = 61.0
    later = record(INVALID)
    assert repeats.filter(later)
    assert later.getMessage() == f"{INVALID} (188 more like it in the last 61 s were not logged)"
    now[0] = 200.0
    after_a_quiet_while = record(INVALID)
    assert repeats.filter(after_a_quiet_while) and after_a_quiet_while.getMessage() == INVALID


def test_other_lines_always_pass() -> None:
    repeats = RepeatedWarnings(clock=lambda: 0.0)
    assert all(repeats.filter(record("Application startup failed. Exiting.")) for _ in range(3))
    assert all(repeats.filter(record("%s", INVALID)) for _ in range(3))   # not uvicorn's own line
    assert repeats.filter(record(INVALID)) and not repeats.filter(record(INVALID))
    assert repeats.filter(record("Unsupported upgrade request."))   # each warning has its own window


def test_a_thousand_malformed_requests_write_one_line(tmp_path: Path) -> None:
    with serve_app(build_app(SimulatorSettings())) as primary, \
            serve_app(build_app(SimulatorSettings(served_model_names=(FP8,)))) as shadow, \
            shadowdiff_process("serve", "--primary", primary, "--shadow", shadow, "--shadow-model", FP8,
                               "--store", str(tmp_path / "store")) as (process, proxy):
        host, port = proxy.removeprefix("http://").split(":")
        for _ in range(1000):
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
                assert s.recv(100).startswith(b"HTTP/1.1 400")
        assert HTTP.post(proxy + "/v1/chat/completions", json=chat("still served")).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert process.stderr is not None
        logged = process.stderr.read().decode()
    assert logged.count(INVALID) == 1, logged


def test_an_upgrade_request_is_served_as_http_and_its_headers_never_logged(tmp_path: Path) -> None:
    """With a WebSocket library installed, uvicorn took upgrades over and at debug level
    logged each header on a line: cookies and tokens no pattern knows, verbatim."""
    secrets = (b"sid=Pp9Oo8Ii7Uu6Yy5Tt4Rr", b"Am1Am2Am3Am4Am5A", b"Se1Se2Se3Se4Se5S")
    with serve_app(build_app(SimulatorSettings())) as primary, \
            serve_app(build_app(SimulatorSettings(served_model_names=(FP8,)))) as shadow, \
            shadowdiff_process("serve", "--primary", primary, "--shadow", shadow, "--shadow-model", FP8,
                               "--store", str(tmp_path / "store"), "--log-level", "debug") as (process, proxy):
        host, port = proxy.removeprefix("http://").split(":")
        for _ in range(50):
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                          b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                          b"Cookie: " + secrets[0] + b"\r\nX-Amz-Security-Token: " + secrets[1] + b"\r\n"
                          b"Secret: " + secrets[2] + b"\r\n\r\n")
                assert s.recv(100).startswith(b"HTTP/1.1 200")   # the primary's model list
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert process.stderr is not None
        logged = process.stderr.read()
    assert not [secret for secret in secrets if secret in logged]
    assert logged.count(b"Unsupported upgrade request.") == 1

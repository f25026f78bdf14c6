"""No credential in any log, store, capture or metric.

A real ``shadowdiff serve`` (a process, logging at DEBUG, with a store, a capture and a
replica) is sent requests carrying secrets everywhere a client can put them - the
Authorization header, an api-key header, a cookie, the URL's query, the X-Request-Id,
the body's api_key and user fields, the prompt - and its three upstreams echo the
prompt back in every part of an answer, or fail every way they can (an invalid status
line, a reset, a hang, garbage, a 500, an error event). Then everything on disk - the
store with its WAL, the capture and its rotations, the process's output - and the
/metrics text is searched for every secret: none may be there, while the client got
its answers untouched.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import socketserver
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from shadowdiff.answers.redact import MARK
from tests.support.servers import free_port, wait_ready

# Shaped secrets (redacted by pattern, wherever they are) in the prompt and the X-Request-Id...
SK = "sk-proj-Pr0mptS3cret99"
AWS = "AKIAPR0MPTSECRET1234"
EMAIL = "eve.secret@example.org"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwcm9tcHRqd3QifQ.c2lnbmF0dXJlc2VjcmV0"
ID_SECRET = "sk-Xr12Ab34Cd56Ef"
# ...and secrets of no recognisable shape, where nothing may ever be written (headers,
# the query, the body's credential fields).
AUTH = "authzebrasecret"
API_KEY = "apikeyheadersecretqq"
COOKIE = "cookiesecretvalue"
QUERY = ("querysecretone", "querysecrettwo")
BODY_KEY, USER = "bodyapikeysecret", "userfieldsecret"
NEEDLES = ["Pr0mptS3cret99", "PR0MPTSECRET1234", "eve.secret", "cHJvbXB0and0", "c2lnbmF0dXJlc2VjcmV0", "Xr12Ab34Cd56Ef",
           AUTH, API_KEY, COOKIE, *QUERY, BODY_KEY, USER]
PROMPT_SECRETS = f"my key is {SK}, aws {AWS}, mail {EMAIL}, token {JWT}"

MODES = ("echo", "stream", "bad_status", "reset", "hang", "garbage", "error_500", "error_event")
# The proxy's timeouts, and how long a hanging upstream waits (past them). Every other
# answer is instant, yet on a loaded machine 1 s was too short for some of them.
TIMEOUT = 5
HANG = TIMEOUT + 3.0


class Upstream(socketserver.ThreadingTCPServer):
    """A raw-socket chat server that does what the prompt tells its role (``primary=…``):
    echo the prompt in every part of an answer (streamed or not), or fail."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, role: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.role = role
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        conn: socket.socket = self.request
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        if head.startswith(b"GET "):   # the proxy's probes (GET /health, GET /v1/chat/completions)
            self._send(conn, 404, "text/plain", b"not here")
            return
        body_length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
        while len(body) < body_length:
            body += conn.recv(65536)
        request = json.loads(body)
        # ...and what it was sent as credentials, as an upstream may repeat a key it
        # refuses ("Incorrect API key provided: …"): in every answer, error and status line
        sent = re.findall(rb"(?im)^(?:authorization|api-key|cookie): *(.*?)\r?$", head)
        prompt = f"(sent {b' '.join(sent).decode()}) {request['messages'][-1]['content']}"
        role = self.server.role  # type: ignore[attr-defined]
        mode = re.search(rf"{role}=(\w+)", prompt).group(1)  # type: ignore[union-attr]
        getattr(self, mode)(conn, prompt, request)

    @staticmethod
    def _message(prompt: str) -> dict[str, object]:
        return {"role": "assistant", "content": f"You said: {prompt}", "reasoning_content": f"Thinking of {prompt}",
                "tool_calls": [{"id": "c1", "type": "function", "function": {
                    "name": "remember", "arguments": json.dumps({"text": prompt, EMAIL: SK})}}]}

    def echo(self, conn: socket.socket, prompt: str, request: dict[str, object]) -> None:
        pieces = re.findall(r".{1,3}", f"You said: {prompt}", re.S)
        answer = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "message": self._message(prompt), "finish_reason": "stop", "logprobs": {"content": [
                {"token": p, "logprob": -0.1, "top_logprobs": [{"token": p, "logprob": -0.1}]} for p in pieces]}},
            {"index": 1, "message": {"role": "assistant", "content": None, "refusal": f"I will not repeat {prompt}"},
             "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}
        self._send(conn, 200, "application/json", json.dumps(answer).encode())

    def stream(self, conn: socket.socket, prompt: str, request: dict[str, object], error: bool = False) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        for piece in re.findall(r".{1,4}", f"You said: {prompt}", re.S):   # the secrets cut across events
            event = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                     "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            conn.sendall(f"data: {json.dumps(event)}\n\n".encode())
        if error:
            conn.sendall(f"data: {json.dumps({'error': {'message': f'failed on {prompt}', 'code': 500}})}\n\n".encode())
        else:
            end = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            conn.sendall(f"data: {json.dumps(end)}\n\n".encode())
        conn.sendall(b"data: [DONE]\n\n")

    def error_event(self, conn: socket.socket, prompt: str, request: dict[str, object]) -> None:
        self.stream(conn, prompt, request, error=True)

    def bad_status(self, conn: socket.socket, prompt: str, request: dict[str, object]) -> None:
        conn.sendall(f"HTTP/1.1 2OO {prompt}\r\n\r\n".encode())

    def reset(self, conn: socket.socket, prompt: str, request: dict[str, object]) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
                     + f'data: {{"choices": [{{"index": 0, "delta": {{"content": "{prompt[:40]}'.encode())
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST on close

    def hang(self, conn: socket.socket, prompt: str, request: dict[str, object]) -> None:
        time.sleep(HANG)

    def garbage(self, conn: socket.socket, prompt: str, request: dict[str, object]) -> None:
        self._send(conn, 200, "application/json", f"not json at all: {prompt}".encode())

    def error_500(self, conn: socket.socket, prompt: str, request: dict[str, object]) -> None:
        body = {"error": {"message": f"cannot answer {prompt}", "type": "InternalServerError", "code": 500}}
        self._send(conn, 500, "application/json", json.dumps(body).encode())

    @staticmethod
    def _send(conn: socket.socket, status: int, kind: str, body: bytes) -> None:
        conn.sendall(f"HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {len(body)}\r\n"
                     f"connection: close\r\n\r\n".encode() + body)


@contextlib.contextmanager
def upstreams() -> Iterator[dict[str, Upstream]]:
    servers = {role: Upstream(role) for role in ("primary", "shadow", "replica")}
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers.values()]
    for thread in threads:
        thread.start()
    try:
        yield servers
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()


def _metric(text: str, series: str) -> float:
    """The sum of the series whose line starts with ``series`` (a name, or a name and its first label)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(series) and line[len(series)] in "{ ,")


def _content(answer: httpx.Response) -> str:
    """The first choice's text of a (streamed) chat answer."""
    assert answer.status_code == 200
    if answer.headers["content-type"].startswith("text/event-stream"):
        events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: {")]
        return "".join(e["choices"][0]["delta"].get("content") or "" for e in events)
    return str(answer.json()["choices"][0]["message"]["content"])


def _cases() -> list[tuple[str, str, str]]:
    """(primary, shadow, replica) modes: every failure on each side, beside an echo."""
    cases = [(m, "echo", "echo") for m in MODES] + [("echo", m, m) for m in MODES[1:]]
    return cases + [("stream", m, "stream") for m in MODES]


def test_no_secret_reaches_a_store_capture_log_or_metric(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    proxy = f"http://127.0.0.1:{port}"
    log_out, log_err = (data / "stdout.log", data / "stderr.log")
    data.mkdir()
    cases = _cases()
    with upstreams() as up, log_out.open("wb") as out, log_err.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "shadowdiff", "serve", "--primary", up["primary"].url, "--shadow", up["shadow"].url,
             "--replica", up["replica"].url, "--replica-rate", "1", "--keep-rate", "1", "--store", str(data / "store"),
             "--capture", str(data / "capture.jsonl"), "--capture-max-bytes", "2048", "--capture-keep", "100",
             "--shadow-timeout", str(TIMEOUT), "--primary-timeout", str(TIMEOUT), "--log-level", "debug",
             "--port", str(port)],
            stdout=out, stderr=err)
        try:
            wait_ready(proxy + "/healthz", process)

            def send(i: int, modes: tuple[str, str, str]) -> httpx.Response:
                primary, shadow, replica = modes
                prompt = f"primary={primary} shadow={shadow} replica={replica}: {PROMPT_SECRETS}"
                body = {"model": "m", "temperature": 0, "n": 2, "stream": primary in ("stream", "error_event", "reset"),
                        "messages": [{"role": "user", "content": prompt}], "api_key": BODY_KEY, "user": USER,
                        "metadata": {"category": f"cat {EMAIL}"}}
                request_id = f"req-{ID_SECRET}-{i}" if i % 2 else f"trace-{i}"
                return httpx.post(
                    f"{proxy}/v1/chat/completions?api-key={QUERY[0]}&sig={QUERY[1]}", json=body, timeout=30,
                    headers={"Authorization": f"Bearer {AUTH}", "api-key": API_KEY, "Cookie": f"session={COOKIE}",
                             "X-Request-Id": request_id})

            with ThreadPoolExecutor(len(cases)) as pool:
                answers = list(pool.map(send, range(len(cases)), cases))
            # the client's answers are untouched: the echo carries the secrets
            echoed = [_content(a) for (p, _, _), a in zip(cases, answers, strict=True) if p in ("echo", "stream")]
            assert len(echoed) == sum(p in ("echo", "stream") for p, _, _ in cases)
            assert all(SK in text and EMAIL in text for text in echoed)
            assert {a.status_code for a in answers} >= {200, 500, 502, 504}

            # every pair counted, and those stored written (the WAL is searched while the store is open)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                metrics = httpx.get(proxy + "/metrics").text
                # (a pair whose primary failed is counted, not stored)
                stored = len(cases) - _metric(metrics, 'shadowdiff_shadow_requests_total{reason="primary_error"')
                if (_metric(metrics, "shadowdiff_pairs_total") >= len(cases)
                        and _metric(metrics, "shadowdiff_pairs_stored_total") >= stored):
                    break
                time.sleep(0.1)
            assert _metric(metrics, "shadowdiff_pairs_stored_total") == stored >= len(cases) - 4, metrics
            time.sleep(0.2)
            open_files = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
            assert any(p.name.endswith("-wal") for p in open_files)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)

    on_disk = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    places = {f"{p} (while open)": b for p, b in open_files.items()} | {str(p): b for p, b in on_disk.items()}
    places["/metrics"] = metrics.encode()
    leaks = [(needle, place) for needle in NEEDLES for place, content in places.items() if needle.encode() in content]
    assert not leaks, leaks

    # ... and what the test can fail on was there: logs, redacted pairs, captured lines, greppable ids
    stderr = log_err.read_text()
    assert "primary request failed" in stderr and MARK in stderr, stderr
    captured = [json.loads(line) for p in data.glob("capture.jsonl*") for line in p.read_text().splitlines()]
    assert len(captured) == len(cases) and list(data.glob("capture.jsonl.*"))
    ids = [c["custom_id"] for c in captured]
    assert any(i.startswith("trace-") for i in ids) and any(i.startswith(f"req-{MARK}-") for i in ids)
    assert all("api_key" not in c["body"] and "user" not in c["body"] for c in captured)
    db = sqlite3.connect(data / "store" / "shadowdiff.sqlite")
    texts = [row[0] for row in db.execute("select text from answers where text like '%You said%'")]
    errors = [row[0] for row in db.execute("select error from answers where error is not null")]
    keys = [row[0] for row in db.execute("select key from pairs")]
    db.close()
    assert texts and all(MARK in t for t in texts)
    assert any("invalid answer" in e for e in errors) and any("HTTP 500" in e for e in errors), "\n".join(errors)
    assert any(k.startswith(f"req-{MARK}-") for k in keys) and any(k.startswith("trace-") for k in keys)

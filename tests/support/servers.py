"""Real servers on loopback for tests: uvicorn in a thread, or a ``shadowdiff`` process.

Streaming, chunk boundaries and disconnects only show over a real socket
(``httpx.ASGITransport`` and Starlette's ``TestClient`` buffer whole bodies), so every
network test goes through one of these.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import inspect
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from shadowdiff.commands.background import serve_in_thread


def dies_with_the_tests() -> None:
    """``preexec_fn`` for a server process: SIGTERM when the process that started it ends, even
    by SIGKILL. On several workers (pytest-xdist) an interrupted run's workers are killed
    ten seconds after being asked to stop, before their fixtures could stop a real engine
    (a vLLM server holds 3 GB); the kernel stops it instead. (Linux's prctl; elsewhere nothing.
    vLLM 0.32 honours it once serving, and its engine and workers follow; one still loading
    its model may miss it, as it may miss any SIGTERM then.)"""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


PR_SET_PDEATHSIG = 1


def serve_app(app: Any, **options: Any) -> contextlib.AbstractContextManager[str]:
    """Serve an ASGI app with uvicorn in a thread; the context yields its base URL."""
    return serve_in_thread(app, **options)


async def read_body(receive: Any) -> bytes:
    """A hand-written ASGI upstream's request body, read to its end."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


@dataclass
class Recorder:
    """An ASGI wrapper that keeps the path and JSON body of every POST it passes on, and
    answers 500 (an OpenAI-style error) instead where ``fail(body)`` says so."""

    app: Any
    fail: Callable[[dict[str, Any]], bool] = lambda body: False
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        raw = await read_body(receive)
        body = json.loads(raw)
        self.seen.append((scope["path"], body))
        if self.fail(body):
            error = json.dumps({"error": {"message": "refused by the test", "type": "InternalServerError",
                                          "code": 500}}).encode()
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": error})
            return
        replayed = False

        async def receiving() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return dict(await receive())    # after the body: the disconnect, when it comes
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.app(scope, receiving, send)


# What an ``Answering`` upstream answers: status, headers and body, or None to answer
# nothing (the request waits until its client goes away).
Reply = tuple[int, list[tuple[bytes, bytes]], bytes] | None


@dataclass
class Answering:
    """A hand-written ASGI upstream that answers each request with ``respond(path, body)``
    (sync or async: a ``Reply``), and keeps the path and headers of each."""

    respond: Callable[[str, bytes], Reply | Awaitable[Reply]]
    seen: list[tuple[str, dict[bytes, bytes]]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        self.seen.append((scope["path"], dict(scope["headers"])))
        reply = self.respond(scope["path"], body)
        if inspect.isawaitable(reply):
            reply = await reply
        if reply is None:
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        status, headers, content = reply
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})


def json_reply(status: int, value: Any, headers: tuple[tuple[bytes, bytes], ...] = ()) -> Reply:
    """A ``Reply`` of ``value`` as JSON."""
    return status, [(b"content-type", b"application/json"), *headers], json.dumps(value).encode()


class Drip:
    """A hand-written ASGI upstream that streams ``pieces`` (bytes, or seconds to wait)
    as one event-stream answer, whatever it is asked."""

    def __init__(self, pieces: list[bytes | float]) -> None:
        self.pieces = pieces

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
        for piece in self.pieces:
            if isinstance(piece, float):
                await asyncio.sleep(piece)
            else:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, process: subprocess.Popen[bytes] | None = None, timeout: float = 60.0) -> None:
    """Poll ``url`` until it answers 200 (the way users wait for vLLM's /health). The limit is
    a failure's cost only: a run on four workers saw ``shadowdiff serve`` take over 20 s to
    answer on two loaded cores."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=1).status_code == 200:
                return
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


def stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Ask a server process to stop (SIGTERM: a clean shutdown), killing it after ``grace`` s."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def shadowdiff_process(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Run ``shadowdiff <args> --port <free>`` and wait until /health answers."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "shadowdiff", *args, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + "/health", process)
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


class _PerTestClient:
    """An httpx.Client renewed for every test (see ``conftest.fresh_http_client``).

    Servers in tests listen on recycled ports; a keep-alive connection pooled in an
    earlier test could otherwise reach a server that is still shutting down on a port
    a new one now uses. ``verify=False`` skips loading CA certificates (~30 ms), which
    loopback HTTP never needs.
    """

    def __init__(self) -> None:
        self._client: httpx.Client | None = None

    def reset(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            self._client = httpx.Client(timeout=10, verify=False)
        return getattr(self._client, name)


HTTP: Any = _PerTestClient()


@contextlib.contextmanager
def serve_process(tmp_path: Path, primary: str, *options: str) -> Iterator[str]:
    """``shadowdiff serve`` in front of the server at ``primary``, a process of its own,
    storing every pair in ``tmp_path / "store"``; yields its URL and checks that it stopped
    cleanly (its stderr is ``tmp_path / "serve.log"``)."""
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "shadowdiff", "serve", "--primary", primary, "--store", str(tmp_path / "store"),
             "--keep-rate", "1", "--port", str(port), *options], stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + "/healthz", process, timeout=30)
        yield url
    finally:
        # (its shutdown is bounded by --drain-timeout, 30 s, plus a few for the store: killed
        # sooner, a clean stop on a busy machine would read as a failure)
        stop(process, grace=45)
    assert process.returncode == 0, f"exit status {process.returncode}\n{log.read_text()}"


def metric(url: str, name: str) -> float:
    """The sum of a metric's samples on ``url``'s /metrics."""
    text = httpx.get(url + "/metrics", timeout=30).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name)


def run_shadowdiff(*args: str | Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``shadowdiff ARGS`` run to its end as a process, its output captured."""
    return subprocess.run([sys.executable, "-m", "shadowdiff", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def latest_pairs(store_location: Path, kind: str) -> list[Any]:
    """Every pair of the store's latest run of ``kind`` (replay, serve...)."""
    from shadowdiff.store import Store

    store = Store.open(store_location)
    try:
        run = store.latest_run(kind)
        assert run is not None
        return list(store.pairs(run.id))
    finally:
        store.close()

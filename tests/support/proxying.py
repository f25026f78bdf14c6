"""What the proxy's tests share: chat bodies, waiting for pairs, an echo upstream, metrics, ``serve`` as a process.

The fixtures ``backends`` and ``location`` (a plugin listed in tests/conftest.py) run
``shadowdiff serve`` processes over simulated backends, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.cli import shadowdiff
from tests.support.fixtures import postgres_database
from tests.support.servers import free_port, shadowdiff_process, wait_ready

FP8 = "Qwen/Qwen3-8B-FP8"


def chat(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": prompt}], "temperature": 0, "max_tokens": 256, **extra}


def counter(app: Any, metric: str, *labels: str) -> float:
    return float(getattr(app.metrics, metric).labels(*labels)._value.get())


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def settled(app: Any, seconds: float = 10.0) -> None:
    """Wait until every mirrored request has become a pair (or a skip), counted in the metrics."""
    wait_for(lambda: not app.pairs.pending and app.pairs.work.settled, seconds)


def echo_app() -> Starlette:
    """An upstream that describes the request it received, with headers of its own."""

    async def echo(request: Request) -> Response:
        body = await request.body()
        return JSONResponse(
            {"method": request.method, "path": request.url.path, "raw_path": request.scope["raw_path"].decode(),
             "query": request.url.query, "headers": [[k, v] for k, v in request.headers.items()],
             "body_sha256": hashlib.sha256(body).hexdigest(), "body_length": len(body)},
            status_code=int(request.headers.get("x-want-status", "200")),
            headers={"x-upstream": "yes", "set-cookie": "a=1; Path=/", "cache-control": "no-store"})

    async def stream(request: Request) -> StreamingResponse:
        async def pieces():  # type: ignore[no-untyped-def]
            for i in range(5):
                yield f"piece {i}\n".encode()
        return StreamingResponse(pieces(), media_type="text/plain")

    return Starlette(routes=[Route("/stream", stream), Route("/{path:path}", echo,
                                                                  methods=["GET", "POST", "PUT", "DELETE", "PATCH"])])


def raw_request(url: str, data: bytes, read: bool = True) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(data)
        if not read:
            return b""
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def scrape(url: str) -> tuple[str, dict[str, Any]]:
    text = httpx.get(url + "/metrics").text
    return text, {f.name: f for f in text_string_to_metric_families(text)}


def value(families: dict[str, Any], name: str, sample: str | None = None, **labels: str) -> float:
    family = families[name]
    return sum(s.value for s in family.samples if s.name == (sample or (
        name + "_total" if family.type == "counter" else name)) and all(s.labels.get(k) == v
                                                                          for k, v in labels.items()))


@pytest.fixture(scope="module")
def backends() -> Iterator[tuple[str, str]]:
    """A baseline and a candidate that answers as it does (every pair identical: a finished run PASSes)."""
    with shadowdiff_process("simulate") as (_, baseline), \
            shadowdiff_process("simulate", "--served-model-name", FP8) as (_, candidate):
        yield baseline, candidate


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "store")
        return
    with postgres_database() as url:
        yield url


@contextlib.contextmanager
def serve(backends: tuple[str, str], location: str, log: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes],
                                                                                             str]]:
    """``shadowdiff serve`` in a process of its own; stopped with SIGTERM by the test, killed if left."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.pop("SHADOWDIFF_DEPLOYMENT", None)
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "shadowdiff", "serve", "--primary", backends[0], "--shadow", backends[1],
             "--shadow-model", FP8, "--store", location, "--keep-rate", "1", "--port", str(port), *args],
            env=env, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + "/healthz", process)
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def stop(process: subprocess.Popen[bytes], log: Path) -> None:
    process.send_signal(signal.SIGTERM)
    # 0 with one process as with several workers (docs/serve.md, "Exit codes of `serve`")
    assert process.wait(60) == 0, log.read_text()
    assert "Traceback" not in log.read_text(), log.read_text()


def report(location: str, out: Path, *args: str) -> tuple[int, str, dict[str, object]]:
    result = shadowdiff("report", location, "--out", str(out), *args)
    assert result.returncode in (0, 2), result.stdout + result.stderr
    return result.returncode, result.stdout, json.loads((out / "summary.json").read_text(encoding="utf-8"))


@contextlib.contextmanager
def serve_run_stored(app: Any, where: Path) -> Iterator[tuple[Any, str]]:
    """Once the in-process proxy ``app`` has settled, its counts flushed and its writer
    closed: its store at ``where``, opened again, and its serve run's id."""
    from shadowdiff.store import Store

    settled(app)
    app.pairs.flush_counts()
    app.writer.close()
    app.writer = None
    opened = Store.open(where)
    try:
        run = opened.latest_run("serve")
        assert run is not None
        yield opened, run.id
    finally:
        opened.close()

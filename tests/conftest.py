from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from simulator.app import build_app
from simulator.settings import SimulatorSettings
from tests.servers import HTTP, serve_app

MODEL = "Qwen/Qwen3-8B"


@pytest.fixture(autouse=True)
def fresh_http_client() -> Iterator[None]:
    yield
    HTTP.reset()


@pytest.fixture
def start_simulator() -> Iterator[Callable[..., str]]:
    """Start simulators (real uvicorn on loopback) with the given settings; yields a factory."""
    stack: list[Any] = []

    def start(**settings: Any) -> str:
        settings.setdefault("served_model_names", (MODEL,))
        context = serve_app(build_app(SimulatorSettings(**settings)))
        url = context.__enter__()
        stack.append(context)
        return url

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    """One baseline simulator shared by a module's read-only tests."""
    with serve_app(build_app(SimulatorSettings(served_model_names=(MODEL,)))) as url:
        yield url


@pytest.fixture
def start_proxy(tmp_path: Any) -> Iterator[Callable[..., tuple[str, Any]]]:
    """Start proxies (real uvicorn, the proxy's own server options); yields (url, app)."""
    from proxy.app import build_app as build_proxy
    from proxy.settings import ProxySettings

    stack: list[Any] = []

    def start(**settings: Any) -> tuple[str, Any]:
        settings.setdefault("store", str(tmp_path / f"store-{len(stack)}"))
        app = build_proxy(ProxySettings(**settings))
        context = serve_app(app, server_header=False, date_header=False, lifespan="on", proxy_headers=False)
        url = context.__enter__()
        stack.append(context)
        return url, app

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)

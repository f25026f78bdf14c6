from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from simulator.app import build_app
from simulator.settings import SimulatorSettings
from tests.servers import serve_app

MODEL = "Qwen/Qwen3-8B"


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

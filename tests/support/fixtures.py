"""Fixtures shared by the tests: simulators, proxies and stores, on real sockets and databases.

A plugin listed in tests/conftest.py, with the session's hooks: SIGTERM unwinds as Ctrl+C, and the
real-engine tiers run last."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from shadowdiff.store import Store, database_url
from tests.support.servers import HTTP, serve_app
from tests.support.tools import required

MODEL = "Qwen/Qwen3-8B"
# The PostgreSQL server the store's tests use: SHADOWDIFF_TEST_POSTGRES names one ("off" for
# none); without it, a server on the default port with trust auth is used when one answers, so
# the README's test command tests the same things on a contributor's machine as in CI.
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@functools.cache
def postgres_url() -> str | None:
    """The PostgreSQL server's URL, or None: none named, and none answers on 127.0.0.1:5432."""
    named = os.environ.get("SHADOWDIFF_TEST_POSTGRES")
    if named is not None:
        return None if named.strip().lower() in ("", "off", "0", "no") else named
    engine = sa.create_engine(database_url(LOCAL_POSTGRES), connect_args={"connect_timeout": 2})
    try:
        with engine.connect():
            return LOCAL_POSTGRES
    except sa.exc.SQLAlchemyError:
        return None
    finally:
        engine.dispose()


def need_postgres() -> str:
    """The PostgreSQL URL; the test is skipped without one (failed under CI)."""
    url = postgres_url()
    if url is None:
        why = ("no PostgreSQL answers on 127.0.0.1:5432 and SHADOWDIFF_TEST_POSTGRES names none"
               if os.environ.get("SHADOWDIFF_TEST_POSTGRES") is None else "SHADOWDIFF_TEST_POSTGRES is off")
        if required():
            pytest.fail(f"PostgreSQL is required here (SHADOWDIFF_REQUIRE_TOOLS=1): {why}")
        pytest.skip(f"{why}: set SHADOWDIFF_TEST_POSTGRES=postgresql://… to test PostgreSQL")
    return url


def pytest_sessionstart(session: pytest.Session) -> None:
    """A run stopped with SIGTERM (a CI timeout, ``kill``) unwinds as Ctrl+C does: fixtures are
    torn down, so the real engines' servers, in process groups of their own (a vLLM server
    holds 3 GB), are stopped too instead of outliving the run."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupt)
    # `serve` processes make their pairs in a thread unless a test asks for the pair process:
    # under the default (auto) each would start a child too, half a second of CPU for its imports.
    # tests/proxy/test_pairprocess.py tests auto itself.
    os.environ.setdefault("SHADOWDIFF_PAIR_WORKER", "thread")


# The markers of the real-engine tiers (tests/engines/), whose servers are session (llama.cpp) or
# package (vLLM) fixtures.
REAL_ENGINES = ("vllmcpu", "realengine")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In one process (``-n 0``) the real-engine tiers' tests run last: their session's servers
    (three vLLM servers hold 10 GB) are then up for those tests only, not for the rest of the
    run. On several workers they run first, vLLM's then llama.cpp's: together one group
    (tests/support/distribution.py), the longest of the run, which starts at once on a worker
    of its own while the others share out the rest. (Stable: every other test keeps
    its place and order.)"""
    def tier(item: pytest.Item) -> int:
        return next((i for i, name in enumerate(REAL_ENGINES) if item.get_closest_marker(name)), len(REAL_ENGINES))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=tier)
    else:
        items.sort(key=lambda item: tier(item) < len(REAL_ENGINES))


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
    from shadowdiff.proxy.app import build_app as build_proxy
    from shadowdiff.proxy.httpprotocol import TargetKeepingProtocol
    from shadowdiff.proxy.settings import ProxySettings

    stack: list[Any] = []

    def start(**settings: Any) -> tuple[str, Any]:
        settings.setdefault("store", str(tmp_path / f"store-{len(stack)}"))
        app = build_proxy(ProxySettings(**settings))
        context = serve_app(app, server_header=False, date_header=False, lifespan="on", proxy_headers=False,
                            http=TargetKeepingProtocol, ws="none")
        url = context.__enter__()
        stack.append(context)
        return url, app

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A new, empty database on the PostgreSQL server (``postgres_url``: the test is skipped
    without one, failed under CI); yields its URL and drops it afterwards."""
    server = need_postgres()
    name = f"shadowdiff_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(database_url(server), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store: SQLite always, PostgreSQL (a database of its own) when a URL is given."""
    with contextlib.ExitStack() as stack:
        location = str(tmp_path) if request.param == "sqlite" else stack.enter_context(postgres_database())
        opened = Store.open(location)
        yield opened
        opened.close()

"""The tests' HTTP clients share one default TLS context.

httpx builds a new ``ssl.SSLContext`` for every client it makes (``httpx.get`` and
``httpx.post`` make one a call, and so does the ``openai`` client), reading certifi's
bundle of some 150 certificates each time: about 20 ms of CPU, measured, for a client
whose requests go to plain HTTP on loopback. The suite makes thousands of them on two
cores (one test file, tests/proxy/test_one_run.py: 35 CPU-seconds, 5 shared). Here the
default one (verify on, no client certificate, the environment's settings as the process
started with them) is built once per process and shared, as one SSLContext may be; a
client given a context or ``verify=False`` (the TLS tests) gets what it asked for.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx._transports.default as transports
import pytest

_build = transports.create_ssl_context
_shared = functools.cache(_build)   # called without arguments: the default context, once


def _default_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is not True or cert is not None or not trust_env:
        return _build(verify=verify, cert=cert, trust_env=trust_env)
    return _shared()


def pytest_configure(config: pytest.Config) -> None:
    transports.create_ssl_context = _default_context  # type: ignore[assignment]

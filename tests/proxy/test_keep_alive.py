"""Kept-alive client connections: a stalled proxy does not close one a client is reusing.

A client's pool reuses a connection idle for less than its expiry (httpx's and the openai
client's: 5 s). A proxy stopped for a few seconds (a loaded host) runs its timers before
it reads its sockets when it resumes: with uvicorn's own keep-alive of 5 s, the connection
is closed with a request waiting unread on it, and the client gets a reset
(bench/resets.py counts them).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.proxying import chat
from tests.support.servers import shadowdiff_process


@pytest.mark.parametrize("idle_timeout", [None, 1.0], ids=["default", "idle-timeout-passed-in-the-stall"])
def test_a_request_on_a_kept_alive_connection_is_answered_after_the_proxy_stalls(
        start_simulator: Callable[..., str], tmp_path: Path, idle_timeout: float | None) -> None:
    """By default the proxy's idle timeout outlasts the client's pool expiry; with a shorter
    one (1 s), the deadline passes during the stall with the request waiting unread: it is
    read and answered, not reset by the close."""
    # a stall that outlasts the client's pool expiry (uvicorn's own 5 s deadline would pass during it)
    expiry = httpx.Limits().keepalive_expiry
    assert expiry is not None
    stall = expiry + 0.5 if idle_timeout is None else 2.0
    primary = start_simulator()
    options = () if idle_timeout is None else ("--client-idle-timeout", str(idle_timeout))
    with shadowdiff_process("serve", "--primary", primary, "--store", str(tmp_path / "store"),
                            *options) as (process, url), httpx.Client(timeout=30) as client:
        first = client.post(url + "/v1/chat/completions", json=chat("before the stall"))
        assert first.status_code == 200
        os.kill(process.pid, signal.SIGSTOP)
        resume = threading.Timer(stall, os.kill, (process.pid, signal.SIGCONT))
        resume.start()
        try:
            # sent at once, on the pooled connection the client has just used: the proxy reads it
            # when it resumes
            second = client.post(url + "/v1/chat/completions", json=chat("during the stall"))
        finally:
            resume.join()
        assert second.status_code == 200 and second.json()["choices"]
        assert address(second) == address(first)   # (the same connection: the case under test)


def address(response: httpx.Response) -> Any:
    return response.extensions["network_stream"].get_extra_info("client_addr")

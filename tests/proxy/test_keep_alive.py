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

from tests.support.proxying import chat
from tests.support.servers import shadowdiff_process


def test_a_request_on_a_kept_alive_connection_is_answered_after_the_proxy_stalls(
        start_simulator: Callable[..., str], tmp_path: Path) -> None:
    # a stall that outlasts the client's pool expiry, so uvicorn's 5 s deadline passes during it
    expiry = httpx.Limits().keepalive_expiry
    assert expiry is not None
    stall = expiry + 0.5
    primary = start_simulator()
    with shadowdiff_process("serve", "--primary", primary, "--store", str(tmp_path / "store")) as (process, url), \
            httpx.Client(timeout=30) as client:
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

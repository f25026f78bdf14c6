"""Serving an ASGI app from a background thread (the demo's simulators, tests)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn


@contextlib.contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0, timeout: float = 10.0,
                    **options: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port in a thread; yields its base URL.

    The server stops (in-flight requests get two seconds) when the block ends;
    ``options`` go to ``uvicorn.Config``.
    """
    options = {"log_level": "error", "lifespan": "auto", "timeout_graceful_shutdown": 2, **options}
    config = uvicorn.Config(app, host=host, port=port, **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the server did not start")
        time.sleep(0.005)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout)

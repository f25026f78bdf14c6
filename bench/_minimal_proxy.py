"""A reference point for bench/proxy_overhead.py: the leanest forwarding path we know.

A pure ASGI callable over an aiohttp session that forwards bytes as they come - the
fastest path the design notes measured - with none of shadowdiff's work (no tap, no
mirroring, no metrics). What shadowdiff's proxy adds beyond this is its own cost; what
this adds over a direct request is the price of any Python hop on the machine.

    python bench/_minimal_proxy.py UPSTREAM_URL PORT
"""

from __future__ import annotations

import sys
from typing import Any

import aiohttp
import uvicorn

UPSTREAM = sys.argv[1] if __name__ == "__main__" else ""
_session: aiohttp.ClientSession | None = None
_SKIP = (b"host", b"connection", b"transfer-encoding")


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global _session
    if scope["type"] == "lifespan":
        while (message := await receive())["type"] == "lifespan.startup":
            _session = aiohttp.ClientSession(auto_decompress=False)
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["path"] == "/healthz":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    assert _session is not None
    headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k not in _SKIP]
    async with _session.request(scope["method"], UPSTREAM + scope["path"], data=body, headers=headers) as r:
        await send({"type": "http.response.start", "status": r.status,
                    "headers": [(k.lower(), v) for k, v in r.raw_headers if k.lower() not in _SKIP]})
        async for chunk in r.content.iter_any():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="error", server_header=False,
                date_header=False, proxy_headers=False)

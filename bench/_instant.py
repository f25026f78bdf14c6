"""An instant upstream for measuring what the proxy adds: fixed answers, no work.

A plain ASGI app (served by uvicorn, like the proxy): a fixed chat completion for
non-streamed requests, a fixed stream of 64 frames for ``"stream": true``.

    python bench/_instant.py PORT
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

_CHOICE = b'{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null,"token_ids":null}'
FRAME = b'data: {"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"bench","choices":[' + \
    _CHOICE + b'],"kv_transfer_params":null}\n\n'
BODY = (b'{"id":"chatcmpl-x","object":"chat.completion","created":1,"model":"bench","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"' + b"word " * 16 + b'"},"finish_reason":"stop"}],'
        b'"usage":{"prompt_tokens":5,"total_tokens":21,"completion_tokens":16}}')


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if b'"stream": true' in body or b'"stream":true' in body:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
        for _ in range(64):
            await send({"type": "http.response.body", "body": FRAME, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]})
    await send({"type": "http.response.body", "body": BODY})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error", lifespan="off",
                server_header=False, date_header=False)

"""An instant upstream for measuring what the proxy adds: fixed answers, no work.

A plain ASGI app (served by uvicorn, like the proxy): a fixed chat completion for
non-streamed requests, a fixed stream of 64 frames for ``"stream": true``.

    python bench/_instant.py PORT [ANSWER]

``ANSWER`` (for non-streamed requests) is ``short`` (16 words, the default), ``long``
(about 1,000 characters of prose with numbers) or ``changed`` (the long answer with a
few words and numbers changed, as a candidate model might answer): two servers started
with ``long`` and ``changed`` make every mirrored pair a changed one.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson
import uvicorn

_CHOICE = b'{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null,"token_ids":null}'
FRAME = b'data: {"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"bench","choices":[' + \
    _CHOICE + b'],"kv_transfer_params":null}\n\n'
LONG = ("Rivers form where rain and melted snow gather faster than the ground can absorb them. In 2019 the "
        "Amazon carried about 209,000 cubic metres of water a second to the Atlantic, more than the next seven "
        "rivers together. A river's course is set by slope and by the rock beneath it: soft rock erodes into "
        "wide valleys, hard rock into gorges. Over 10,000 years a meander can migrate 3 kilometres across its "
        "floodplain, leaving oxbow lakes behind. Sediment is sorted as the current slows, gravel first, then "
        "sand, then silt, which is why deltas grow fine-grained at their edges. Dams interrupt this: the Aswan "
        "High Dam, finished in 1970, traps roughly 98 % of the Nile's silt, and the delta now retreats by up to "
        "125 metres a year in places. Rivers also carry heat and nutrients; a single flood can move 40 million "
        "tonnes of soil. People have settled beside rivers for 8,000 years because they offer water, transport "
        "and fertile land, and because their seasonal floods renew the fields. Not every river reaches the sea.")
CHANGED = (LONG.replace("209,000", "206,000").replace("seven", "six").replace("3 kilometres", "2 kilometres")
           .replace("98 %", "95 %").replace("renew the fields", "restore the soil"))
TEXTS = {"short": "word " * 16, "long": LONG, "changed": CHANGED}


def body(text: str) -> bytes:
    return (b'{"id":"chatcmpl-x","object":"chat.completion","created":1,"model":"bench","choices":[{"index":0,'
            b'"message":{"role":"assistant","content":' + orjson.dumps(text) + b'},"finish_reason":"stop"}],'
            b'"usage":{"prompt_tokens":5,"total_tokens":' + str(5 + len(text) // 5).encode() +
            b',"completion_tokens":' + str(len(text) // 5).encode() + b'}}')


BODY = body(TEXTS["short"])
_answer = BODY


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
        (b"content-type", b"application/json"), (b"content-length", str(len(_answer)).encode())]})
    await send({"type": "http.response.body", "body": _answer})


if __name__ == "__main__":
    _answer = body(TEXTS[sys.argv[2] if len(sys.argv) > 2 else "short"])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error", lifespan="off",
                server_header=False, date_header=False)

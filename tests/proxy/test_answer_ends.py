"""How the proxy reads the end and the timing of an answer it passes on: a client that
leaves once it has read ``[DONE]`` (the official openai client does) still gets its pair
compared, and a key split across two reads still times the first answer token."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from shadowdiff.store import Store
from tests.servers import read_body, serve_app

Start = Callable[..., Any]
HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def frame(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {**HEAD, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


class Upstream:
    """Streams ``pieces`` (bytes, or seconds to wait) as one answer."""

    def __init__(self, pieces: list[bytes | float]) -> None:
        self.pieces = pieces

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
        for piece in self.pieces:
            if isinstance(piece, float):
                await asyncio.sleep(piece)
            else:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def stored(path: Path) -> list[Any]:
    store = Store.open(path)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            run = store.latest_run("serve")
            if run is not None and (pairs := list(store.pairs(run.id))):
                return pairs
            time.sleep(0.05)
        return []
    finally:
        store.close()


def ask_and_leave_at_done(url: str) -> bytes:
    """A streamed request read until ``[DONE]``, then the connection closed at once."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                       "temperature": 0}).encode()
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        got = b""
        while b"[DONE]" not in got:
            piece = s.recv(65536)
            assert piece, got
            got += piece
    return got


def test_a_client_that_leaves_at_done_still_gets_its_pair_compared(start_proxy: Start, tmp_path: Path) -> None:
    # the upstream ends its response half a second after [DONE]; the client does not wait
    answer: list[bytes | float] = [frame({"role": "assistant", "content": ""}), frame({"content": "391"}),
                                   frame({}, "stop"), b"data: [DONE]\n\n", 0.5]
    other: list[bytes | float] = [*answer[:1], frame({"content": "381"}), *answer[2:]]
    with serve_app(Upstream(answer)) as primary, serve_app(Upstream(other)) as shadow:
        url, _ = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"))
        assert b"391" in ask_and_leave_at_done(url)
        [pair] = stored(tmp_path / "store")
    assert pair["outcome"] != "identical"


def test_a_key_split_across_reads_still_times_the_first_answer_token(start_proxy: Start, tmp_path: Path) -> None:
    role = frame({"role": "assistant", "content": ""})
    content = frame({"content": "391"})
    split = content.index(b'"content"') + 5   # ..."conte | nt":"391"...
    pieces: list[bytes | float] = [role, 0.1, content[:split], 0.3, content[split:], 1.0, frame({"content": "."}),
                                   frame({}, "stop"), b"data: [DONE]\n\n"]
    with serve_app(Upstream(pieces)) as primary, serve_app(Upstream(pieces)) as shadow:
        url, _ = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=1.0)
        httpx.post(url + "/v1/chat/completions", json={"model": "m", "stream": True, "temperature": 0,
                                                       "messages": [{"role": "user", "content": "hi"}]}, timeout=10)
        [pair] = stored(tmp_path / "store")
    for answer in pair.answers.values():   # the key completes at 0.4 s; the next token comes at 1.4 s
        assert answer.ttfat is not None and 0.35 <= answer.ttfat < 1.0, answer

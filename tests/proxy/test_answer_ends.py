"""How the proxy reads the end and the timing of an answer it passes on: a client that
leaves once it has read ``[DONE]`` (the official openai client does) still gets its pair
compared, a key split across two reads still times the first answer token, and
decoding is timed from the first token to the last, or not at all when they came
together (a serve store once reported 1,750,640 tokens/s per request)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from shadowdiff.report.summary import summarize
from shadowdiff.store import Store
from tests.support.servers import Drip, read_body, serve_app

Start = Callable[..., Any]
HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def frame(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {**HEAD, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


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
    with serve_app(Drip(answer)) as primary, serve_app(Drip(other)) as shadow:
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
    with serve_app(Drip(pieces)) as primary, serve_app(Drip(pieces)) as shadow:
        url, _ = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=1.0)
        httpx.post(url + "/v1/chat/completions", json={"model": "m", "stream": True, "temperature": 0,
                                                       "messages": [{"role": "user", "content": "hi"}]}, timeout=10)
        [pair] = stored(tmp_path / "store")
    for answer in pair.answers.values():   # the key completes at 0.4 s; the next token comes at 1.4 s
        assert answer.ttfat is not None and 0.35 <= answer.ttfat < 1.0, answer


def usage(tokens: int) -> bytes:
    chunk = {**HEAD, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": tokens,
                                              "total_tokens": 3 + tokens}}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def ask(url: str, stream: bool = True) -> None:
    httpx.post(url + "/v1/chat/completions", json={"model": "m", "stream": stream, "temperature": 0,
                                                   "messages": [{"role": "user", "content": "hi"}]}, timeout=10)


def test_an_answer_whose_tokens_came_in_one_read_has_no_tokens_per_second(start_proxy: Start,
                                                                          tmp_path: Path) -> None:
    words = [frame({"content": f" w{i}"}) for i in range(40)]
    whole = b"".join([frame({"role": "assistant", "content": ""}), *words, frame({}, "stop"), usage(40)])
    # the tokens in one write, then the end later: decoding cannot be told apart from the read
    pieces: list[bytes | float] = [0.2, whole, 0.2, b"data: [DONE]\n\n"]
    with serve_app(Drip(pieces)) as primary, serve_app(Drip(pieces)) as shadow:
        url, _ = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=1.0)
        ask(url)
        [pair] = stored(tmp_path / "store")
    for answer in pair.answers.values():
        assert answer.ok and answer.completion_tokens == 40 and answer.ttft is not None
        assert answer.inter_token_latency is None and answer.tokens_per_second is None, answer
    store = Store.open(tmp_path / "store")
    try:
        run = store.latest_run("serve")
        assert run is not None
        sides = summarize(store, run.id).sides
    finally:
        store.close()
    for stats in sides.values():
        assert stats["tokens_per_second_p50"] is None and stats["inter_token_latency_p50"] is None
        assert stats["decoded"] == 0


def test_a_streamed_answer_is_decoded_from_its_first_token_to_its_last(start_proxy: Start,
                                                                       tmp_path: Path) -> None:
    pieces: list[bytes | float] = [frame({"role": "assistant", "content": ""})]
    for i in range(5):   # five tokens, 0.1 s apart: four gaps
        pieces += [frame({"content": f" w{i}"}), 0.1]
    pieces += [frame({}, "stop"), usage(5), 0.5, b"data: [DONE]\n\n"]   # the end comes late: not decoding
    with serve_app(Drip(pieces)) as primary, serve_app(Drip(pieces)) as shadow:
        url, _ = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=1.0)
        ask(url)
        [pair] = stored(tmp_path / "store")
    for answer in pair.answers.values():
        assert answer.inter_token_latency is not None and 0.09 <= answer.inter_token_latency < 0.2, answer
        assert answer.duration is not None and answer.ttlt is not None and answer.duration - answer.ttlt >= 0.5


def test_an_answer_that_is_not_streamed_has_no_tokens_per_second(start_proxy: Start, tmp_path: Path) -> None:
    body = json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "391 is prime"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}).encode()

    async def upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    with serve_app(upstream) as primary, serve_app(upstream) as shadow:
        url, _ = start_proxy(primary=primary, shadow=shadow, store=str(tmp_path / "store"), keep_rate=1.0)
        ask(url, stream=False)
        [pair] = stored(tmp_path / "store")
    for answer in pair.answers.values():
        assert answer.ok and answer.completion_tokens == 4
        assert answer.ttlt is None and answer.tokens_per_second is None, answer

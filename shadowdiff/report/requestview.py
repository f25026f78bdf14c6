"""What a reviewer needs of the request besides its prompt: the whole conversation (the
tool results an answer depends on), the tools it offered (their names and arguments'
schemas) and the decoding settings it was sent with (a 256-token cap explains a cut
answer), for the pair page and report.html. The request is the stored one, redacted:
what was sent, after replay's overrides."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from shadowdiff.answers.compare import tool_call_lines
from shadowdiff.answers.records import content_text

MAX_SHOWN = 64          # messages or tools shown; the rest are counted
MAX_CHARS = 20_000      # of one message or one tool's schema
# the request fields that decide how the answer is decoded, in the order shown
DECODING = ("temperature", "top_p", "top_k", "min_p", "seed", "n", "max_tokens", "max_completion_tokens", "stop",
            "presence_penalty", "frequency_penalty", "repetition_penalty", "repeat_penalty")   # (the last: llama.cpp's)


@dataclass(frozen=True)
class RequestView:
    messages: list[tuple[str, str]] = field(default_factory=list)   # (role, text), when more than one
    tools: list[tuple[str, str, str]] = field(default_factory=list)  # (name, description, parameters)
    tool_choice: str | None = None
    left_out: int = 0                                                # messages and tools not shown
    decoding: str = ""                                               # "temperature 0, max_tokens 256"

    def __bool__(self) -> bool:
        return bool(self.messages or self.tools or self.decoding)


def request_view(request: Any) -> RequestView:
    """The conversation (if it is more than the prompt) and the offered tools of a request."""
    if not isinstance(request, dict):
        return RequestView()
    messages = request.get("messages")
    messages = messages if isinstance(messages, list) and len(messages) > 1 else []
    offered = request.get("tools")
    tools: list[Any] = offered if isinstance(offered, list) else []
    choice = request.get("tool_choice")
    decoding = ", ".join(f"{key} {json.dumps(request[key], ensure_ascii=False)[:200]}" for key in DECODING
                         if request.get(key) is not None)
    return RequestView([_message(m) for m in messages[:MAX_SHOWN]], [_tool(t) for t in tools[:MAX_SHOWN]],
                       None if choice is None else _short(choice),
                       max(0, len(messages) - MAX_SHOWN) + max(0, len(tools) - MAX_SHOWN), decoding)


def _message(message: Any) -> tuple[str, str]:
    if not isinstance(message, dict):
        return "?", _short(message)
    parts = [content_text(message.get("content"))]
    parts += tool_call_lines(message.get("tool_calls"))   # as the answers' calls are shown
    role = str(message.get("role", "?"))
    if message.get("tool_call_id"):
        role += f" ({message['tool_call_id']})"
    return role, "\n".join(p for p in parts if p)[:MAX_CHARS]


def _tool(tool: Any) -> tuple[str, str, str]:
    function = (tool.get("function") if isinstance(tool, dict) else None) or {}
    if not isinstance(function, dict):
        return "?", "", _short(tool)
    return (str(function.get("name", "?")), str(function.get("description") or "")[:MAX_CHARS],
            _short(function.get("parameters")))


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
    return text[:MAX_CHARS]

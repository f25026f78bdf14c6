"""Turning a chat request's messages into the prompt the engine sees.

vLLM applies the model's chat template; the simulator uses a ChatML template (the
one Qwen models ship), so prompt token counts include the role markers as they do
on a real server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shadowdiff.errors import RequestError


def message_text(content: Any, index: int) -> str:
    """The text of a message's ``content``: a string, null, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(part["text"])
        else:
            raise RequestError(
                f"messages[{index}]: content part of type {kind!r} is not supported by this "
                "text-only model",
                param="messages",
            )
    return "\n".join(parts)


def render_chat(messages: Sequence[Any], *, add_generation_prompt: bool = True,
                continue_final_message: bool = False) -> str:
    """The ChatML prompt for ``messages`` (each a mapping with ``role`` and ``content``)."""
    if add_generation_prompt and continue_final_message:
        raise RequestError("Cannot set both `continue_final_message` and "
                           "`add_generation_prompt` to True.")
    lines = []
    for index, message in enumerate(messages):
        text = message_text(message.get("content"), index)
        last = index == len(messages) - 1
        if continue_final_message and last:
            lines.append(f"<|im_start|>{message['role']}\n{text}")
        else:
            lines.append(f"<|im_start|>{message['role']}\n{text}<|im_end|>\n")
    if add_generation_prompt:
        lines.append("<|im_start|>assistant\n")
    return "".join(lines)

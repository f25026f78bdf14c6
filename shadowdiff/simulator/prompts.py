"""Turning a chat request's messages into the prompt the engine sees.

vLLM applies the model's chat template; the simulator uses a ChatML template (the
one Qwen models ship), so prompt token counts include the role markers as they do
on a real server. Like Qwen3's, it lists the offered tools in the system turn, writes
an assistant's earlier tool calls as ``<tool_call>`` blocks and tool results as
``<tool_response>`` in a user turn, and closes an empty thinking block after the
generation prompt when thinking is turned off (``enable_thinking: false``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from shadowdiff.errors import RequestError

_TOOLS_INTRO = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
_TOOLS_OUTRO = ("\n</tools>\n\nFor each function call, return a json object with function name and "
                "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')
NO_THINKING = "<think>\n\n</think>\n\n"
GENERATION_PROMPT = "<|im_start|>assistant\n"
_TOOL_RESULT_END = "</tool_response><|im_end|>\n"


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


def _tool_calls(message: Any) -> str:
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {} if isinstance(call, dict) else {}
        arguments = function.get("arguments", "{}")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        calls.append(f'<tool_call>\n{{"name": "{function.get("name", "")}", "arguments": {arguments}}}\n</tool_call>')
    return "\n".join(calls)


def render_chat(messages: Sequence[Any], *, add_generation_prompt: bool = True,
                continue_final_message: bool = False, tools: Sequence[Any] | None = None,
                thinking: bool = True) -> str:
    """The ChatML prompt for ``messages`` (each a mapping with ``role`` and ``content``);
    ``tools`` as the request sends them; ``thinking=False`` closes the thinking at once."""
    if add_generation_prompt and continue_final_message:
        raise RequestError("Cannot set both `continue_final_message` and "
                           "`add_generation_prompt` to True.")
    lines = []
    rest = list(enumerate(messages))
    if tools:
        system = ""
        if rest and rest[0][1].get("role") == "system":
            system = message_text(rest.pop(0)[1].get("content"), 0) + "\n\n"
        listed = "".join("\n" + json.dumps(tool, ensure_ascii=False) for tool in tools)
        lines.append(f"<|im_start|>system\n{system}{_TOOLS_INTRO}{listed}{_TOOLS_OUTRO}<|im_end|>\n")
    for position, (index, message) in enumerate(rest):
        text = message_text(message.get("content"), index)
        role = message["role"]
        last = position == len(rest) - 1
        if role == "tool":
            before = rest[position - 1][1].get("role") if position else None
            after = None if last else rest[position + 1][1].get("role")
            lines.append(("<|im_start|>user" if before != "tool" else "")
                         + f"\n<tool_response>\n{text}\n</tool_response>"
                         + ("<|im_end|>\n" if after != "tool" else ""))
            continue
        calls = _tool_calls(message) if role == "assistant" else ""
        if calls:
            text = f"{text}\n{calls}" if text else calls
        if continue_final_message and last:
            lines.append(f"<|im_start|>{role}\n{text}")
        else:
            lines.append(f"<|im_start|>{role}\n{text}<|im_end|>\n")
    if add_generation_prompt:
        lines.append(GENERATION_PROMPT + ("" if thinking else NO_THINKING))
    return "".join(lines)


def offered_tools(rendered: str) -> list[Any]:
    """The tools a rendered chat offers (as the request sent them), read back from its
    system turn; empty if it offers none."""
    start = rendered.find(_TOOLS_INTRO) if rendered.startswith("<|im_start|>system\n") else -1
    if start == -1:
        return []
    end = rendered.find(_TOOLS_OUTRO, start)
    listed = rendered[start + len(_TOOLS_INTRO): end if end != -1 else None]
    tools = []
    for line in listed.split("\n"):
        try:
            tools.append(json.loads(line))
        except ValueError:
            continue
    return [tool for tool in tools if isinstance(tool, dict)]


def ends_with_tool_result(rendered: str) -> bool:
    """Whether the conversation before the generation prompt ends with a tool's result."""
    return rendered.removesuffix(NO_THINKING).removesuffix(GENERATION_PROMPT).endswith(_TOOL_RESULT_END)

"""``--reasoning-parser`` and ``--tool-call-parser``: a raw answer split as vLLM 0.34 splits it.

The simulated model writes what a Qwen3-style model writes (``<think>…</think>`` before
its answer, ``<tool_call>`` blocks for tool calls, each marker one token); the server
turns that into ``reasoning``, ``content`` and ``tool_calls``, whole or as stream deltas,
with the algorithms of the vLLM 0.34.0 code named below (paths inside its wheel), so
that their quirks come out alike: ``content`` starts with the ``"\\n\\n"`` after
``</think>``, a streamed tool-call answer sends that ``"\\n\\n"`` as content while the
whole answer's content is null, argument fragments are the model's own bytes split where
its tokens end, a qwen3 parser without a ``<think>`` calls everything reasoning.

* reasoning: ``reasoning/deepseek_r1_reasoning_parser.py`` with ``basic_parsers.py``, and
  ``parser/qwen3.py`` (through ``parser/engine/adapters.py``; streamed, its engine, in
  ``shadowdiff/simulator/qwen3_stream.py``: it splits the deltas' text, which a stop string holds back);
* tool calls: ``tool_parsers/hermes_tool_parser.py``;
* how they are combined, whole and streamed: ``parser/abstract_parser.py``
  (``DelegatingParser.parse`` and ``parse_delta``), ``entrypoints/openai/chat_completion/
  message_assembly.py``, ``stream_processor.py`` and ``serve/utils/tool_calls_utils.py``.

A stream delta is the dict vLLM's ``DeltaMessage`` serializes to (``exclude_unset``: the
fields its code set, in the model's order), or None where vLLM has nothing to send.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shadowdiff.simulator.qwen3_stream import Qwen3Stream
from shadowdiff.simulator.vocab import THINK_END, THINK_START, TOOL_CALL_END, TOOL_CALL_START, vocabulary

REASONING_PARSERS = ("deepseek_r1", "qwen3")
TOOL_PARSERS = ("hermes",)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_TOOL_CALL = re.compile(rf"{TOOL_CALL_START}(.*?){TOOL_CALL_END}|{TOOL_CALL_START}(.*)", re.S)


def tool_call_id() -> str:
    """vLLM's ``make_tool_call_id()``: ``chatcmpl-tool-`` and 16 random hex digits."""
    return f"chatcmpl-tool-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Parsers:
    """The parsers a server runs: a reasoning parser, and a tool parser if auto tool
    choice is enabled (vLLM ignores ``--tool-call-parser`` without it)."""

    reasoning: str | None = None
    tools: str | None = None

    @property
    def active(self) -> bool:
        return self.reasoning is not None or self.tools is not None


@dataclass(frozen=True)
class Asked:
    """What a chat request tells the parsers."""

    tool_choice: str | None = "none"    # "none", "auto", "required", "named" or None (null)
    include_reasoning: bool = True
    thinking: bool = True               # chat_template_kwargs.enable_thinking (qwen3 reads it)

    @property
    def forced(self) -> bool:
        return self.tool_choice in ("required", "named")


@dataclass(frozen=True)
class Parsed:
    """A whole answer's message fields, and its reasoning tokens."""

    reasoning: str | None
    content: str | None
    tool_calls: tuple[tuple[str, str], ...]     # (name, arguments) of each call
    reasoning_tokens: int


def keeps_tool_calls(parsers: Parsers, asked: Asked) -> bool:
    """``message_assembly.keeps_tool_calls`` (the request has tools once it gets here)."""
    return asked.forced or (parsers.tools is not None and asked.tool_choice == "auto")


def finish_reason(engine: str, asked: Asked, tool_calls_made: bool) -> str:
    """``resolve_finish_reason``: ``tool_calls`` for calls, but ``stop`` for a named tool."""
    if tool_calls_made and engine == "stop" and asked.tool_choice != "named":
        return "tool_calls"
    return engine


# -- reasoning -------------------------------------------------------------------------------


def _reasoning_split(parsers: Parsers, asked: Asked, text: str) -> tuple[str | None, str | None]:
    """``extract_reasoning``: both parsers split at the markers; qwen3 with thinking off
    keeps everything as content."""
    if parsers.reasoning is None:
        return None, text
    if parsers.reasoning == "qwen3" and not asked.thinking:
        return None, text
    before, start, after = text.partition(THINK_START)
    rest = after if start else before
    if THINK_END not in rest:
        return rest, None
    reasoning, _, content = rest.partition(THINK_END)
    return reasoning, content or None


def reasoning_tokens(parsers: Parsers, asked: Asked, token_ids: Sequence[int]) -> int:
    """``count_reasoning_tokens``: deepseek_r1 counts the tokens inside the markers; qwen3's
    engine starts in reasoning and counts up to the first ``</think>``. Neither counts a
    marker."""
    vocab = vocabulary()
    start, end = vocab.token_id(THINK_START), vocab.token_id(THINK_END)
    if parsers.reasoning is None or (parsers.reasoning == "qwen3" and not asked.thinking):
        return 0
    count = 0
    if parsers.reasoning == "qwen3":
        for token_id in token_ids:
            if token_id == end:
                break
            count += token_id != start
        return count
    depth = 0
    for token_id in token_ids:
        if token_id == start:
            depth += 1
        elif token_id == end:
            depth = max(depth - 1, 0)
        elif depth > 0:
            count += 1
    return count


# -- tool calls, whole ------------------------------------------------------------------------


def _hermes_calls(text: str) -> tuple[list[tuple[str, str]], str | None] | None:
    """``Hermes2ProToolParser.extract_tool_calls``: the calls and the content before them,
    or None when there are none (or their JSON does not parse: vLLM keeps the text)."""
    if TOOL_CALL_START not in text:
        return None
    try:
        found = [json.loads(whole or rest) for whole, rest in _TOOL_CALL.findall(text)]
        calls = [(call["name"], json.dumps(call["arguments"], ensure_ascii=False)) for call in found]
    except (ValueError, KeyError, TypeError):
        return None
    content = text[: text.find(TOOL_CALL_START)]
    return calls, content or None


def parse(parsers: Parsers, asked: Asked, text: str, token_ids: Sequence[int]) -> Parsed:
    """A whole answer: ``DelegatingParser.parse`` then ``assemble_chat_message_fields``."""
    reasoning, content = _reasoning_split(parsers, asked, text)
    calls: list[tuple[str, str]] = []
    if parsers.tools is not None and asked.tool_choice != "none":
        # hermes cannot constrain "required" or a named tool itself, so vLLM parses
        # those like "auto" (supports_required_and_named is False with strict tool calling)
        found = _hermes_calls(content or "")
        if found is not None:
            calls, content = found
            if content is not None and not content.strip():
                content = None
        elif asked.forced and (content is None or not content.strip()):
            content = None
    if not asked.include_reasoning:
        reasoning = None
    if not keeps_tool_calls(parsers, asked):
        calls = []
    elif asked.forced:
        content = content or ""
    return Parsed(reasoning, content, tuple(calls), reasoning_tokens(parsers, asked, token_ids))


# -- streamed ----------------------------------------------------------------------------------


def _partial_tag_overlap(text: str, tag: str) -> int:
    """``tool_parsers/utils.partial_tag_overlap``."""
    for k in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:k]):
            return k
    return 0


def _complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@dataclass
class _Hermes:
    """``Hermes2ProToolParser.extract_tool_calls_streaming``: the whole text so far is
    parsed again at each token and compared with what was sent."""

    sent_content: int = 0
    names: list[str | None] = field(default_factory=list)
    streamed: list[str] = field(default_factory=list)

    def _content(self, text: str) -> str | None:
        if TOOL_CALL_START in text:
            sendable = text.index(TOOL_CALL_START)
        else:
            sendable = len(text) - _partial_tag_overlap(text, TOOL_CALL_START)
        if sendable > self.sent_content:
            content, self.sent_content = text[self.sent_content: sendable], sendable
            return content
        return None

    @staticmethod
    def _jsons(text: str) -> list[tuple[str, bool]]:
        found, at = [], 0
        while (start := text.find(TOOL_CALL_START, at)) != -1:
            body = start + len(TOOL_CALL_START)
            end = text.find(TOOL_CALL_END, body)
            if end != -1:
                found.append((text[body:end].strip(), True))
                at = end + len(TOOL_CALL_END)
                continue
            raw = text[body:]
            overlap = _partial_tag_overlap(raw, TOOL_CALL_END)
            raw = (raw[:-overlap] if overlap else raw).strip()
            found.append((raw, _complete_json(raw) if raw else False))
            break
        return found

    @staticmethod
    def _arguments(tc_json: str, complete: bool) -> str | None:
        match = _ARGUMENTS.search(tc_json)
        if match is None:
            return None
        raw = tc_json[match.end():]
        if complete:
            raw = raw.rstrip()
            if raw.endswith("}"):
                raw = raw[:-1].rstrip()
        return raw

    def step(self, text: str) -> dict[str, Any] | None:
        content = self._content(text)
        deltas: list[dict[str, Any]] = []
        for i, (tc_json, complete) in enumerate(self._jsons(text)):
            if i >= len(self.names):
                self.names.append(None)
                self.streamed.append("")
            if self.names[i] is None:
                match = _NAME.search(tc_json)
                if match is None:
                    break
                self.names[i] = match.group(1)
                deltas.append({"id": tool_call_id(), "type": "function", "index": i,
                               "function": {"name": match.group(1)}})
            args = self._arguments(tc_json, complete)
            if args is not None and len(args) > len(self.streamed[i]):
                deltas.append({"index": i, "function": {"arguments": args[len(self.streamed[i]):]}})
                self.streamed[i] = args
        if content or deltas:
            return _delta(content=content, tool_calls=deltas)
        return None

    def unstreamed(self) -> str:
        """``ToolParser.get_remaining_unstreamed_args`` for the last call."""
        if not self.names:
            return ""
        expected = self.streamed[-1] or "{}"   # a call whose arguments never came: "{}"
        actual = self.streamed[-1]
        return expected[len(actual):] if expected.startswith(actual) else ""


_UNSET = object()


def _delta(*, content: Any = _UNSET, reasoning: Any = _UNSET, tool_calls: Any = ()) -> dict[str, Any]:
    """A ``DeltaMessage``'s JSON: the fields set, in its field order; no empty tool_calls."""
    out: dict[str, Any] = {}
    if content is not _UNSET:
        out["content"] = content
    if reasoning is not _UNSET:
        out["reasoning"] = reasoning
    if tool_calls:
        out["tool_calls"] = list(tool_calls)
    return out


class StreamParser:
    """One streamed choice: ``ChatStreamProcessor.step`` over ``DelegatingParser.parse_delta``,
    one token at a time (the simulator's engine emits one token a step)."""

    def __init__(self, parsers: Parsers, asked: Asked, prompt_ids: Sequence[int]) -> None:
        self.parsers, self.asked = parsers, asked
        vocab = vocabulary()
        self._start, self._end = vocab.token_id(THINK_START), vocab.token_id(THINK_END)
        self.keep_tool_calls = keeps_tool_calls(parsers, asked)
        self.tools_streamed = False
        self.hide_metadata = parsers.active and not asked.include_reasoning
        # parse_delta: reasoning is over before the answer if no reasoning parser runs,
        # or if the prompt already closed it (a template that turned thinking off)
        self.reasoning_ended = parsers.reasoning is None or _closes_reasoning(prompt_ids, self._start, self._end)
        if parsers.reasoning == "qwen3" and not asked.thinking:
            self.reasoning_ended = True
        self._tool_phase = False
        self._text = ""
        self._hermes = _Hermes() if parsers.tools is not None else None
        # qwen3's engine splits the text it is fed, not the tokens (see qwen3_stream)
        self._engine = Qwen3Stream() if parsers.reasoning == "qwen3" and not self.reasoning_ended else None

    @property
    def reasoning_tokens(self) -> int | None:
        """The reasoning tokens qwen3's engine counted in what it was fed, if it ran."""
        return None if self._engine is None else self._engine.reasoning_tokens

    def _engine_step(self, text: str, token_id: int, finished: bool) -> tuple[dict[str, Any] | None, str | None]:
        """``DelegatingParser.parse_delta``'s reasoning phase with qwen3's engine: the
        message, and the text after the end of reasoning if it ended in this delta."""
        assert self._engine is not None
        events = self._engine.feed(text, [token_id] if token_id >= 0 else [])
        reasoning = "".join(e.text for e in events if e.kind == "reasoning")
        message = _delta(reasoning=reasoning) if reasoning else None
        if any(e.kind == "end" for e in events):
            # the engine's content, and what it still held (finish_streaming)
            after = "".join(e.text for e in (*events, *self._engine.finish()) if e.kind == "content")
            return message, after
        if finished:
            # _flush_engine_parsers: what the engine still held
            flush = self._engine.finish()
            content = "".join(e.text for e in flush if e.kind == "content")
            reasoning += "".join(e.text for e in flush if e.kind == "reasoning")
            if content or reasoning:
                message = _delta(**({"content": content} if content else {}),
                                 **({"reasoning": reasoning} if reasoning else {}))
        return message, None

    def step(self, text: str, token_id: int, finished: bool) -> dict[str, Any] | None:
        """The delta for one token (``text`` is what it adds to the answer)."""
        if not self.parsers.active:
            return _delta(content=text)
        message = self._parse_delta(text, token_id, finished)
        if finished and self._hermes is not None and message and message.get("tool_calls"):
            last = message["tool_calls"][-1]
            last["function"]["arguments"] = last["function"].get("arguments", "") + self._hermes.unstreamed()
        if message is not None and not self.asked.include_reasoning:
            message = _without_reasoning(message)
        return self._kept(message)

    def _parse_delta(self, text: str, token_id: int, finished: bool) -> dict[str, Any] | None:
        """``DelegatingParser.parse_delta``: reasoning until it ends, then the answer (with
        what followed the end of reasoning in the same delta)."""
        current = self._text + text
        if self.reasoning_ended:
            self._text = current
            if self._hermes is None:
                return _delta(content=text)
            return self._answer_with_tools(text, current)
        message, after = self._reasoning(text, token_id, finished)
        if after is None:
            self._text = current
            return message
        self.reasoning_ended = True
        self._text = after
        if self._hermes is not None:
            return self._answer_with_tools(after, after, message)
        if after:
            return _delta(content=after, reasoning=(message or {}).get("reasoning", _UNSET))
        return message

    def _reasoning(self, text: str, token_id: int, finished: bool) -> tuple[dict[str, Any] | None, str | None]:
        """The reasoning phase: the message, and the text after the end of reasoning if it
        ended in this delta (with the markers as whole tokens, nothing follows ``</think>``)."""
        if self._engine is not None:
            return self._engine_step(text, token_id, finished)
        message = None   # the markers themselves send nothing
        if token_id not in (self._start, self._end) and (text or self.parsers.reasoning == "deepseek_r1"):
            message = _delta(reasoning=text)
        return message, "" if token_id == self._end else None

    def _answer_with_tools(self, text: str, current: str,
                           reasoned: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The answer with a tool parser (``current`` is the answer so far): its first delta
        sends all of it; the reasoning of this delta (``reasoned``) is kept."""
        assert self._hermes is not None
        reasoning = reasoned.get("reasoning") if reasoned else None
        if not self._tool_phase:
            self._tool_phase = True
            text = current
        if self.asked.tool_choice == "none":
            message = _delta(content=text) if text else None
        else:
            message = self._hermes.step(current)
        if reasoning:   # parse_delta keeps the reasoning of this delta
            message = message or {}
            message = _delta(content=message.get("content", _UNSET),
                             reasoning=message.get("reasoning") or reasoning,
                             tool_calls=message.get("tool_calls", ()))
        return message

    def _kept(self, message: dict[str, Any] | None) -> dict[str, Any] | None:
        """``ChatStreamProcessor``: tool calls only if the request keeps them."""
        if message is None or not message.get("tool_calls"):
            return message
        if self.keep_tool_calls:
            self.tools_streamed = True
            return message
        del message["tool_calls"]
        if not message.get("content") and not message.get("reasoning"):
            return None
        return message

    def finish_reason(self, engine: str) -> str:
        return finish_reason(engine, self.asked, self.tools_streamed)


def _without_reasoning(message: dict[str, Any]) -> dict[str, Any] | None:
    """A delta with include_reasoning false: ``reasoning`` set to null, so sent
    (``{"content": "…", "reasoning": null}``), and nothing if no content or calls are left."""
    message["reasoning"] = None
    message = {k: message[k] for k in ("content", "reasoning", "tool_calls") if k in message}
    if not message.get("content") and not message.get("tool_calls"):
        return None
    return message


def _closes_reasoning(prompt_ids: Sequence[int], start: int | None, end: int | None) -> bool:
    """``is_reasoning_end`` on the prompt: its last marker is ``</think>``."""
    for token_id in reversed(prompt_ids):
        if token_id == end:
            return True
        if token_id == start:
            return False
    return False

"""Counting an answer's output tokens with the server's own tokenizer, when nothing else can.

An answer's token count comes from the server's usage, else from its logprobs, else from
its streamed pieces (``parse.output_tokens``). An answer with none of these - a body
without usage, from an engine that leaves it out - is counted here by sending its text
back to the server's tokenizer: exact for the text, though not for tokens that leave no
text (an end-of-sequence token, a stop string) nor where the engine would have chosen a
different split of the same text. ``token_source`` says ``tokenizer``.

Two shapes are known, and tried in this order once per server (what answered is kept):
vLLM's ``POST /tokenize`` ``{"model", "prompt", "add_special_tokens": false}`` →
``{"count": N, ...}``, and llama.cpp's ``POST /extras/tokenize/count`` ``{"model",
"input"}`` → ``{"count": N}`` (tests/answers/data/llamacpp/README.md). A server with neither
leaves the count unknown, as before.

A server's tokenizer is given one chance: a call that fails, times out (``ASK_TIMEOUT``)
or answers a count that cannot be this text's (none, negative, zero for some text, more
than one token per byte) makes the server's answers go uncounted for the rest of the
run, with one warning, rather than hold every answer up. (llama-cpp-python answers
``/extras/tokenize/count`` under the lock its generation holds: with its
``--interrupt_requests`` on, the call would cut a running stream. Its bodies always carry
usage, so the route is only asked of answers that had none.)
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import aiohttp
from yarl import URL

from shadowdiff.answers.records import Answer, Choice

log = logging.getLogger("shadowdiff.tokencount")

# (path, the body for a text and a model); the answer's "count" is read from either
ROUTES: tuple[tuple[str, Any], ...] = (
    ("/tokenize", lambda text, model: {"model": model, "prompt": text, "add_special_tokens": False}),
    ("/extras/tokenize/count", lambda text, model: {"model": model, "input": text}),
)
_NONE = -1   # a server none of the routes answered
ASK_TIMEOUT = 10.0   # seconds for one tokenizer call: a count is worth little next to a replay held up


def _output(choice: Choice) -> str:
    """What a choice generated, as one text: its reasoning, text, refusal and tool calls."""
    functions = [call.get("function") or {} for call in choice.tool_calls or ()]
    calls = "".join((f.get("name") or "") + (f.get("arguments") or "") for f in functions)
    return (choice.reasoning or "") + choice.text + (choice.refusal or "") + calls


def shown(root: str) -> str:
    """A base URL as a log line shows it: without credentials (as the client's errors do)."""
    return str(URL(root).with_user(None))


class TokenCounter:
    """Asks each server's tokenizer for the counts its answers lacked (one per answer)."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self._route: dict[str, int] = {}            # a server's root: the index in ROUTES that answered
        self._probing: dict[str, asyncio.Lock] = {}

    async def count(self, root: str, model: str | None, answer: Answer, headers: dict[str, str]) -> Answer:
        """``answer`` with its output tokens counted by the server whose base URL is ``root``
        (``Upstream.root``: without ``/v1``), if it had no count and has output; else
        ``answer`` unchanged. Never raises for the server."""
        if answer.error is not None or answer.completion_tokens is not None:
            return answer
        texts = [text for text in map(_output, answer.choices) if text]
        if not texts:
            return answer
        counts = []
        for text in texts:
            counted = await self._count(root, model, text, headers)
            if counted is None:
                return answer
            counts.append(counted)
        return replace(answer, completion_tokens=sum(counts), token_source="tokenizer")

    async def _count(self, root: str, model: str | None, text: str, headers: dict[str, str]) -> int | None:
        # the first answer of a server finds its route; the others wait for it
        async with self._probing.setdefault(root, asyncio.Lock()):
            known = self._route.get(root)
            if known is None:
                for index in range(len(ROUTES)):
                    counted = await self._ask(root, index, model, text, headers)
                    if counted is not None:
                        self._route[root] = index
                        return counted
                self._route[root] = _NONE
                log.warning("%s: no tokenizer route shadowdiff knows answered (%s): its answers without usage have "
                            "no token count", shown(root), ", ".join(path for path, _ in ROUTES))
                return None
        if known == _NONE:
            return None
        counted = await self._ask(root, known, model, text, headers)
        if counted is None and self._route.get(root) != _NONE:
            self._route[root] = _NONE
            log.warning("%s: its tokenizer (%s) failed or answered a count that cannot be right: its answers "
                        "without usage have no token count from now on", shown(root), ROUTES[known][0])
        return counted

    async def _ask(self, root: str, index: int, model: str | None, text: str, headers: dict[str, str]) -> int | None:
        path, body = ROUTES[index]
        try:
            async with asyncio.timeout(ASK_TIMEOUT), \
                    self.session.post(root + path, json=body(text, model), headers=headers) as response:
                # (whatever its content type says: a count is read from any JSON)
                count = (await response.json(content_type=None)).get("count") if response.status == 200 else None
        except (aiohttp.ClientError, ValueError, AttributeError, TimeoutError):
            return None
        if not isinstance(count, int) or isinstance(count, bool):
            return None
        # a token is at least one byte of text (byte-level BPE), and some text is some tokens
        return count if 0 < count <= len(text.encode()) else None

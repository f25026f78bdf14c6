"""The oracle's shared steps from vLLM's values to bytes: a body as its API routers write
one, chat logprobs as its serving code builds them, and a stream cut into frames.

Imported by ``oracle.py`` and ``oracle_parsed.py`` in the conformance environment, after
``vllm_shim.install()``; never in the test process.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel
from vllm.entrypoints.openai.chat_completion import protocol as chat


def json_response(model: BaseModel) -> str:
    """A non-streamed body: ``JSONResponse(content=model.model_dump())`` (the api_routers)."""
    return bytes(JSONResponse(content=model.model_dump()).body).decode()


def chat_logprobs(logprobs: dict[str, Any] | None) -> chat.ChatCompletionLogProbs | None:
    """``OpenAIServingChat._create_chat_logprobs`` (the branch where the token's logprob is known)."""
    if logprobs is None:
        return None
    return chat.ChatCompletionLogProbs(content=[
        chat.ChatCompletionLogProbsContent(
            token=entry["token"], logprob=max(entry["logprob"], -9999.0), bytes=entry["bytes"],
            top_logprobs=[chat.ChatCompletionLogProb(token=top["token"], logprob=max(top["logprob"], -9999.0),
                                                     bytes=top["bytes"]) for top in entry["top_logprobs"]])
        for entry in logprobs["content"]])


def sse_frames(raw: str) -> list[str]:
    """A stream's frames, without their blank-line ends."""
    if not raw.endswith("\n\n"):
        raise ValueError(f"the stream does not end in a blank line: {raw[-40:]!r}")
    return raw[:-2].split("\n\n")

"""vLLM as the oracle: its own response models build the bytes a vLLM server would send.

Runs in the conformance environment (``environment.py``), never in the test process,
as a small server on stdin/stdout: one JSON request a line, ``{"op": NAME, ...}``, one
JSON answer a line, ``{"ok": RESULT}`` or ``{"error": TRACEBACK}``. It imports vLLM's
protocol modules through ``vllm_shim`` and nothing of shadowdiff.

Every response is built the way vLLM's serving code builds it, which matters because
streamed chunks are serialized with ``exclude_unset=True``: a field appears in a chunk
only if the serving code set it. Each builder names the vLLM function it follows
(paths inside the wheel's ``vllm/entrypoints/``); when a release changes one of them,
the builder changes with it, and the simulator must follow. The *values* (ids, text,
token counts, logprobs...) are taken from the response under test; the *shape* (which
fields, in which order, how serialized) comes from vLLM.

Operations:

* ``rebuild``: given a simulator response (status, raw body) and the request that
  produced it, the bytes vLLM would have sent for the same values, and the fields the
  simulator sent that vLLM's models do not have;
* ``build``: bytes of an answer described by values (content, reasoning, tool calls,
  n choices, streamed or not, or a run-batch output line), for testing shadowdiff's
  readers on vLLM-built bytes;
* ``rebuild_parsed``: the same for a chat answer of a server with a reasoning or tool
  parser, from the tokens the simulator's model wrote: vLLM's own parsers (``qwen3``,
  ``deepseek_r1``, ``hermes``) split them into reasoning, content and tool calls, whole
  or delta by delta, as its serving code drives them; only ids, times and tool-call ids
  come from the response under test;
* ``rebuild_body``: the same for ``/v1/models``, ``/tokenize`` and ``/detokenize``;
* ``batch_line``: a run-batch output line;
* ``validate``: whether a request body validates against vLLM's request models;
* ``version``: the vLLM version imported.
"""

from __future__ import annotations

import ast
import json
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import vllm_shim
from pydantic import PrivateAttr

vllm_shim.install()

import oracle_parsed  # noqa: E402
import vllm  # noqa: E402
from fastapi.responses import JSONResponse, StreamingResponse  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from vllm.entrypoints.generate.base.protocol import (  # noqa: E402
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    FunctionCall,
    ToolCall,
)
from vllm.entrypoints.openai.chat_completion import protocol as chat  # noqa: E402
from vllm.entrypoints.openai.completion import protocol as completion  # noqa: E402
from vllm.entrypoints.serve.engine.protocol import (  # noqa: E402
    CompletionTokenUsageInfo,
    ErrorInfo,
    ErrorResponse,
    ModelList,
    OpenAIBaseModel,
    UsageInfo,
)
from vllm.entrypoints.serve.tokenize.protocol import (  # noqa: E402
    DetokenizeResponse,
    TokenizeChatRequest,
    TokenizeCompletionRequest,
    TokenizeResponse,
)
from vllm.entrypoints.serve.utils.sse_keep_alive import SSE_KEEP_ALIVE_COMMENT  # noqa: E402
from vllm_bytes import chat_logprobs as _chat_logprobs  # noqa: E402
from vllm_bytes import json_response  # noqa: E402
from vllm_bytes import sse_frames as _frames  # noqa: E402

VLLM = Path(vllm.__file__).parent


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.ClassDef | ast.FunctionDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _vllm_definitions(relative: str, names: tuple[str, ...], namespace: dict[str, Any]) -> dict[str, Any]:
    """Top-level classes, functions or constants of a vLLM source file whose module cannot
    be imported without its engine, compiled from the wheel's own source into ``namespace``."""
    tree = ast.parse((VLLM / relative).read_text())
    nodes = [n for n in tree.body if _defined(n) & set(names)]
    missing = set(names) - set().union(*(_defined(n) for n in nodes))
    if missing:
        raise LookupError(f"{relative} does not define {', '.join(sorted(missing))}")
    exec(compile(ast.Module(body=nodes, type_ignores=[]), str(VLLM / relative), "exec"), namespace)
    return namespace


# launchers/run_batch.py imports the engine's argument parser; its two output models are
# compiled from that file as shipped (``AllResponse`` narrowed to the two response types
# shadowdiff reads: pydantic serializes a union field by its value's own model).
_BATCH = _vllm_definitions(
    "entrypoints/launchers/run_batch.py", ("BatchResponseData", "BatchRequestOutput"),
    {"OpenAIBaseModel": OpenAIBaseModel, "Any": Any, "PrivateAttr": PrivateAttr, "orjson": orjson,
     "AllResponse": chat.ChatCompletionResponse | completion.CompletionResponse})
_BATCH["BatchResponseData"].model_rebuild(_types_namespace=_BATCH)
_BATCH["BatchRequestOutput"].model_rebuild(_types_namespace=_BATCH)


def extras(value: Any, where: str = "") -> list[str]:
    """Fields vLLM's models kept as extras (``extra="allow"``): sent, but not vLLM's."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{where}.{key}" for key in (value.model_extra or {})]
        for name in type(value).model_fields:
            found += extras(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += extras(item, f"{where}[{i}]")
    return found


# -- what a request asks for -------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """What the serving code reads from the request to decide a response's fields."""

    chat: bool
    include_usage: bool           # should_include_usage (serve/utils/api_utils.py), not forced
    continuous_usage: bool
    logprobs: bool
    token_ids: bool               # return_token_ids
    prompt_text: bool             # return_prompt_text
    weight_versions: bool         # return_weight_versions
    echo: bool
    prompt_logprobs: bool
    choices: int                  # n, times the prompts of a completions prompt list

    @classmethod
    def of(cls, request: dict[str, Any], path: str) -> Asked:
        chat_request = path.endswith("/chat/completions")
        options = request.get("stream_options") or {}
        include = bool(options.get("include_usage"))
        prompt = request.get("prompt")
        prompts = len(prompt) if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int) else 1
        return cls(
            chat=chat_request, include_usage=include,
            continuous_usage=include and bool(options.get("continuous_usage_stats")),
            logprobs=bool(request.get("logprobs")) if chat_request else request.get("logprobs") is not None,
            token_ids=bool(request.get("return_token_ids")), prompt_text=bool(request.get("return_prompt_text")),
            weight_versions=bool(request.get("return_weight_versions")), echo=bool(request.get("echo")),
            # completions score an echoed prompt: prompt_logprobs defaults to logprobs (to_sampling_params)
            prompt_logprobs=request.get("prompt_logprobs") is not None
            or (not chat_request and bool(request.get("echo")) and request.get("logprobs") is not None),
            choices=(request.get("n") or 1) * (1 if chat_request else prompts))


def _asked_for(value: Any, asked: bool, what: str, problems: list[str]) -> Any:
    """vLLM sends ``value`` only when the request asked for it (``x if request.y else None``)."""
    if asked and value is None:
        problems.append(f"{what} was asked for, and not sent")
    return value if asked else None


# -- chat: chat_completion/serving.py ---------------------------------------------------------------


def chat_body(body: dict[str, Any], asked: Asked, problems: list[str]) -> chat.ChatCompletionResponse:
    """``chat_completion_full_generator``'s response. ``model_dump()`` writes every field,
    so the values are the simulator's, except those the request decides."""
    model = chat.ChatCompletionResponse.model_validate(body)
    for choice in model.choices:
        choice.token_ids = _asked_for(choice.token_ids, asked.token_ids, "token_ids", problems)
        if not asked.logprobs:
            choice.logprobs = None
    model.prompt_token_ids = _asked_for(model.prompt_token_ids, asked.token_ids, "prompt_token_ids", problems)
    model.prompt_text = _asked_for(model.prompt_text, asked.prompt_text, "prompt_text", problems)
    model.prompt_logprobs = _asked_for(model.prompt_logprobs, asked.prompt_logprobs, "prompt_logprobs", problems)
    if model.system_fingerprint is None:
        problems.append("no system_fingerprint")
    if asked.logprobs:   # one entry for every sampled token, the end of sequence included
        entries = sum(len(c.logprobs.content or ()) for c in model.choices if c.logprobs is not None)
        if entries != model.usage.completion_tokens:
            problems.append(f"logprobs for {entries} tokens, of {model.usage.completion_tokens} generated")
    _prompt_logprob_ranks(model.prompt_logprobs, problems)
    return model


def _prompt_logprob_ranks(positions: list[Any] | None, problems: list[str]) -> None:
    """``append_logprobs_for_next_position``: each position lists the prompt's own token
    with its true rank, then the top k by rank 1 to k (the prompt's token once)."""
    for at, position in enumerate(positions or ()):
        if position is None:
            if at:
                problems.append(f"prompt_logprobs[{at}] is null")
            continue
        ranks = [logprob.rank for logprob in position.values()]
        own, top = ranks[0], ranks[1:]
        expected = [r for r in range(1, len(top) + 2) if r != own][: len(top)]
        if own is None or own < 1 or top != expected:
            problems.append(f"prompt_logprobs[{at}] ranks {ranks} are not vLLM's (own rank, then 1..k)")


def completion_body(body: dict[str, Any], asked: Asked, problems: list[str]) -> completion.CompletionResponse:
    """``request_output_to_completion_response``: the values, except those the request decides."""
    model = completion.CompletionResponse.model_validate(body)
    for choice in model.choices:
        if not asked.logprobs:
            choice.logprobs = None
        if not asked.prompt_logprobs:
            choice.prompt_logprobs = None
        choice.token_ids = _asked_for(choice.token_ids, asked.token_ids, "token_ids", problems)
        choice.prompt_token_ids = _asked_for(choice.prompt_token_ids, asked.token_ids, "prompt_token_ids", problems)
        _prompt_logprob_ranks(choice.prompt_logprobs, problems)
    if model.system_fingerprint is None:
        problems.append("no system_fingerprint")
    if asked.logprobs and not asked.echo:   # one entry for every sampled token, the end of sequence included
        entries = sum(len(c.logprobs.tokens or ()) for c in model.choices if c.logprobs is not None)
        if entries != model.usage.completion_tokens:
            problems.append(f"logprobs for {entries} tokens, of {model.usage.completion_tokens} generated")
    return model


# The completions fast path (0.34) renders plain deltas from a template that
# completion/serving.py takes from the serializer itself (``_delta_frame_template`` and
# its probe values); a release without it serializes every chunk with the model.
try:
    _TEMPLATES: dict[str, Any] | None = _vllm_definitions(
        "entrypoints/openai/completion/serving.py", ("_delta_frame_template", "_PROBE_INDEX", "_PROBE_TEXT"),
        {"CompletionStreamResponse": completion.CompletionStreamResponse,
         "CompletionResponseStreamChoice": completion.CompletionResponseStreamChoice, "json": json})
except LookupError:
    _TEMPLATES = None


class Stream:
    """Rebuilds a streamed answer frame by frame, as ``chat_completion_stream_generator``
    and ``completion_stream_generator`` write it, and checks the sequence they write:
    (chat) each choice's role chunk first, then its deltas, one finish chunk each, the
    usage chunk after all of them exactly when ``include_usage`` asks for it, ``[DONE]``
    last; an error frame ends a stream early."""

    def __init__(self, asked: Asked) -> None:
        self.asked = asked
        self.problems: list[str] = []
        self.fingerprint: str | None = None   # the server's; vLLM stamps it where its code says
        self.started: set[int] = set()
        self.tokens: dict[int, int] = {}        # delta chunks so far, per choice
        self.finished: set[int] = set()
        self.usage = False
        self.failed = False
        self.done = False

    def chunk(self, frame: dict[str, Any]) -> str:
        if self.done:
            self.problems.append("a frame after [DONE]")
        self.fingerprint = self.fingerprint or frame.get("system_fingerprint")
        if not frame["choices"]:
            if not self.asked.include_usage or self.usage:
                self.problems.append("a usage chunk that include_usage did not ask for")
            if len(self.finished) < self.asked.choices:
                self.problems.append("the usage chunk came before every choice finished")
            self.usage = True
            return self._usage_chunk(frame)
        [choice] = frame["choices"]
        index = choice["index"]
        if index >= self.asked.choices:
            self.problems.append(f"choice {index} of {self.asked.choices}")
        if index in self.finished:
            self.problems.append(f"choice {index}: a chunk after its finish chunk")
        if self.asked.chat and "role" in choice["delta"]:
            if index in self.started:
                self.problems.append(f"choice {index}: a second role chunk")
            self.started.add(index)
            return self._role_chunk(frame, choice)
        if self.asked.chat and index not in self.started:
            self.problems.append(f"choice {index}: a delta before its role chunk")
        if choice["finish_reason"] is not None:
            self.finished.add(index)
        text = self._chat_delta(frame, choice) if self.asked.chat else self._completion_delta(frame, choice)
        self.tokens[index] = self.tokens.get(index, 0) + 1
        return text

    def end(self, error: bool) -> list[str]:
        """The problems of the sequence, once the stream is over."""
        if not self.done:
            self.problems.append("no [DONE]")
        if not error:
            missing = sorted(set(range(self.asked.choices)) - self.finished)
            if missing:
                self.problems.append(f"choices {missing} never finished")
            if self.asked.include_usage and not self.usage:
                self.problems.append("include_usage asked for a usage chunk, and none came")
        return self.problems

    # -- chat ------------------------------------------------------------------------------------

    def _head(self, frame: dict[str, Any]) -> dict[str, Any]:
        return {"id": frame["id"], "object": frame["object"], "created": frame["created"], "model": frame["model"]}

    def _role_chunk(self, frame: dict[str, Any], choice: dict[str, Any]) -> str:
        asked = self.asked
        chunk = chat.ChatCompletionStreamResponse(
            **self._head(frame), choices=[chat.ChatCompletionResponseStreamChoice(
                index=choice["index"], delta=DeltaMessage(role="assistant", content=""), logprobs=None,
                finish_reason=None)],
            prompt_token_ids=_asked_for(frame.get("prompt_token_ids"), asked.token_ids, "prompt_token_ids",
                                        self.problems),
            prompt_text=_asked_for(frame.get("prompt_text"), asked.prompt_text, "prompt_text", self.problems))
        if asked.continuous_usage:
            usage = frame.get("usage") or {}
            prompt_tokens = usage.get("prompt_tokens", 0)
            chunk.usage = UsageInfo(prompt_tokens=prompt_tokens, completion_tokens=0, total_tokens=prompt_tokens,
                                    completion_tokens_details=None, prompt_tokens_details=None)
        return chunk.model_dump_json(exclude_unset=True, exclude_none=False)

    def _chat_delta(self, frame: dict[str, Any], choice: dict[str, Any]) -> str:
        asked, index = self.asked, choice["index"]
        text = choice["delta"].get("content") or ""
        # StreamProcessor.step: DeltaMessage() only when a choice finished without any
        # output; otherwise DeltaMessage(content=delta_text), empty text included
        message = DeltaMessage() if not text and not self.tokens.get(index) and choice["finish_reason"] \
            else DeltaMessage(content=text)
        logprobs = _asked_for(_chat_logprobs(choice["logprobs"]), asked.logprobs, "logprobs", self.problems)
        token_ids = _asked_for(choice.get("token_ids"), asked.token_ids, "token_ids", self.problems)
        if choice["finish_reason"] is None:
            stream_choice = chat.ChatCompletionResponseStreamChoice(
                index=index, delta=message, logprobs=logprobs, finish_reason=None, token_ids=token_ids)
        else:
            stream_choice = chat.ChatCompletionResponseStreamChoice(
                index=index, delta=message, logprobs=logprobs, finish_reason=choice["finish_reason"],
                stop_reason=choice.get("stop_reason"), token_ids=token_ids,
                weight_versions=_asked_for(choice.get("weight_versions"), asked.weight_versions, "weight_versions",
                                           self.problems))
        chunk = chat.ChatCompletionStreamResponse(**self._head(frame), choices=[stream_choice],
                                                  kv_transfer_params=None)
        if not asked.include_usage and self.fingerprint is not None and stream_choice.finish_reason is not None:
            chunk.system_fingerprint = self.fingerprint
        if asked.continuous_usage:
            usage = frame.get("usage") or {}
            chunk.usage = UsageInfo(prompt_tokens=usage.get("prompt_tokens", 0),
                                    completion_tokens=usage.get("completion_tokens"),
                                    total_tokens=usage.get("total_tokens", 0), completion_tokens_details=None)
        return chunk.model_dump_json(exclude_unset=True, exclude_none=False)

    def _usage_chunk(self, frame: dict[str, Any]) -> str:
        usage = frame["usage"]
        if self.fingerprint is None:
            self.problems.append("no system_fingerprint on the usage chunk")
        if self.asked.chat:
            final_usage = UsageInfo(prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
                                    total_tokens=usage["total_tokens"], completion_tokens_details=None)
            final_usage.prompt_tokens_details = None   # _make_prompt_tokens_details(False, ...)
            chunk = chat.ChatCompletionStreamResponse(**self._head(frame), choices=[], usage=final_usage,
                                                      system_fingerprint=self.fingerprint, metrics=None)
            return chunk.model_dump_json(exclude_unset=True, exclude_none=True)
        final = completion.CompletionStreamResponse(
            id=frame["id"], created=frame["created"], model=frame["model"], choices=[],
            usage=UsageInfo(prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
                            total_tokens=usage["total_tokens"]),
            system_fingerprint=self.fingerprint, metrics=None)
        return final.model_dump_json(exclude_unset=False, exclude_none=True)

    # -- completions ---------------------------------------------------------------------------

    def _completion_delta(self, frame: dict[str, Any], choice: dict[str, Any]) -> str:
        asked, index = self.asked, choice["index"]
        fast = not (asked.echo or asked.logprobs or asked.token_ids or asked.weight_versions
                    or asked.continuous_usage)
        if fast and choice["finish_reason"] is None and _TEMPLATES is not None:
            template = _TEMPLATES["_delta_frame_template"](frame["id"], frame["created"], frame["model"])
            if template is not None:   # the template is a whole frame; return its JSON
                prefix, infix, suffix = template
                whole = f"{prefix}{index}{infix}{json.dumps(choice['text'], ensure_ascii=False)}{suffix}"
                return whole.removeprefix("data: ").removesuffix("\n\n")
        first = index not in self.tokens
        logprobs = choice["logprobs"]
        chunk = completion.CompletionStreamResponse(
            id=frame["id"], object="text_completion", created=frame["created"], model=frame["model"],
            choices=[completion.CompletionResponseStreamChoice(
                index=index, text=choice["text"],
                logprobs=_asked_for(None if logprobs is None else completion.CompletionLogProbs(**logprobs),
                                    asked.logprobs, "logprobs", self.problems),
                finish_reason=choice["finish_reason"], stop_reason=choice["stop_reason"],
                # the prompt's ids travel on a choice's first chunk, with echo or return_token_ids
                prompt_token_ids=_asked_for(choice["prompt_token_ids"], first and (asked.echo or asked.token_ids),
                                            "prompt_token_ids", self.problems),
                token_ids=_asked_for(choice["token_ids"], asked.token_ids, "token_ids", self.problems),
                weight_versions=_asked_for(choice.get("weight_versions"), asked.weight_versions, "weight_versions",
                                           self.problems))],
            kv_transfer_params=None)
        if not asked.include_usage and self.fingerprint is not None and choice["finish_reason"] is not None:
            chunk.system_fingerprint = self.fingerprint
        if asked.continuous_usage:
            usage = frame.get("usage") or {}
            chunk.usage = UsageInfo(prompt_tokens=usage.get("prompt_tokens", 0),
                                    completion_tokens=usage.get("completion_tokens"),
                                    total_tokens=usage.get("total_tokens", 0))
        return chunk.model_dump_json(exclude_unset=True)


# -- errors ---------------------------------------------------------------------------------------------


def error_response(body: dict[str, Any]) -> ErrorResponse:
    return ErrorResponse(error=ErrorInfo(**body["error"]))


def error_frame(data: dict[str, Any], chat_stream: bool) -> str:
    """After the 200: chat writes the ErrorResponse with ``model_dump_json()``; completions
    with ``create_streaming_error_response`` (``json.dumps(... .model_dump())``)."""
    response = error_response(data)
    return response.model_dump_json() if chat_stream else json.dumps(response.model_dump())


# -- operations -------------------------------------------------------------------------------------------


# The media types of vLLM's responses (the api_routers: JSONResponse, or StreamingResponse
# with media_type="text/event-stream"), with the charset Starlette adds to text types.
_CONTENT_TYPES = {False: JSONResponse(content=None).headers["content-type"],
                  True: StreamingResponse(iter(()), media_type="text/event-stream").headers["content-type"]}


def rebuild(request: dict[str, Any], path: str, status: int, raw: str) -> dict[str, Any]:
    """vLLM's response for the values of a simulator response: its bytes, status and
    content type; the fields the simulator sent that vLLM's models do not have; and what
    the simulator got wrong that bytes alone cannot show (a missing frame, a value the
    request asked for and did not get)."""
    asked = Asked.of(request, path)
    problems: list[str] = []
    if status != 200:
        model: BaseModel = error_response(json.loads(raw))
        return {"raw": json_response(model), "status": model.error.code, "content_type": _CONTENT_TYPES[False],
                "extras": extras(model), "problems": problems}
    if not request.get("stream"):
        body = json.loads(raw)
        model = chat_body(body, asked, problems) if asked.chat else completion_body(body, asked, problems)
        return {"raw": json_response(model), "status": 200, "content_type": _CONTENT_TYPES[False],
                "extras": extras(model), "problems": problems}
    stream = Stream(asked)
    out, found, error = [], [], False
    for frame in _frames(raw):
        if frame.startswith(":"):   # an idle stream's comment (serve/utils/sse_keep_alive.py)
            out.append(SSE_KEEP_ALIVE_COMMENT.removesuffix("\n\n"))
            continue
        data = frame.removeprefix("data: ")
        if data == "[DONE]":
            stream.done = True
            out.append("data: [DONE]")
            continue
        value = json.loads(data)
        if "error" in value:
            error = True
            out.append("data: " + error_frame(value, asked.chat))
            continue
        chunk_model = chat.ChatCompletionStreamResponse if asked.chat else completion.CompletionStreamResponse
        found += extras(chunk_model.model_validate(value))
        out.append("data: " + stream.chunk(value))
    return {"raw": "\n\n".join(out) + "\n\n", "status": 200, "content_type": _CONTENT_TYPES[True],
            "extras": found, "problems": stream.end(error)}


# The other routes' bodies are ``JSONResponse(content=model.model_dump())`` of these models.
_BODIES = {"/v1/models": ModelList, "/tokenize": TokenizeResponse, "/detokenize": DetokenizeResponse}


def rebuild_body(path: str, raw: str) -> dict[str, Any]:
    """vLLM's bytes for a body of another route (``/v1/models``, ``/tokenize``, ``/detokenize``)."""
    model = _BODIES[path].model_validate(json.loads(raw))
    return {"raw": json_response(model), "extras": extras(model)}


def batch_line(custom_id: str, line_id: str, request_id: str, body: dict[str, Any] | None,
               status: int = 200, error: Any = None, url: str = "/v1/chat/completions") -> str:
    """One run-batch output line (``run_request`` in launchers/run_batch.py)."""
    output_type, response_type = _BATCH["BatchRequestOutput"], _BATCH["BatchResponseData"]
    if body is None:   # make_error_request_output, or an ErrorResponse
        response = response_type(status_code=status, request_id=request_id)
        line = output_type(id=line_id, custom_id=custom_id, response=response,
                           error=error_response(error) if isinstance(error, dict) else error)
    else:
        model = (chat.ChatCompletionResponse.model_validate(body) if url.endswith("/chat/completions")
                 else completion.CompletionResponse.model_validate(body))
        line = output_type(id=line_id, custom_id=custom_id, response=response_type(body=model, request_id=request_id),
                           error=None)
    # 0.34 writes ``to_json_line()`` (a raw handler body spliced in); earlier releases ``model_dump_json()``
    return str(line.to_json_line() if hasattr(type(line), "to_json_line") else line.model_dump_json())


# -- answers for shadowdiff's readers: chat with reasoning, tool calls, n choices -------------------


def _tool_calls(choice: dict[str, Any]) -> list[ToolCall]:
    return [ToolCall(id=call["id"], function=FunctionCall(name=call["name"], arguments=call["arguments"]))
            for call in choice.get("tool_calls") or ()]


def _usage(answer: dict[str, Any]) -> UsageInfo:
    completion_tokens = sum(c["completion_tokens"] for c in answer["choices"])
    reasoning = answer.get("reasoning_tokens")
    return UsageInfo(prompt_tokens=answer["prompt_tokens"], completion_tokens=completion_tokens,
                     total_tokens=answer["prompt_tokens"] + completion_tokens,
                     completion_tokens_details=None if reasoning is None
                     else CompletionTokenUsageInfo(reasoning_tokens=reasoning))


def build(answer: dict[str, Any], stream: bool) -> str:
    """The bytes of a chat answer described by values, as vLLM 0.34 serves one with a
    reasoning parser and a tool parser (``chat_completion_full_generator``, or
    ``chat_completion_stream_generator`` with ``include_usage``): each choice's
    ``reasoning`` and ``content`` (either may be None), its ``tool_calls``
    (``id``, ``name``, ``arguments``), its ``finish_reason`` and ``completion_tokens``;
    streamed, text comes in the ``pieces`` of each choice, choices interleaved."""
    head = {"id": answer["id"], "created": answer["created"], "model": answer["model"]}
    if not stream:
        choices = [chat.ChatCompletionResponseChoice(
            index=i, message=chat.ChatMessage(role="assistant", content=c.get("content"), reasoning=c.get("reasoning"),
                                              tool_calls=_tool_calls(c)),
            logprobs=None, finish_reason=c["finish_reason"], stop_reason=None)
            for i, c in enumerate(answer["choices"])]
        return json_response(chat.ChatCompletionResponse(**head, choices=choices, usage=_usage(answer),
                                                         system_fingerprint=answer.get("system_fingerprint")))
    frames = []

    def emit(index: int, delta: DeltaMessage, finish_reason: str | None = None) -> None:
        if finish_reason is None:
            choice = chat.ChatCompletionResponseStreamChoice(index=index, delta=delta, logprobs=None,
                                                             finish_reason=None, token_ids=None)
        else:
            choice = chat.ChatCompletionResponseStreamChoice(index=index, delta=delta, logprobs=None,
                                                             finish_reason=finish_reason, stop_reason=None,
                                                             token_ids=None, weight_versions=None)
        chunk = chat.ChatCompletionStreamResponse(object="chat.completion.chunk", **head, choices=[choice],
                                                  kv_transfer_params=None)
        frames.append(chunk.model_dump_json(exclude_unset=True, exclude_none=False))

    for i in range(len(answer["choices"])):
        chunk = chat.ChatCompletionStreamResponse(
            object="chat.completion.chunk", **head, prompt_token_ids=None, prompt_text=None,
            choices=[chat.ChatCompletionResponseStreamChoice(index=i, delta=DeltaMessage(role="assistant", content=""),
                                                             logprobs=None, finish_reason=None)])
        frames.append(chunk.model_dump_json(exclude_unset=True, exclude_none=False))
    steps: list[list[tuple[int, DeltaMessage]]] = []
    for i, c in enumerate(answer["choices"]):
        deltas = [DeltaMessage(reasoning=piece) for piece in c.get("reasoning_pieces") or ()]
        deltas += [DeltaMessage(content=piece) for piece in c.get("content_pieces") or ()]
        for k, call in enumerate(c.get("tool_calls") or ()):
            deltas.append(DeltaMessage(tool_calls=[DeltaToolCall(id=call["id"], type="function", index=k,
                                                                 function=DeltaFunctionCall(name=call["name"]))]))
            deltas += [DeltaMessage(tool_calls=[DeltaToolCall(index=k, function=DeltaFunctionCall(arguments=part))])
                       for part in call["argument_pieces"]]
        steps.append([(i, d) for d in deltas])
    for row in range(max(map(len, steps))):   # choices interleaved, as the engine's outputs come
        for column in steps:
            if row < len(column):
                emit(*column[row])
    for i, c in enumerate(answer["choices"]):
        emit(i, DeltaMessage(content=""), c["finish_reason"])
    usage = chat.ChatCompletionStreamResponse(object="chat.completion.chunk", **head, choices=[], usage=_usage(answer),
                                              system_fingerprint=answer.get("system_fingerprint"), metrics=None)
    frames.append(usage.model_dump_json(exclude_unset=True, exclude_none=True))
    return "".join(f"data: {frame}\n\n" for frame in frames) + "data: [DONE]\n\n"


def validate(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Whether vLLM's request model accepts ``body`` (as its api_router parses it), and uses
    all of it: vLLM's models keep unknown fields (``extra="allow"``) and ignore them, so a
    misspelt field would pass validation and silently do nothing."""
    model: Any = chat.ChatCompletionRequest if path.endswith("/chat/completions") else completion.CompletionRequest
    if path == "/tokenize":   # (teacher-forced scoring: a union, as the api_router parses it)
        model = TokenizeChatRequest if "messages" in body else TokenizeCompletionRequest
    try:
        parsed = model.model_validate(body)
    except Exception as exc:   # pydantic's ValidationError, or vLLM's own VLLMValidationError
        return {"valid": False, "error": f"{type(exc).__name__}: {exc}"}
    unknown = extras(parsed)
    if unknown:
        return {"valid": False, "error": f"fields vLLM ignores: {unknown}"}
    return {"valid": True, "error": None}


def main() -> None:
    operations = {"rebuild": rebuild, "rebuild_body": rebuild_body, "validate": validate, "batch_line": batch_line,
                  "build": build, "rebuild_parsed": oracle_parsed.rebuild_parsed, "version": lambda: vllm.__version__}
    for line in sys.stdin:
        try:
            call = json.loads(line)
            result = operations[call.pop("op")](**call)
            answer = {"ok": result}
        except Exception:
            answer = {"error": traceback.format_exc()}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

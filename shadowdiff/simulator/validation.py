"""Request bodies and their validation, with vLLM 0.34's messages and status codes.

Three layers reject a bad request, in the order vLLM applies them:

1. the content type and JSON syntax, then the pydantic models below (FastAPI's
   ``RequestValidationError``: 400, ``type: "Bad Request"``, a message listing each
   error as a Python dict repr);
2. the request-level checks vLLM runs in ``model_validator(mode="before")`` hooks
   (``VLLMValidationError``: 400, ``BadRequestError``, a ``(parameter=..., value=...)``
   suffix on the message);
3. the sampling-parameter checks (``SamplingParams._verify_args``), same shape.

Unknown fields are accepted and ignored (``extra="allow"``), as vLLM does.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from typing_extensions import TypedDict

from shadowdiff.errors import RequestError

_INT64 = 2**63
Model = TypeVar("Model", bound=BaseModel)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool | None = False
    continuous_usage_stats: bool | None = False


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class _Sampling(BaseModel):
    """The fields chat and completions requests share."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    max_tokens: int | None = None
    n: int | None = 1
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    presence_penalty: float | None = 0.0
    frequency_penalty: float | None = 0.0
    repetition_penalty: float | None = None
    seed: int | None = Field(None, ge=-_INT64, le=_INT64 - 1)
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    include_stop_str_in_output: bool = False
    ignore_eos: bool = False
    min_tokens: int = 0
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    prompt_logprobs: int | None = None
    request_id: str | None = None
    return_token_ids: bool | None = None
    echo: bool | None = False
    response_format: dict[str, Any] | None = None
    logit_bias: dict[str, float] | None = None

    def stop_strings(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)


class _Messages(BaseModel):
    messages: list[Message]


class _Prompt(BaseModel):
    prompt: str | list[str] | list[int] | list[list[int]] | None = None


class FunctionDefinition(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolParam(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["function"] = "function"
    function: FunctionDefinition


class _NamedFunction(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class NamedToolChoice(BaseModel):
    """vLLM's ``ChatCompletionNamedToolChoiceParam``; its wrap validator (vLLM's
    ``__log_extra_fields__``) makes pydantic name the union branch ``function-wrap[...]``,
    which the error message leaves out of ``loc``, as vLLM's does."""

    model_config = ConfigDict(extra="allow")
    function: _NamedFunction
    type: Literal["function"] = "function"

    @model_validator(mode="wrap")
    @classmethod
    def __log_extra_fields__(cls, data: Any, handler: Any) -> Any:
        return handler(data)


def _as_dict(value: Any) -> Any:
    return value.model_dump() if isinstance(value, BaseModel) else value


ToolChoice = Annotated[Literal["none"] | Literal["auto"] | Literal["required"] | NamedToolChoice | None,
                       AfterValidator(_as_dict)]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]


# An assistant message's ``tool_calls``, as vLLM types them (openai's params): an
# ``Iterable`` pydantic checks lazily, in vLLM's ``_materialize_tool_calls_after``.
class Function(TypedDict):
    arguments: str
    name: str


class ChatCompletionMessageFunctionToolCallParam(TypedDict):
    id: str
    function: Function
    type: Literal["function"]


class Custom(TypedDict):
    input: str
    name: str


class ChatCompletionMessageCustomToolCallParam(TypedDict):
    id: str
    custom: Custom
    type: Literal["custom"]


_TOOL_CALL = TypeAdapter(ChatCompletionMessageFunctionToolCallParam | ChatCompletionMessageCustomToolCallParam)


def check_tool_calls(messages: list[Message]) -> None:
    """vLLM's 400 for an assistant message's malformed ``tool_calls``: pydantic checks the
    items one by one when vLLM's after-validator lists them, so the errors are the first
    bad item's, with a ``loc`` from that item on (``body.0.<branch>.id``)."""
    for message in messages:
        calls = getattr(message, "tool_calls", None)
        if message.role != "assistant" or calls is None or not isinstance(calls, list | str | dict):
            continue
        for index, call in enumerate(calls):
            try:
                _TOOL_CALL.validate_python(call)
            except ValidationError as exc:
                raise _format_errors([
                    _error(e["type"], _loc(("body", index, *e["loc"])), e["msg"], e.get("input"), e.get("ctx"))
                    for e in exc.errors(include_url=False)]) from None


# Bases are listed so that ``messages`` / ``prompt`` come first, as in vLLM's models:
# pydantic reports validation errors in field order, and vLLM's ``param`` is the first.
class ChatRequest(_Sampling, _Messages):
    max_completion_tokens: int | None = None
    logprobs: bool | None = False
    top_logprobs: int | None = 0
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    tools: list[ToolParam] | None = None
    # check_tool_usage has refused any other string, and named choices without a name
    tool_choice: ToolChoice = "none"
    parallel_tool_calls: bool | None = True
    include_reasoning: bool = True
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_effort: ReasoningEffort | None = None

    @property
    def thinking(self) -> bool:
        """Whether the chat template lets a reasoning model think (Qwen3's ``enable_thinking``;
        vLLM turns a ``reasoning_effort`` into it: build_chat_params in chat_completion/protocol.py)."""
        return template_thinking(self.chat_template_kwargs, self.reasoning_effort != "none")

    @property
    def parser_thinking(self) -> bool:
        """Whether vLLM's qwen3 parser expects thinking: it reads ``enable_thinking`` (the
        user's, or the one ``reasoning_effort`` sets) by truthiness (``parser/qwen3.py``),
        so with ``enable_thinking: 0`` the model thinks and the parser keeps it as content."""
        kwargs = self.chat_template_kwargs or {}
        if "enable_thinking" in kwargs:
            return bool(kwargs["enable_thinking"])
        return self.reasoning_effort != "none"

    @property
    def requested_max_tokens(self) -> tuple[str, int | None]:
        if self.max_completion_tokens is not None:
            return "max_completion_tokens", self.max_completion_tokens
        return "max_tokens", self.max_tokens


class CompletionRequest(_Sampling, _Prompt):
    logprobs: int | None = None
    suffix: str | None = None

    @property
    def requested_max_tokens(self) -> tuple[str, int | None]:
        return "max_tokens", 16 if self.max_tokens is None else self.max_tokens


def template_thinking(kwargs: dict[str, Any] | None, default: bool = True) -> bool:
    """Whether Qwen3's template leaves thinking on: ``enable_thinking is defined and
    enable_thinking is false`` turns it off, so only false itself does (null, 0, "" still
    think); without the key, ``default``."""
    kwargs = kwargs or {}
    return kwargs["enable_thinking"] is not False if "enable_thinking" in kwargs else default


class TokenizeRequest(BaseModel):
    """vLLM's ``TokenizeCompletionRequest | TokenizeChatRequest`` in one model. Their
    ``add_special_tokens`` defaults differ (true for a prompt, false for messages: the
    template adds the special tokens), and neither matters here: this tokenizer adds no
    BOS, as Qwen's adds none. ``TokenizeChatRequest`` has no ``reasoning_effort``."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    prompt: str | None = None
    messages: list[Message] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    return_token_strs: bool | None = False
    tools: list[ToolParam] | None = None
    chat_template_kwargs: dict[str, Any] | None = None

    @property
    def thinking(self) -> bool:
        """As ``ChatRequest.thinking``: the same template renders both."""
        return template_thinking(self.chat_template_kwargs)


class DetokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str | None = None
    tokens: list[int] = Field(...)


def vllm_error(message: str, param: str | None = None, value: Any = None, *,
               status: int = 400, kind: str = "BadRequestError") -> RequestError:
    """A ``VLLMValidationError``: the message gets vLLM's ``(parameter=..., value=...)``."""
    if param is not None and value is not None:
        message = f"{message} (parameter={param}, value={value})"
    elif param is not None:
        message = f"{message} (parameter={param})"
    return RequestError(message, status=status, kind=kind, param=param)


# -- layer 1: FastAPI's RequestValidationError, formatted as vLLM's handler does -----

_TYPE_SEGMENT = re.compile(r"\[|^(str|int|float|bool|none|bytes)$|^function-")


def _summarize(value: Any) -> str:
    if isinstance(value, str):
        return value if len(value) <= 200 else value[:200] + "...[truncated]"
    if isinstance(value, list | dict | tuple | set):
        return f"<{type(value).__name__} of {len(value)} items>"
    return str(value)


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc if not _TYPE_SEGMENT.search(str(part)))


def _format_errors(errors: list[dict[str, Any]]) -> RequestError:
    count = len(errors)
    lines = []
    for err in errors[:10]:
        entry = {"type": err["type"], "loc": err["loc"], "msg": err["msg"],
                 "input": _summarize(err.get("input"))}
        if err.get("ctx"):
            entry["ctx"] = {k: str(v) if isinstance(v, Exception) else v for k, v in err["ctx"].items()}
        lines.append(f"  {str(entry)[:1000]}\n")
    if count > 10:
        lines.append(f"  ...and {count - 10} more errors\n")
    label = "error" if count == 1 else "errors"
    message = (f"{count} validation {label}:\n" + "".join(lines)).rstrip()
    param = errors[0]["loc"] if errors and errors[0]["loc"] else None
    return RequestError(message, status=400, kind="Bad Request", param=param)


def _error(kind: str, loc: str, msg: str, value: Any, ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"type": kind, "loc": loc, "msg": msg, "input": value}
    if ctx:
        err["ctx"] = ctx
    return err


def parse_json(content_type: str | None, body: bytes) -> Any:
    """The JSON body, or vLLM's 400 for a wrong content type or broken JSON.

    FastAPI parses the body as JSON when the content type is missing or a JSON type,
    so a syntax error wins over the content-type check; vLLM's ``validate_json_request``
    then insists on exactly ``application/json``.
    """
    media = (content_type or "").lower().split(";", 1)[0].strip()
    data = None
    if body and (not media or media == "application/json" or media.endswith("+json")):
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise _format_errors([_error("json_invalid", f"body.{exc.pos}", "JSON decode error", {},
                                         {"error": exc.msg})]) from None
        except (RecursionError, UnicodeDecodeError):
            # FastAPI turns any other failure of ``request.json()`` (bytes that are not
            # UTF-8, a body nested past Python's recursion limit) into this HTTPException.
            raise RequestError("There was an error parsing the body", status=400,
                               kind="Bad Request") from None
    if media != "application/json":
        raise RequestError(
            "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed",
            status=400, kind="Bad Request",
        )
    if data is None:
        raise _format_errors([_error("missing", "body", "Field required", None)])
    return data


def validate(model: type[Model], data: Any) -> Model:
    """``model`` built from ``data``, or vLLM's formatted 400."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [
            _error(e["type"], _loc(("body", *e["loc"])), e["msg"], e.get("input"), e.get("ctx"))
            for e in exc.errors(include_url=False)
        ]
        raise _format_errors(errors) from None


# -- layer 2: vLLM's model_validator(mode="before") hooks, on the raw body ----------


def check_raw(data: Any, *, chat: bool) -> None:
    """vLLM's request-level checks, which run before field validation.

    Pydantic runs a model's ``mode="before"`` validators last-defined first, so the
    order here is the reverse of their order in vLLM's request classes.
    """
    if not isinstance(data, dict):
        return
    if chat:
        if data.get("continue_final_message") and data.get("add_generation_prompt"):
            raise vllm_error("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
        check_tool_usage(data)
        _check_structured_outputs(data)
    else:
        if data.get("prompt") is None or data.get("prompt") == "":
            raise vllm_error("Either prompt or prompt_embeds must be provided and non-empty.", "prompt")
        _check_stream_options(data)
    _check_logprobs(data, chat=chat)
    if chat:
        _check_stream_options(data)


def _check_stream_options(data: dict[str, Any]) -> None:
    if data.get("stream_options") and not data.get("stream"):
        raise vllm_error("Stream options can only be defined when `stream=True`.", "stream_options")


_NAMED_USAGE = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`'


def check_tool_usage(data: dict[str, Any]) -> None:
    """``ChatCompletionRequest.check_tool_usage``: its defaults (``auto`` when tools are
    given, an empty list read as none) and its 400s. Changes ``data`` as vLLM's does."""
    _default_tool_choice(data)
    choice = data.get("tool_choice")
    if choice is None or choice == "none":
        return
    if data.get("tools") is None:
        raise vllm_error("When using `tool_choice`, `tools` must be set.", "tool_choice")
    if isinstance(choice, dict):
        _check_named_tool(choice, data["tools"])
    elif choice not in ("auto", "required"):
        raise vllm_error(f"Invalid value for `tool_choice`: {choice}! Only named tools, \"none\", \"auto\" "
                         "or \"required\" are supported.", "tool_choice")


def _default_tool_choice(data: dict[str, Any]) -> None:
    """An empty ``tools`` list is no tools (and ``auto``/``required`` become ``none``),
    unless a tool is named; ``tool_choice`` defaults to ``auto`` when tools are given."""
    if data.get("tools") == [] and not isinstance(data.get("tool_choice"), dict):
        data["tools"] = None
        if data.get("tool_choice") in ("auto", "required"):
            data["tool_choice"] = "none"
    if "tool_choice" not in data and data.get("tools"):
        data["tool_choice"] = "auto"


def _check_named_tool(choice: dict[str, Any], tools: Any) -> None:
    """A named ``tool_choice``: a ``function`` with a non-empty ``name`` among ``tools``."""
    function = choice.get("function")
    if not isinstance(function, dict):
        raise vllm_error(f"Invalid value for `function`: `{function}` in `tool_choice`! {_NAMED_USAGE}",
                         "tool_choice.function")
    if "name" not in function:
        raise vllm_error(f"Expected field `name` in `function` in `tool_choice`! {_NAMED_USAGE}",
                         "tool_choice.function.name")
    name = function["name"]
    if not isinstance(name, str) or not name:
        raise vllm_error(f"Invalid `name` in `function`: `{name}` in `tool_choice`! {_NAMED_USAGE}",
                         "tool_choice.function.name")
    if not any(_tool_name(tool) == name for tool in (tools if isinstance(tools, list) else [])):
        raise vllm_error(f"The tool `{name}` specified in `tool_choice` does not match any of the specified "
                         "`tools`", "tool_choice")


def _tool_name(tool: Any) -> Any:
    """The function name of a ``tools`` entry, or None if it has no function."""
    function = tool.get("function") if isinstance(tool, dict) else None
    return function.get("name") if isinstance(function, dict) else None


def _check_structured_outputs(data: dict[str, Any]) -> None:
    """``ChatCompletionRequest.check_structured_outputs_count``."""
    outputs = data.get("structured_outputs")
    if not isinstance(outputs, dict):
        return
    count = sum(outputs.get(k) is not None for k in ("json", "regex", "choice"))
    if count > 1:
        raise vllm_error("You can only use one kind of constraints for structured outputs "
                         "('json', 'regex' or 'choice').")
    if count > 0 and data.get("tool_choice", "none") not in ("none", "auto", "required"):
        raise vllm_error("You can only either use constraints for structured outputs or tools, not both.")


def _check_logprobs(data: dict[str, Any], *, chat: bool) -> None:
    fields = ("prompt_logprobs", "top_logprobs") if chat else ("prompt_logprobs", "logprobs")
    for name in fields:
        value = data.get(name)
        if value is not None and not isinstance(value, int | float):
            raise vllm_error(f"`{name}` must be an integer.", name, value)
    prompt_logprobs = data.get("prompt_logprobs")
    if prompt_logprobs is not None:
        if data.get("stream") and (prompt_logprobs > 0 or prompt_logprobs == -1):
            raise vllm_error("`prompt_logprobs` are not available when `stream=True`.",
                             "prompt_logprobs")
        if prompt_logprobs < 0 and prompt_logprobs != -1:
            raise vllm_error("`prompt_logprobs` must be a positive value or -1.",
                             "prompt_logprobs", prompt_logprobs)
    name = "top_logprobs" if chat else "logprobs"
    top = data.get(name)
    if top is not None:
        if top < 0 and top != -1:
            raise vllm_error(f"`{name}` must be a positive value or -1.", name, top)
        if chat and (top == -1 or top > 0) and not data.get("logprobs"):
            raise vllm_error("when using `top_logprobs`, `logprobs` must be set to true.",
                             "top_logprobs")


# -- layer 3: SamplingParams._verify_args ---------------------------------------------


MAX_N = 16384  # VLLM_MAX_N_SEQUENCES


def check_sampling(req: _Sampling, *, temperature: float, max_tokens: int) -> None:
    """vLLM's sampling-parameter checks, with its messages, in its order: the first
    failing check is the one reported."""
    n = 1 if req.n is None else req.n
    _check_n(n)
    _check_penalties(req)
    _check_temperature(temperature)
    _check_filters(req)
    _check_token_counts(req.min_tokens, max_tokens)
    if any(not stop for stop in req.stop_strings()):
        raise vllm_error("stop cannot contain an empty string.")
    if temperature < 1e-5 and n > 1:
        raise vllm_error(f"n must be 1 when using greedy sampling, got {n}.")


def _check_n(n: int) -> None:
    if n < 1:
        raise vllm_error(f"n must be at least 1, got {n}.")
    if n > MAX_N:
        raise vllm_error(f"n must be at most {MAX_N}, got {n}. To increase this limit, set the "
                         "VLLM_MAX_N_SEQUENCES environment variable.")


def _check_penalties(req: _Sampling) -> None:
    for name in ("presence_penalty", "frequency_penalty"):
        value = getattr(req, name)
        if value is not None and not -2.0 <= value <= 2.0:
            raise vllm_error(f"{name} must be in [-2, 2], got {value}.")
    if req.repetition_penalty is not None and req.repetition_penalty <= 0.0:
        raise vllm_error(f"repetition_penalty must be greater than zero, got {req.repetition_penalty}.")


def _check_temperature(temperature: float) -> None:
    if not math.isfinite(temperature):
        raise vllm_error(f"temperature must be a finite number, got {temperature}.", "temperature", temperature)
    if temperature < 0.0:
        raise vllm_error(f"temperature must be non-negative, got {temperature}.", "temperature", temperature)
    if temperature > 2.0:
        raise vllm_error(f"temperature must be in [0, 2], got {temperature}.", "temperature", temperature)


def _check_filters(req: _Sampling) -> None:
    """``top_p``, ``top_k`` and ``min_p``: the limits on which tokens may be sampled."""
    if req.top_p is not None and not 0.0 < req.top_p <= 1.0:
        raise vllm_error(f"top_p must be in (0, 1], got {req.top_p}.", "top_p", req.top_p)
    if req.top_k is not None and req.top_k < -1:
        raise vllm_error(f"top_k must be 0 (disable), or at least 1, got {req.top_k}.")
    if req.min_p is not None and not 0.0 <= req.min_p <= 1.0:
        raise vllm_error(f"min_p must be in [0, 1], got {req.min_p}.")


def _check_token_counts(min_tokens: int, max_tokens: int) -> None:
    if max_tokens < 1:
        raise vllm_error(f"max_tokens must be at least 1, got {max_tokens}.", "max_tokens", max_tokens)
    if min_tokens < 0:
        raise vllm_error(f"min_tokens must be greater than or equal to 0, got {min_tokens}.")
    if min_tokens > max_tokens:
        raise vllm_error(
            f"min_tokens must be less than or equal to max_tokens={max_tokens}, got {min_tokens}.")

"""From an HTTP request to a ``Job``: what to generate and how to send it back.

The checks run in vLLM's order: JSON and content type, the request-level checks,
field validation, the model name, the prompt (chat template, token-id range),
``max_tokens`` against ``--max-model-len``, then the sampling parameters. The
``--max-logprobs`` checks run later in vLLM (in the engine), which is why they are
kept on the job as ``deferred``: a 400 for a plain request, an error event after the
200 for a streamed one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shadowdiff.errors import RequestError
from shadowdiff.simulator import prompts, validation
from shadowdiff.simulator.bodies import Context
from shadowdiff.simulator.engine import Engine
from shadowdiff.simulator.faults import Fault
from shadowdiff.simulator.parsers import Asked, Parsers
from shadowdiff.simulator.sampling import Sampling
from shadowdiff.simulator.tools import Tool, ToolRequest


@dataclass(frozen=True)
class Prompt:
    """One prompt of a request (completions may carry several)."""

    text: str
    ids: tuple[int, ...]
    sampling: Sampling


@dataclass(frozen=True)
class Job:
    """A validated completion request, ready to run."""

    chat: bool
    ctx: Context
    prompts: tuple[Prompt, ...]
    stream: bool
    include_usage: bool
    continuous_usage: bool
    top_n: int                      # top logprobs listed per token (when logprobs are on)
    prompt_logprobs: int | None
    echo: bool
    echo_only: bool                 # completions echo with max_tokens 0: the prompt alone
    return_token_ids: bool
    deferred: RequestError | None   # an engine-level rejection (see module docstring)
    fault: Fault | None
    parsers: Parsers = field(default_factory=Parsers)   # chat: the server's parsers
    asked: Asked = field(default_factory=Asked)         # chat: what the request tells them

    @property
    def parsed(self) -> bool:
        """Whether the answer goes through the server's parsers (chat with a parser)."""
        return self.chat and self.parsers.active

    @property
    def prompt_tokens(self) -> int:
        return sum(len(p.ids) for p in self.prompts)

    @property
    def max_tokens(self) -> int:
        return max(p.sampling.max_tokens for p in self.prompts)


def _check_model(engine: Engine, model: str | None) -> str:
    names = engine.settings.served_model_names
    if model and model not in names:
        raise RequestError(
            f"The model `{model}` does not exist. Valid aliases: {', '.join(names)}.",
            status=404, kind="NotFoundError", param="model",
        )
    return engine.settings.model_name


def _logprob_limits(engine: Engine, sample: int | None, prompt: int | None) -> RequestError | None:
    settings = engine.settings
    vocab_size = engine.vocab.size
    if sample is not None:
        requested = vocab_size if sample == -1 else sample
        if not settings.logprobs_allowed(requested):
            return validation.vllm_error(
                f"Requested sample logprobs of {requested}, which is greater than max allowed: "
                f"{settings.max_logprobs}", "logprobs", requested)
    if prompt is not None:
        requested = vocab_size if prompt == -1 else prompt
        if not settings.logprobs_allowed(requested):
            return validation.vllm_error(
                f"Requested prompt logprobs of {requested}, which is greater than max allowed: "
                f"{settings.max_logprobs}", "prompt_logprobs", requested)
    return None


def _prompt_ids(engine: Engine, raw: Any) -> list[tuple[str, tuple[int, ...], bool]]:
    """Completions ``prompt`` forms as (text, ids, given_as_text) triples."""
    vocab = engine.vocab
    if isinstance(raw, str):
        items: list[str | list[int]] = [raw]
    elif raw and all(isinstance(x, int) for x in raw):
        items = [list(raw)]
    else:
        items = list(raw)
    if not items:
        raise validation.vllm_error("The decoder prompt cannot be empty")
    out = []
    for item in items:
        if not item:
            raise validation.vllm_error("The decoder prompt cannot be empty")
        if isinstance(item, str):
            out.append((_checked_text(item), tuple(vocab.ids(item)), True))
            continue
        bad = [t for t in item if t < 0 or t >= vocab.size]
        if bad:
            raise validation.vllm_error(f"Token id {bad[0]} is out of vocabulary", "prompt")
        out.append((vocab.decode(list(item), skip_special=False), tuple(item), False))
    return out


def _checked_text(text: str) -> str:
    """Reject text that cannot be encoded (a lone surrogate escape), as vLLM does (400)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RequestError(str(exc)) from None
    return text


def _length_checks(engine: Engine, ids: tuple[int, ...], as_text: bool,
                   name: str, requested: int | None) -> int:
    """``max_tokens`` after vLLM 0.34's length rules: reject, or clamp to M - P."""
    limit = engine.settings.max_model_len
    if requested is not None and requested > limit:
        raise validation.vllm_error(
            f"{name}={requested} cannot be greater than max_model_len={limit}. "
            "Please request fewer output tokens.", name, requested)
    if len(ids) > limit:
        # Text prompts are tokenized with truncation at M + 1, so vLLM can only say
        # "at least M + 1"; token-id prompts report their exact length.
        count = limit + 1 if as_text else len(ids)
        at_least = "at least " if count == limit + 1 else ""
        raise validation.vllm_error(
            f"This model's maximum context length is {limit} tokens. However, your prompt "
            f"contains {at_least}{count} input tokens, which exceeds this limit even without "
            "any output tokens. Please reduce the length of the input prompt.",
            "input_tokens", count)
    room = limit - len(ids)
    return room if requested is None else min(requested, room)


def _prompt_logprobs(requested: int | None, echoed: bool, top_n: int) -> int | None:
    if requested is None:
        # vLLM scores an echoed prompt with prompt_logprobs = logprobs
        return top_n if echoed else None
    # -1 means "the whole vocabulary"; the simulator lists at most 100 per position.
    return 100 if requested == -1 else requested


def _tool_request(req: validation.ChatRequest) -> ToolRequest | None:
    if not req.tools:
        return None
    choice = req.tool_choice
    named = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    kind = "named" if named is not None else "none" if choice is None else str(choice)
    answered = bool(req.messages) and req.messages[-1].role == "tool"
    return ToolRequest(tuple(Tool.of(t.model_dump()) for t in req.tools), kind, named,
                       req.parallel_tool_calls is not False, answered)


def _check_tool_choice(engine: Engine, req: validation.ChatRequest) -> None:
    """``OnlineRenderer.render_chat``: a tool choice needs a tool parser (a 400, no param)."""
    choice = req.tool_choice
    if engine.settings.parsers.tools is not None or choice is None or choice == "none":
        return
    if choice == "auto":
        raise RequestError('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                           "to be set")
    described = f'function "{choice["function"]["name"]}"' if isinstance(choice, dict) else f'"{choice}"'
    raise RequestError(f"tool_choice={described} requires --tool-call-parser to be set")


def _asked(req: validation.ChatRequest) -> Asked:
    choice = req.tool_choice
    kind = "named" if isinstance(choice, dict) else None if choice is None else str(choice)
    return Asked(tool_choice=kind, include_reasoning=req.include_reasoning, thinking=req.parser_thinking)


_Request = validation.ChatRequest | validation.CompletionRequest


def _request(chat: bool, headers: Mapping[str, str], body: bytes) -> _Request:
    """The body parsed, checked and validated (the first three of vLLM's steps)."""
    data = validation.parse_json(headers.get("content-type"), body)
    validation.check_raw(data, chat=chat)
    model_type: type[_Request] = validation.ChatRequest if chat else validation.CompletionRequest
    req = validation.validate(model_type, data)
    if isinstance(req, validation.ChatRequest):
        validation.check_tool_calls(req.messages)
    return req


@dataclass(frozen=True)
class _Input:
    """What a request's kind (chat or completions) decides before its sampling parameters."""

    prompts: list[tuple[str, tuple[int, ...], bool]]   # (text, ids, given_as_text) each
    sample_logprobs: int | None     # the logprobs asked for the answer's tokens, if any
    top_n: int                      # top logprobs listed per token
    tools: ToolRequest | None = None
    asked: Asked = field(default_factory=Asked)
    thinks: bool = False            # the model writes <think>…</think> first


def _chat_input(engine: Engine, req: validation.ChatRequest) -> _Input:
    """The chat template's prompt, and what the request asks of tools and reasoning."""
    settings = engine.settings
    _check_tool_choice(engine, req)
    tool_request, asked = _tool_request(req), _asked(req)
    # a reasoning model thinks unless its template was told not to
    thinks = settings.thinks and req.thinking and req.add_generation_prompt
    rendered = prompts.render_chat(
        [m.model_dump() for m in req.messages],
        add_generation_prompt=req.add_generation_prompt,
        continue_final_message=req.continue_final_message,
        tools=[t.model_dump(exclude_none=True) for t in req.tools] if req.tools else None,
        thinking=not settings.thinks or req.thinking,
    )
    raw_prompts = [(_checked_text(rendered), tuple(engine.vocab.ids(rendered)), True)]
    # vLLM reads top_logprobs: null as 0
    sample_logprobs = (req.top_logprobs or 0) if req.logprobs else None
    return _Input(raw_prompts, sample_logprobs, _listed(sample_logprobs or 0), tool_request, asked, thinks)


def _completion_input(engine: Engine, req: validation.CompletionRequest) -> _Input:
    return _Input(_prompt_ids(engine, req.prompt), req.logprobs, _listed(req.logprobs or 0))


def _listed(top_n: int) -> int:
    """The top logprobs listed per token: -1 asks for "the whole vocabulary", and the
    simulator lists at most 100."""
    return 100 if top_n == -1 else top_n


def _sampled_prompts(engine: Engine, req: _Request, given: _Input, name: str,
                     max_requested: int | None) -> tuple[Prompt, ...]:
    """Each prompt with its sampling parameters, checked as vLLM checks them, prompt by prompt
    (``name`` is the field that set ``max_requested``: max_tokens or max_completion_tokens)."""
    settings = engine.settings
    n = 1 if req.n is None else req.n
    temperature = settings.default_temperature if req.temperature is None else req.temperature
    response_format = (req.response_format or {}).get("type")
    built = []
    for text, ids, as_text in given.prompts:
        max_tokens = _length_checks(engine, ids, as_text, name, max_requested)
        validation.check_sampling(req, temperature=temperature, max_tokens=max_tokens)
        sampling = Sampling(
            prompt=text, prompt_ids=ids, max_tokens=max_tokens, n=n,
            temperature=temperature, top_k=req.top_k, seed=req.seed,
            stop=req.stop_strings(), stop_token_ids=tuple(req.stop_token_ids or ()),
            include_stop_str_in_output=req.include_stop_str_in_output,
            ignore_eos=req.ignore_eos, min_tokens=req.min_tokens,
            logprobs=max(given.top_n, 1) if given.sample_logprobs is not None else None,
            json_output=response_format in ("json_object", "json_schema"),
            thinking=given.thinks, tools=given.tools,
        )
        built.append(Prompt(text, ids, sampling))
    return tuple(built)


def _context(engine: Engine, req: _Request, *, chat: bool,
             headers: Mapping[str, str], model: str) -> Context:
    """The response's id (the X-Request-Id header, else the body's request_id), time and model."""
    request_id = headers.get("x-request-id")
    return Context.new("chatcmpl" if chat else "cmpl",
                       request_id if request_id is not None else req.request_id,
                       model, engine.settings.fingerprint)


def prepare(engine: Engine, *, chat: bool, headers: Mapping[str, str], body: bytes) -> Job:
    """Validate a completion request as vLLM would; raise RequestError if it is bad."""
    req = _request(chat, headers, body)
    model = _check_model(engine, req.model)
    given = _chat_input(engine, req) if isinstance(req, validation.ChatRequest) else _completion_input(engine, req)
    name, requested = req.requested_max_tokens
    echo = bool(req.echo) and not chat
    # completions echo with max_tokens 0 runs one step and returns the prompt alone
    echo_only = echo and requested == 0
    built = _sampled_prompts(engine, req, given, name, 1 if echo_only else requested)
    stream = bool(req.stream)
    options = req.stream_options
    include_usage = stream and options is not None and bool(options.include_usage)
    ctx = _context(engine, req, chat=chat, headers=headers, model=model)
    return Job(
        chat=chat, ctx=ctx, prompts=built, stream=stream,
        include_usage=include_usage,
        continuous_usage=include_usage and bool(options and options.continuous_usage_stats),
        top_n=given.top_n,
        prompt_logprobs=_prompt_logprobs(req.prompt_logprobs, echo and given.sample_logprobs is not None,
                                         given.top_n),
        echo=echo,
        echo_only=echo_only,
        return_token_ids=bool(req.return_token_ids),
        deferred=_logprob_limits(engine, given.sample_logprobs, req.prompt_logprobs),
        fault=engine.faults.draw(),
        parsers=engine.settings.parsers if chat else Parsers(),
        asked=given.asked,
    )

"""The oracle's ``rebuild_parsed``: a chat answer of a server with a reasoning or tool parser,
rebuilt from the tokens the simulator's model wrote by vLLM's own parsers (``qwen3``,
``deepseek_r1``, ``hermes``), driven as its chat serving code drives them.

The parsers need a tokenizer only to find their markers and decode ids; ``Tokenizer``
serves the simulator's tokens. Imported by ``oracle.py`` in the conformance environment,
after ``vllm_shim.install()``; never in the test process.
"""

from __future__ import annotations

import json
from typing import Any

from vllm.entrypoints.generate.base.protocol import DeltaMessage, ToolCall
from vllm.entrypoints.openai.chat_completion import protocol as chat
from vllm.entrypoints.serve.engine.protocol import CompletionTokenUsageInfo, UsageInfo
from vllm_bytes import chat_logprobs, json_response, sse_frames


class Tokenizer:
    """The simulator's tokens as a tokenizer, for the parsers: the ids the answer holds and
    the markers the parsers look up (``get_vocab``), decoded to the texts the simulator's
    engine produced for them."""

    def __init__(self, texts: dict[int, str], eos: int) -> None:
        self.texts, self.eos = texts, eos
        self.ids = {text: token_id for token_id, text in texts.items()}

    def get_vocab(self) -> dict[str, int]:
        return dict(self.ids)

    @property
    def vocab(self) -> dict[str, int]:
        return dict(self.ids)

    def decode(self, ids: Any, skip_special_tokens: bool = False, **_: Any) -> str:
        return "".join(self.texts[i] for i in ([ids] if isinstance(ids, int) else ids))

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        return self.ids.get(tokens) if isinstance(tokens, str) else [self.ids.get(t) for t in tokens]

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Any:
        return self.texts[ids] if isinstance(ids, int) else [self.texts[i] for i in ids]

    def encode(self, text: str, **_: Any) -> list[int]:
        token_id = self.ids.get(text)
        if token_id is None:
            raise KeyError(f"the oracle's tokenizer only knows whole tokens, not {text!r}")
        return [token_id]

    @property
    def all_special_tokens(self) -> list[str]:
        return [self.texts[self.eos]]

    @property
    def all_special_ids(self) -> list[int]:
        return [self.eos]

    @property
    def eos_token_id(self) -> int:
        return self.eos

    def __len__(self) -> int:
        return max(self.texts) + 1

    bos_token_id = pad_token_id = None
    is_fast = True
    name_or_path = "shadowdiff-simulator"


def _parser_class(server: dict[str, Any], tokenizer: Tokenizer) -> Any:
    """``OpenAIServingChat.__init__``: ``ParserManager.get_parser`` for the server's flags."""
    from vllm.parser.parser_manager import ParserManager
    return ParserManager.get_parser(tool_parser_name=server.get("tool_call_parser"),
                                    reasoning_parser_name=server.get("reasoning_parser") or "",
                                    enable_auto_tools=bool(server.get("enable_auto_tool_choice")),
                                    model_name="shadowdiff-simulator", tokenizer=tokenizer)


class _Sent:
    """Tool-call ids as the response under test sent them, handed out in the same order
    (vLLM draws them at random)."""

    def __init__(self, raw: str, stream: bool) -> None:
        self.ids: list[str] = []
        if stream:
            for frame in sse_frames(raw):
                data = frame.removeprefix("data: ")
                if data.startswith("{"):
                    for choice in json.loads(data).get("choices", ()):
                        self.ids += [c["id"] for c in choice["delta"].get("tool_calls", ()) if c.get("id")]
        else:
            for choice in json.loads(raw)["choices"]:
                self.ids += [c["id"] for c in choice["message"].get("tool_calls") or ()]
        self.ids.reverse()

    def take(self, problems: list[str]) -> str:
        if not self.ids:
            problems.append("fewer tool calls than vLLM's parser found")
            return "missing"
        return self.ids.pop()


def _detokenized(model: chat.ChatCompletionRequest, tokens: list[list[Any]], hidden: bool) -> list[str]:
    """The text vLLM's detokenizer hands the serving code at each step: its own
    ``BaseIncrementalDetokenizer`` (``v1/engine/detokenizer.py``) fed the simulator's token
    texts, so a stop string's hold-back (the last ``max(len(stop)) - 1`` characters wait
    for the next step) and its truncation shape the deltas as they do in vLLM. The last
    entry completes the answer's text (``finished``)."""
    from types import SimpleNamespace

    from vllm.v1.engine.detokenizer import BaseIncrementalDetokenizer

    texts = iter(text for _, text in tokens)

    class _Detokenizer(BaseIncrementalDetokenizer):
        def decode_next(self, next_token_id: int) -> str:
            return next(texts)

    params = SimpleNamespace(stop=model.stop, min_tokens=model.min_tokens,
                             include_stop_str_in_output=model.include_stop_str_in_output)
    detokenizer = _Detokenizer(SimpleNamespace(sampling_params=params))
    deltas = []
    for step, (token_id, _) in enumerate(tokens):
        last = step == len(tokens) - 1
        if last and hidden:
            next(texts)   # an end-of-sequence or stop token: its text is not in the answer
        detokenizer.update([token_id], stop_terminated=last and hidden)
        deltas.append(detokenizer.get_next_output_text(finished=last, delta=True))
    return deltas


def _logprobs_of(entries: list[dict[str, Any]] | None) -> chat.ChatCompletionLogProbs | None:
    return None if entries is None else chat_logprobs({"content": entries})


def rebuild_parsed(request: dict[str, Any], raw: str, server: dict[str, Any], choices: list[dict[str, Any]],
                   prompt_ids: list[int], eos: int, markers: dict[str, int]) -> dict[str, Any]:
    """vLLM's chat answer, through its parsers, for the tokens the simulator's model wrote.

    ``choices``: for each choice, ``tokens`` ([id, text] as the engine emitted them),
    ``hidden`` (the last is the end of sequence or a stop token, whose text is not in the
    answer), ``finish_reason`` and ``stop_reason`` as the engine ended it, and
    ``logprobs`` (one entry a token, or None). ``markers``: special tokens' ids by text."""
    from vllm.entrypoints.openai.chat_completion.message_assembly import assemble_chat_message_fields
    from vllm.entrypoints.serve.utils.tool_calls_utils import resolve_finish_reason

    texts = {token_id: text for c in choices for token_id, text in c["tokens"]}
    texts.update({token_id: text for text, token_id in markers.items()})
    tokenizer = Tokenizer(texts, eos)
    parser_cls = _parser_class(server, tokenizer)
    enable_auto = bool(server.get("enable_auto_tool_choice"))
    model = chat.ChatCompletionRequest.model_validate(request)
    kwargs = model.build_chat_params(None, "auto", None).chat_template_kwargs
    problems: list[str] = []

    def make_parser() -> Any:
        return parser_cls(tokenizer, model.tools, chat_template_kwargs=kwargs, model_config=None)

    sent = _Sent(raw, bool(request.get("stream")))
    if not request.get("stream"):
        body = json.loads(raw)
        built = []
        total_reasoning = 0
        for index, c in enumerate(choices):
            ids = [token_id for token_id, _ in c["tokens"]]
            text = "".join(_detokenized(model, c["tokens"], c["hidden"]))
            parser = make_parser()
            parser.set_prompt_token_ids(prompt_ids)
            reasoning, content, tool_calls = parser.parse(text, model, enable_auto_tools=enable_auto,
                                                          model_output_token_ids=ids)
            suppress = not model.include_reasoning
            total_reasoning += parser.count_reasoning_tokens(ids)
            fields = assemble_chat_message_fields(model, reasoning, content, tool_calls,
                                                  enable_auto_tools=enable_auto, parser_cls=parser_cls)
            calls = [ToolCall(id=sent.take(problems), function=call.function) for call in fields.tool_calls]
            message = chat.ChatMessage(role="assistant", reasoning=fields.reasoning, content=fields.content,
                                       tool_calls=calls)
            theirs = body["choices"][index]
            built.append(chat.ChatCompletionResponseChoice(
                index=index, message=message,
                logprobs=None if suppress or not model.logprobs else _logprobs_of(c["logprobs"]),
                finish_reason=resolve_finish_reason(c["finish_reason"], model, bool(message.tool_calls)),
                stop_reason=c["stop_reason"],
                token_ids=ids if model.return_token_ids and not suppress else None,
                routed_experts=None, weight_versions=None))
            if theirs.get("token_ids") not in (None, ids):
                problems.append(f"choice {index}: token_ids are not the tokens generated")
        prompt_tokens = body["usage"]["prompt_tokens"]
        completion_tokens = sum(len(c["tokens"]) for c in choices)
        usage = UsageInfo(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          total_tokens=prompt_tokens + completion_tokens,
                          completion_tokens_details=CompletionTokenUsageInfo(reasoning_tokens=total_reasoning)
                          if server.get("reasoning_parser") else None)
        response = chat.ChatCompletionResponse(
            id=body["id"], created=body["created"], model=body["model"], choices=built, usage=usage,
            system_fingerprint=body["system_fingerprint"], prompt_logprobs=body.get("prompt_logprobs"),
            prompt_token_ids=prompt_ids if model.return_token_ids else None, prompt_text=None,
            kv_transfer_params=None, ec_transfer_params=None, metrics=None)
        return {"raw": json_response(response), "problems": problems}
    return {"raw": _parsed_stream(model, raw, server, choices, prompt_ids, make_parser, parser_cls, sent, problems),
            "problems": problems}


def _parsed_stream(model: chat.ChatCompletionRequest, raw: str, server: dict[str, Any], choices: list[dict[str, Any]],
                   prompt_ids: list[int], make_parser: Any, parser_cls: Any, sent: _Sent, problems: list[str]) -> str:
    """``chat_completion_stream_generator_raw`` with the server's parser, one token a step,
    the choices' steps interleaved as the simulator's engine runs them."""
    from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
    from vllm.entrypoints.serve.utils.api_utils import should_include_usage

    first = json.loads(sse_frames(raw)[0].removeprefix("data: "))
    head = {"id": first["id"], "object": "chat.completion.chunk", "created": first["created"], "model": first["model"]}
    fingerprint = next((json.loads(f.removeprefix("data: ")).get("system_fingerprint")
                        for f in sse_frames(raw) if f.startswith("data: {") and "system_fingerprint" in f), None)
    include_usage, continuous = should_include_usage(model.stream_options, False)
    details = bool(server.get("reasoning_parser"))
    enable_auto = bool(server.get("enable_auto_tool_choice"))
    processors = [ChatStreamProcessor(model, make_parser(), enable_auto_tools=enable_auto, parser_cls=parser_cls)
                  for _ in choices]
    texts = [_detokenized(model, c["tokens"], c["hidden"]) for c in choices]
    generated: list[list[int]] = [[] for _ in choices]
    reasoning = [0] * len(choices)
    prompt_tokens = len(prompt_ids)
    out = []
    for index in range(len(choices)):
        chunk = chat.ChatCompletionStreamResponse(
            **head, choices=[chat.ChatCompletionResponseStreamChoice(
                index=index, delta=DeltaMessage(role="assistant", content=""), logprobs=None, finish_reason=None)],
            prompt_token_ids=prompt_ids if model.return_token_ids else None, prompt_text=None)
        if continuous:
            chunk.usage = UsageInfo(prompt_tokens=prompt_tokens, completion_tokens=0, total_tokens=prompt_tokens,
                                    completion_tokens_details=CompletionTokenUsageInfo(reasoning_tokens=0)
                                    if details else None, prompt_tokens_details=None)
        out.append(chunk.model_dump_json(exclude_unset=True, exclude_none=False))
    for step in range(max(len(c["tokens"]) for c in choices)):
        for index, c in enumerate(choices):
            if step >= len(c["tokens"]):
                continue
            token_id = c["tokens"][step][0]
            last = step == len(c["tokens"]) - 1
            processor = processors[index]
            logprobs = _logprobs_of(c["logprobs"][step: step + 1]) if model.logprobs else None
            delta, finish_reason = processor.step(texts[index][step], [token_id],
                                                  c["finish_reason"] if last else None, prompt_ids)
            generated[index].append(token_id)
            if details and continuous:
                reasoning[index] = processor.parser.count_reasoning_tokens(tuple(generated[index]))
            if processor.hide_metadata:
                logprobs = None
            if delta is None:
                if not last and logprobs is None and (not model.return_token_ids or processor.hide_metadata):
                    continue
                delta = DeltaMessage()
            for call in delta.tool_calls:
                if call.id is not None:
                    call.id = sent.take(problems)
            token_ids = [token_id] if model.return_token_ids and not processor.hide_metadata else None
            if not last:
                choice = chat.ChatCompletionResponseStreamChoice(index=index, delta=delta, logprobs=logprobs,
                                                                 finish_reason=None, token_ids=token_ids)
            else:
                choice = chat.ChatCompletionResponseStreamChoice(index=index, delta=delta, logprobs=logprobs,
                                                                 finish_reason=finish_reason,
                                                                 stop_reason=c["stop_reason"], token_ids=token_ids,
                                                                 weight_versions=None)
            chunk = chat.ChatCompletionStreamResponse(**head, choices=[choice], kv_transfer_params=None)
            if not include_usage and fingerprint is not None and last:
                chunk.system_fingerprint = fingerprint
            if continuous:
                done = processor.num_output_tokens
                chunk.usage = UsageInfo(prompt_tokens=prompt_tokens, completion_tokens=done,
                                        total_tokens=prompt_tokens + done,
                                        completion_tokens_details=CompletionTokenUsageInfo(
                                            reasoning_tokens=reasoning[index]) if details else None)
            out.append(chunk.model_dump_json(exclude_unset=True, exclude_none=False))
    if details and not continuous:
        reasoning = [p.parser.count_reasoning_tokens(tuple(ids)) if ids else 0
                     for p, ids in zip(processors, generated, strict=True)]
    if include_usage:
        completion_tokens = sum(p.num_output_tokens for p in processors)
        usage = UsageInfo(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          total_tokens=prompt_tokens + completion_tokens,
                          completion_tokens_details=CompletionTokenUsageInfo(reasoning_tokens=sum(reasoning))
                          if details else None)
        usage.prompt_tokens_details = None
        final = chat.ChatCompletionStreamResponse(**head, choices=[], usage=usage, system_fingerprint=fingerprint,
                                                  metrics=None)
        out.append(final.model_dump_json(exclude_unset=True, exclude_none=True))
    if sent.ids:
        problems.append("more tool calls than vLLM's parser found")
    return "".join(f"data: {frame}\n\n" for frame in out) + "data: [DONE]\n\n"

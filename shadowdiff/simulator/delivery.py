"""Running a ``Job`` and writing its response, streamed or not, faults included.

This is raw ASGI rather than a Starlette response class because the simulator must
control every write: chunk boundaries, a pause in the middle of a UTF-8 character,
a connection dropped mid-body. A client that disconnects cancels the job (as vLLM
aborts the request), which frees its places in the running batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import anyio
from starlette.types import Message, Receive, Send

from shadowdiff.simulator import bodies, logprobs, parsers, streaming
from shadowdiff.simulator.engine import Engine
from shadowdiff.simulator.faults import Fault
from shadowdiff.simulator.intake import Job, Prompt
from shadowdiff.simulator.sampling import Choice
from shadowdiff.simulator.scheduler import Pacer

_SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]
_EARLY = {
    500: ("InternalServerError", "Simulated engine failure (shadowdiff simulate --fault error_500)."),
    503: ("ServiceUnavailableError", "Simulated engine overload (shadowdiff simulate --fault error_503)."),
    429: ("RateLimitError", "Too many requests (shadowdiff simulate --fault error_429)."),
}


class ClientGone(Exception):
    """The client went away (or a simulated reset dropped it); the job is over."""


def _json_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    """A JSON body's headers, in the order Starlette's ``JSONResponse`` (vLLM's) writes them."""
    return [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]


async def send_json(send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = bodies.dumps(body).encode()
    # Starlette writes a response's own headers first, then the length and type
    await send({"type": "http.response.start", "status": status, "headers": [*(headers or []), *_json_headers(data)]})
    await send({"type": "http.response.body", "body": data})


def _split_point(data: bytes) -> int | None:
    """An offset inside the first multi-byte UTF-8 character of ``data``."""
    for i, byte in enumerate(data):
        if byte >= 0xC0:
            return i + 1
    return None


class _Run:
    """One job in flight: scheduling, generation, frames, faults, metrics."""

    def __init__(self, engine: Engine, job: Job, send: Send) -> None:
        self.engine, self.job, self._send = engine, job, send
        self.faults = engine.settings.faults
        self.buffer = bytearray()
        self.split_done = False
        self.started = time.monotonic()
        self.queued = self.prefill = 0.0
        self.kv = 0
        self.generated = 0          # tokens produced so far (for an aborted request's metrics)
        self.outcome = "abort"      # finished_reason recorded if nothing better is known

    async def send(self, message: Message) -> None:
        try:
            await self._send(message)
        except OSError as exc:  # uvicorn raises ClientDisconnected (an OSError)
            raise ClientGone from exc

    # -- what both modes share ---------------------------------------------------------

    async def _generate(self, pacer: Pacer) -> list[Choice]:
        """Prefill, then the choices of every prompt, indexed as vLLM indexes them."""
        admitted = time.monotonic()
        self.queued = admitted - self.started
        pacer.schedule_prefill(self.job.prompt_tokens)
        await self._wait(pacer)
        self.prefill = time.monotonic() - admitted
        choices: list[Choice] = []
        for p_index, prompt in enumerate(self.job.prompts):
            self.engine.prefix_lookup(prompt.text, len(prompt.ids))
            for c in self.engine.generator.generate(prompt.sampling):
                choices.append(Choice(p_index * prompt.sampling.n + c.index, c.tokens, c.finish_reason,
                                      c.stop_reason, c.hidden_id, c.positions))
        self.kv = self.job.prompt_tokens
        self.engine.kv_tokens += self.kv
        return choices

    def _step(self, pacer: Pacer, active: int) -> None:
        if self.job.fault is Fault.SLOW:
            pacer.schedule(self.faults.slow_seconds)
        else:
            pacer.schedule_token()
        self.kv += active
        self.engine.kv_tokens += active
        self.generated += active

    def record(self) -> None:
        self.engine.kv_tokens -= self.kv
        self.kv = 0
        decode = max(time.monotonic() - self.started - self.queued - self.prefill, 0.0)
        self.engine.metrics.finished(
            reason=self.outcome, prompt_tokens=self.job.prompt_tokens, generation_tokens=self.generated,
            max_tokens=self.job.max_tokens, queued=self.queued, prefill=self.prefill, decode=decode)

    async def _early_fault(self) -> bool:
        """Faults that strike before the first byte; True if one answered the request."""
        fault = self.job.fault
        if fault is Fault.HANG:
            # Stuck before sending anything, holding its places in the batch.
            try:
                async with self.engine.scheduler.admitted(self._seqs()):
                    await asyncio.sleep(self.faults.hang_seconds)
            except asyncio.CancelledError:
                self.record()   # the client gave up: counted as an aborted request, as vLLM does
                raise
        if fault is None or fault.status is None:
            return False
        kind, message = _EARLY[fault.status]
        headers = [(b"retry-after", str(self.faults.retry_after).encode())] if fault.status == 429 else []
        await send_json(self.send, fault.status, bodies.error_body(message, kind, fault.status), headers)
        return True

    def _seqs(self) -> int:
        return sum(p.sampling.n for p in self.job.prompts)

    # -- not streamed ------------------------------------------------------------------

    async def plain(self) -> None:
        if await self._early_fault():
            return
        job = self.job
        if job.deferred is not None:
            err = job.deferred
            await send_json(self.send, err.status, bodies.error_body(err.message, err.kind, err.status, err.param))
            return
        try:
            async with self.engine.scheduler.admitted(self._seqs()):
                pacer = self.engine.scheduler.pacer()
                choices = await self._generate(pacer)
                self.generated = len(choices)
                for step in range(1, max(c.completion_tokens for c in choices)):
                    self._step(pacer, sum(1 for c in choices if step < c.completion_tokens))
                    await pacer.wait()
            if job.fault is Fault.ERROR_FRAME:
                self.outcome = "error"
                await send_json(self.send, 500, bodies.error_body(
                    "Simulated engine failure during generation.", "InternalServerError", 500))
                return
            self.outcome = choices[0].finish_reason
        finally:
            self.record()
        await self._send_body(bodies.dumps(self._body(choices)).encode())

    def _body(self, choices: list[Choice]) -> dict[str, Any]:
        job = self.job
        first = job.prompts[0]
        if job.chat:
            prompt_lp = self._prompt_logprobs(first)
            answers = [self._chat_choice(choice) for choice in choices]
            reasoning = (sum(parsers.reasoning_tokens(job.parsers, job.asked, c.token_ids) for c in choices)
                         if job.parsed and job.parsers.reasoning else None)
            return bodies.chat_body(job.ctx, answers, job.prompt_tokens, top_logprobs=job.top_n,
                                       prompt_logprobs=prompt_lp,
                                       token_ids=first.ids if job.return_token_ids else None,
                                       reasoning_tokens=reasoning)
        out = []
        for choice in choices:
            prompt = self._prompt_of(choice)
            out.append(bodies.CompletionChoice(
                choice.index, choice, prompt.text if job.echo else "", self._completion_logprobs(choice, prompt),
                self._prompt_logprobs(prompt), prompt.ids if job.return_token_ids else None,
                echo_only=job.echo_only))
        return bodies.completion_body(job.ctx, out, job.prompt_tokens)

    def _chat_choice(self, choice: Choice) -> bodies.ChatChoice:
        """The choice's message as the server's parsers make it (chat_completion_full_generator)."""
        job = self.job
        if not job.parsed:
            return bodies.ChatChoice(choice, choice.text)
        found = parsers.parse(job.parsers, job.asked, choice.text, choice.token_ids)
        calls = tuple((parsers.tool_call_id(), name, arguments) for name, arguments in found.tool_calls)
        return bodies.ChatChoice(choice, found.content, found.reasoning, calls,
                                    parsers.finish_reason(choice.finish_reason, job.asked, bool(calls)),
                                    hide_metadata=not job.asked.include_reasoning)

    def _prompt_of(self, choice: Choice) -> Prompt:
        return self.job.prompts[choice.index // self.job.prompts[0].sampling.n]

    def _prompt_logprobs(self, prompt: Prompt) -> list[Any] | None:
        count = self.job.prompt_logprobs
        if count is None:
            return None
        positions = self.engine.scorer.positions(prompt.text, prompt.ids, count)
        return logprobs.prompt_logprobs(positions, prompt.ids, self.engine.vocab)

    def _echo_positions(self, prompt: Prompt) -> tuple[list[logprobs.Position | None], list[str]]:
        """Logprobs of the echoed prompt: vLLM scores it with prompt_logprobs."""
        vocab = self.engine.vocab
        texts = [vocab.decode([i], skip_special=False) for i in prompt.ids]
        return self.engine.scorer.positions(prompt.text, prompt.ids, self.job.top_n), texts

    def _completion_logprobs(self, choice: Choice, prompt: Prompt) -> dict[str, Any] | None:
        if choice.positions is None:
            return None
        positions: list[logprobs.Position | None] = list(choice.positions)
        texts = [p.token for p in choice.positions]
        if self.job.echo:
            echo_positions, echo_texts = self._echo_positions(prompt)
            positions, texts = ([*echo_positions], [*echo_texts]) if self.job.echo_only else (
                [*echo_positions, *positions], [*echo_texts, *texts])
        return logprobs.completion_logprobs(positions, texts, self.job.top_n)

    async def _send_body(self, body: bytes) -> None:
        fault = self.job.fault
        if fault is Fault.MALFORMED:
            body = body[: len(body) // 2]
        await self.send({"type": "http.response.start", "status": 200, "headers": _json_headers(body)})
        if fault is Fault.RESET:
            await self.send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
            raise ClientGone("simulated connection reset")
        at = _split_point(body) if fault is Fault.SPLIT_UTF8 else None
        if at is not None:
            await self.send({"type": "http.response.body", "body": body[:at], "more_body": True})
            await asyncio.sleep(self.faults.split_pause)
            body = body[at:]
        await self.send({"type": "http.response.body", "body": body})

    # -- streamed ----------------------------------------------------------------------

    async def stream(self) -> None:
        if await self._early_fault():
            return
        job = self.job
        await self.send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        if job.deferred is not None:
            err = job.deferred
            await self.write(streaming.error_frame(err.message, code=err.status, kind=err.kind,
                                                   param=err.param, compact=job.chat))
            await self.write(streaming.DONE)
            await self.finish()
            return
        try:
            async with self.engine.scheduler.admitted(self._seqs()):
                pacer = self.engine.scheduler.pacer()
                choices = await self._generate(pacer)
                ended_early = await self._frames(choices, pacer)
            self.outcome = "error" if ended_early else choices[0].finish_reason
        finally:
            self.record()
        await self.finish()

    async def _wait(self, pacer: Pacer) -> None:
        """Wait for the pacer, sending ``: keep-alive`` comments if vLLM would."""
        interval = self.engine.settings.sse_keep_alive_interval
        while self.job.stream and interval > 0 and pacer.pending() > interval:
            await asyncio.sleep(interval)
            await self.write(streaming.KEEP_ALIVE)
            await self.flush()
        await pacer.wait()

    async def _frames(self, choices: list[Choice], pacer: Pacer) -> bool:
        """Write every frame; True if a fault ended the stream early."""
        job = self.job
        chunks = (streaming.ChatChunks if job.chat else streaming.CompletionChunks)(
            job.ctx, job.continuous_usage, job.include_usage, reasoning=job.parsed and bool(job.parsers.reasoning))
        writers = [_ChoiceWriter(choice, self._prompt_of(choice), self) for choice in choices]
        for writer in writers:
            await self.write(chunks.role(writer.choice.index, len(writer.prompt.ids), writer.prompt_ids))
        frames = sum(w.steps for w in writers)
        # A mid-stream fault strikes after --fault-after-tokens frames, or before the
        # last frame of a shorter answer, so that a rate of 1 always fires.
        strike = min(self.faults.after_tokens, max(frames - 1, 0))
        emitted = 0
        for step in range(max(w.steps for w in writers)):
            await self._advance(pacer, writers, step)
            for delta in _deltas(writers, step):
                if emitted == strike and await self._mid_stream_fault():
                    return True
                await self.write(chunks.delta(delta))
                emitted += 1
        await self._close(chunks, writers)
        return False

    async def _close(self, chunks: streaming.ChatChunks, writers: list[_ChoiceWriter]) -> None:
        """The usage frame (with include_usage), then ``[DONE]``."""
        if self.job.include_usage:
            reasoning = sum(w.reasoning_tokens() for w in writers) if chunks.reasoning else None
            completion_tokens = sum(w.choice.completion_tokens for w in writers)
            await self.write(chunks.usage(self.job.prompt_tokens, completion_tokens, reasoning))
        await self.write(streaming.DONE)

    async def _advance(self, pacer: Pacer, writers: list[_ChoiceWriter], step: int) -> None:
        """Generate the step's tokens (the first came with the prefill), flushing what is
        written before waiting for them."""
        if not step:
            self.generated = len(writers)
            return
        self._step(pacer, sum(1 for w in writers if step < w.steps))
        if pacer.pending() > 0.0005:
            await self.flush()
            await self._wait(pacer)

    async def _mid_stream_fault(self) -> bool:
        fault = self.job.fault
        if fault is Fault.RESET:
            await self.flush()
            raise ClientGone("simulated connection reset")
        if fault is Fault.ERROR_FRAME:
            await self.write(streaming.error_frame(
                "Simulated engine failure during generation.", compact=self.job.chat))
            await self.write(streaming.DONE)
            return True
        if fault is Fault.MALFORMED:
            await self.write(b'data: {"id":"' + self.job.ctx.id.encode() + b'","object":"chat.comp\n\n')
        return False

    async def write(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > 65536:
            await self.flush()

    async def flush(self) -> None:
        if not self.buffer:
            return
        data = bytes(self.buffer)
        self.buffer.clear()
        if self.job.fault is Fault.SPLIT_UTF8 and not self.split_done:
            at = _split_point(data)
            if at is not None:
                self.split_done = True
                await self.send({"type": "http.response.body", "body": data[:at], "more_body": True})
                await asyncio.sleep(self.faults.split_pause)
                data = data[at:]
        await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def finish(self) -> None:
        await self.flush()
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})


class _ChoiceWriter:
    """The deltas of one choice: its tokens, held back around stop strings as vLLM does."""

    def __init__(self, choice: Choice, prompt: Prompt, run: _Run) -> None:
        self.choice = choice
        self.prompt = prompt
        self.job = run.job
        self.steps = max(choice.completion_tokens, 1)
        sampling = prompt.sampling
        # vLLM holds back the last max(len(stop)) - 1 characters while streaming.
        self.hold = (max(map(len, sampling.stop)) - 1) if sampling.stop and not sampling.include_stop_str_in_output \
            else 0
        self.text = choice.text
        self.sent = 0
        self.upto = 0
        self.offset = 0
        self.first = True
        # A streamed completion's first chunk carries the prompt's ids with echo, or with
        # return_token_ids (vLLM 0.34, completion_stream_generator: has_echoed).
        self.prompt_ids = list(prompt.ids) if self.job.return_token_ids or self.job.echo else None
        self.echo_positions: tuple[list[logprobs.Position | None], list[str]] | None = None
        if self.job.echo:
            self.echo_positions = run._echo_positions(prompt) if choice.positions is not None else None
        # chat with a reasoning or tool parser: the deltas are the parser's
        self.parser = parsers.StreamParser(self.job.parsers, self.job.asked, prompt.ids) if self.job.parsed else None

    def reasoning_tokens(self, upto: int | None = None) -> int:
        if self.parser is not None and self.parser.reasoning_tokens is not None:
            return self.parser.reasoning_tokens   # what qwen3's engine counted, streaming
        return parsers.reasoning_tokens(self.job.parsers, self.job.asked, self.choice.token_ids[:upto])

    def delta(self, step: int) -> streaming.Delta | None:
        """The frame of one step, or None where vLLM sends none."""
        choice = self.choice
        last = step == self.steps - 1
        text = self._release(step, last)
        positions, texts = self._positions(step)
        ids = self._token_ids(step)
        prompt_ids = None
        if self.first:
            self.first = False
            text, positions, texts = self._echoed(text, positions, texts)
            prompt_ids = None if self.job.chat else self.prompt_ids
        lp = self._logprobs(positions, texts)
        message = None
        if self.parser is not None:
            message = self.parser.step(text, self._token_id(step), finished=last)
            if self.parser.hide_metadata:
                lp = ids = None
            if message is None:
                # ChatStreamProcessor sent nothing: the frame goes out only to carry a
                # finish, logprobs or token ids, with an empty delta
                if not last and lp is None and ids is None:
                    return None
                message = {}
        return streaming.Delta(
            index=choice.index, text=text, completion_tokens=step + 1, prompt_tokens=len(self.prompt.ids),
            logprobs=lp, token_ids=ids, prompt_token_ids=prompt_ids,
            finish_reason=self._finish_reason(last),
            stop_reason=choice.stop_reason if last else None, final=last,
            empty=last and choice.completion_tokens == 0, message=message,
            reasoning_tokens=self._usage_reasoning(step))

    def _release(self, step: int, last: bool) -> str:
        """The text this step sends: all that is left at the end, else what the stop-string
        hold-back lets through."""
        if step < len(self.choice.tokens):
            self.upto += len(self.choice.tokens[step].text)
        allowed = len(self.text) if last else max(self.sent, min(self.upto - self.hold, len(self.text)))
        text = self.text[self.sent:allowed]
        self.sent = allowed
        return text

    def _positions(self, step: int) -> tuple[list[logprobs.Position | None], list[str]]:
        """This step's logprob position and token text, if the choice has logprobs there."""
        positions = self.choice.positions
        if positions is not None and step < len(positions):
            return [positions[step]], [positions[step].token]
        return [], []

    def _echoed(self, text: str, positions: list[logprobs.Position | None],
                texts: list[str]) -> tuple[str, list[logprobs.Position | None], list[str]]:
        """The first frame with the echoed prompt (completions with echo) before its text
        and logprobs."""
        if not self.job.echo:
            return text, positions, texts
        text = self.prompt.text + ("" if self.job.echo_only else text)
        if self.echo_positions is not None:
            echo_pos, echo_texts = self.echo_positions
            positions, texts = [*echo_pos, *positions], [*echo_texts, *texts]
        return text, positions, texts

    def _logprobs(self, positions: list[logprobs.Position | None], texts: list[str]) -> dict[str, Any] | None:
        """The frame's logprobs: chat's content list, or completions' arrays (text offsets
        counted across frames)."""
        if self.choice.positions is None:
            return None
        if self.job.chat:
            return logprobs.chat_content([p for p in positions if p is not None], self.job.top_n)
        lp = logprobs.completion_logprobs(positions, texts, self.job.top_n, self.offset)
        self.offset += sum(len(t) for t in texts)
        return lp

    def _token_id(self, step: int) -> int:
        """The step's token id; -1 for a step past the last token (an empty answer's)."""
        return self.choice.token_ids[step] if step < len(self.choice.token_ids) else -1

    def _token_ids(self, step: int) -> list[int] | None:
        """The frame's ``token_ids``, with return_token_ids."""
        if self.job.return_token_ids and step < len(self.choice.token_ids):
            return [self.choice.token_ids[step]]
        return None

    def _usage_reasoning(self, step: int) -> int | None:
        """The reasoning tokens so far, for continuous usage with a reasoning parser."""
        job = self.job
        if job.continuous_usage and job.parsers.reasoning and job.parsed:
            return self.reasoning_tokens(step + 1)
        return None

    def _finish_reason(self, last: bool) -> str | None:
        """Set on the last frame only; the parser's when there is one (tool calls)."""
        if not last:
            return None
        if self.parser is not None:
            return self.parser.finish_reason(self.choice.finish_reason)
        return self.choice.finish_reason


def _deltas(writers: list[_ChoiceWriter], step: int) -> Iterator[streaming.Delta]:
    """The step's frames, choice by choice, made as they are written: none from a choice
    that has ended, nor for a token vLLM's parser sends nothing for."""
    for writer in writers:
        if step < writer.steps and (delta := writer.delta(step)) is not None:
            yield delta


async def respond(engine: Engine, job: Job, receive: Receive, send: Send) -> None:
    """Run ``job``; stop it if the client disconnects first."""
    run = _Run(engine, job, send)

    async with anyio.create_task_group() as group:
        async def work() -> None:
            with contextlib.suppress(ClientGone):
                await (run.stream() if job.stream else run.plain())
            group.cancel_scope.cancel()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(work)
        group.start_soon(watch)

"""Running a ``Job`` and writing its response, streamed or not, faults included.

This is raw ASGI rather than a Starlette response class because the simulator must
control every write: chunk boundaries, a pause in the middle of a UTF-8 character,
a connection dropped mid-body. A client that disconnects cancels the job (as vLLM
aborts the request), which frees its place in the running batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.types import Message, Receive, Send

from simulator import logprobs, responses, streaming
from simulator.engine import Engine
from simulator.faults import Fault
from simulator.generation import Choice
from simulator.scheduler import Pacer
from simulator.serving import Job
from simulator.textgen import prompt_key as _key

_SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]


class ClientGone(Exception):
    """The client went away; the job is aborted."""


async def send_json(send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = responses.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        *(headers or [])]})
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
        self.settings = engine.settings
        self.faults = engine.settings.faults
        self.buffer = bytearray()
        self.split_done = False
        self.started = time.monotonic()
        self.queued = self.prefill = 0.0
        self.kv = 0

    async def send(self, message: Message) -> None:
        try:
            await self._send(message)
        except OSError as exc:  # uvicorn raises ClientDisconnected (an OSError)
            raise ClientGone from exc

    # -- the part both modes share ---------------------------------------------------

    async def _prefill(self, pacer: Pacer, wait: Callable[[Pacer], Awaitable[None]]) -> list[Choice]:
        admitted = time.monotonic()
        self.queued = admitted - self.started
        pacer.schedule_prefill(self.job.prompt_tokens)
        await wait(pacer)
        self.prefill = time.monotonic() - admitted
        choices: list[Choice] = []
        for p_index, prompt in enumerate(self.job.prompts):
            self.engine.prefix_lookup(prompt.text, len(prompt.ids))
            for choice in self.engine.generator.generate(prompt.sampling):
                choices.append(Choice(p_index * prompt.sampling.n + choice.index, choice.tokens,
                                      choice.finish_reason, choice.stop_reason,
                                      choice.hidden_tokens, choice.positions))
        self.kv = self.job.prompt_tokens
        self.engine.kv_tokens += self.kv
        return choices

    def _step_delay(self, pacer: Pacer) -> None:
        if self.job.fault is Fault.SLOW:
            pacer.schedule(self.faults.slow_seconds)
        else:
            pacer.schedule_token()

    def _grow_kv(self, tokens: int) -> None:
        self.kv += tokens
        self.engine.kv_tokens += tokens

    def record(self, choices: list[Choice] | None) -> None:
        self.engine.kv_tokens -= self.kv
        self.kv = 0
        decode = max(time.monotonic() - self.started - self.queued - self.prefill, 0.0)
        generated = sum(c.completion_tokens for c in choices) if choices else 0
        self.engine.metrics.finished(
            reason=choices[0].finish_reason if choices else "abort",
            prompt_tokens=self.job.prompt_tokens, generation_tokens=generated,
            max_tokens=self.job.max_tokens, queued=self.queued, prefill=self.prefill, decode=decode)

    async def _early_fault(self) -> bool:
        """Faults that strike before anything is generated; True if one answered."""
        fault = self.job.fault
        if fault is Fault.HANG:
            await asyncio.sleep(self.faults.hang_seconds)
        if fault is not None and fault.status is not None:
            headers = [(b"retry-after", str(self.faults.retry_after).encode())] if fault.status == 429 else []
            kind, message = {
                500: ("InternalServerError", "Simulated engine failure (shadowdiff simulate --fault error_500)."),
                503: ("ServiceUnavailableError", "Simulated engine overload (shadowdiff simulate --fault error_503)."),
                429: ("RateLimitError", "Too many requests (shadowdiff simulate --fault error_429)."),
            }[fault.status]
            await send_json(self.send, fault.status, responses.error_body(message, kind, fault.status), headers)
            return True
        return False

    # -- not streamed ----------------------------------------------------------------

    async def plain(self) -> None:
        if await self._early_fault():
            return
        job = self.job
        if job.deferred is not None:
            err = job.deferred
            await send_json(self.send, err.status, responses.error_body(err.message, err.kind, err.status, err.param))
            return
        if job.fault is Fault.ERROR_FRAME:
            await send_json(self.send, 500, responses.error_body(
                "Simulated engine failure during generation.", "InternalServerError", 500))
            return
        choices: list[Choice] | None = None
        try:
            async with self.engine.scheduler.admitted():
                pacer = self.engine.scheduler.pacer()
                choices = await self._prefill(pacer, _sleep)
                for _ in range(max(c.completion_tokens for c in choices) - 1):
                    self._step_delay(pacer)
                    await pacer.wait()
                    self._grow_kv(len(choices))
        finally:
            self.record(choices)
        await self._send_body(responses.dumps(self._body(choices)).encode())

    def _body(self, choices: list[Choice]) -> dict[str, Any]:
        job = self.job
        first = job.prompts[0]
        ids = first.ids if job.return_token_ids else None
        if job.chat:
            prompt_lp = (logprobs.prompt_logprobs(_key(first.text), first.ids, job.prompt_logprobs,
                                                  self.engine.vocab)
                         if job.prompt_logprobs is not None else None)
            return responses.chat_body(job.ctx, choices, job.prompt_tokens, top_logprobs=job.top_n,
                                       prompt_logprobs=prompt_lp, token_ids=ids)
        out = []
        for choice in choices:
            prompt = job.prompts[choice.index // prompt_n(job)]
            echo = prompt.text if job.echo else ""
            out.append(responses.CompletionChoice(
                choice.index, choice, echo, self._completion_logprobs(choice, prompt.text, prompt.ids),
                logprobs.prompt_logprobs(_key(prompt.text), prompt.ids, job.prompt_logprobs, self.engine.vocab)
                if job.prompt_logprobs is not None else None,
                prompt.ids if job.return_token_ids else None))
        return responses.completion_body(job.ctx, out, job.prompt_tokens)

    def _completion_logprobs(self, choice: Choice, prompt: str, ids: tuple[int, ...]) -> dict[str, Any] | None:
        if choice.positions is None:
            return None
        positions: list[logprobs.Position | None] = list(choice.positions)
        texts = [t.text for t in choice.tokens]
        if self.job.echo:
            vocab = self.engine.vocab
            prompt_texts = [vocab.decode([i], skip_special=False) for i in ids]
            key = _key(prompt) ^ 0x5BD1E995
            positions = [None, *(logprobs.position(key, i, t, self.job.top_n, vocab)
                                 for i, t in enumerate(prompt_texts) if i), *positions]
            texts = [*prompt_texts, *texts]
        return logprobs.completion_logprobs(positions, texts, self.job.top_n)

    async def _send_body(self, body: bytes) -> None:
        fault = self.job.fault
        if fault is Fault.MALFORMED:
            body = body[: len(body) // 2]
        start = {"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
        await self.send(start)
        if fault is Fault.RESET:
            await self.send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
            raise ClientGone("simulated connection reset")
        at = _split_point(body) if fault is Fault.SPLIT_UTF8 else None
        if at is not None:
            await self.send({"type": "http.response.body", "body": body[:at], "more_body": True})
            await asyncio.sleep(self.faults.split_pause)
            body = body[at:]
        await self.send({"type": "http.response.body", "body": body})

    # -- streamed --------------------------------------------------------------------

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
        choices: list[Choice] | None = None
        try:
            async with self.engine.scheduler.admitted():
                pacer = self.engine.scheduler.pacer()
                choices = await self._prefill(pacer, self._wait_alive)
                if await self._frames(choices, pacer):
                    return
        finally:
            self.record(choices)
        await self.finish()

    async def _frames(self, choices: list[Choice], pacer: Pacer) -> bool:
        """Write every frame; True if a fault ended the stream early."""
        job = self.job
        chunks_type = streaming.ChatChunks if job.chat else streaming.CompletionChunks
        chunks = chunks_type(job.ctx, job.prompt_tokens, job.continuous_usage, job.include_usage)
        for choice in choices:
            await self.write(chunks.role(choice.index))
        writers = [_ChoiceWriter(choice, job, self.engine) for choice in choices]
        steps = max(w.steps for w in writers)
        emitted = 0
        for step in range(steps):
            if step:
                self._step_delay(pacer)
                if pacer.pending() > 0.0005:
                    await self.flush()
                    await self._wait_alive(pacer)
                self._grow_kv(sum(1 for w in writers if step < w.steps))
            for writer in writers:
                if step >= writer.steps:
                    continue
                if emitted == self.faults.after_tokens and await self._mid_stream_fault():
                    return True
                await self.write(writer.frame(chunks, step))
                emitted += 1
        if job.include_usage:
            await self.write(chunks.usage(sum(c.completion_tokens for c in choices)))
        await self.write(streaming.DONE)
        return False

    async def _mid_stream_fault(self) -> bool:
        fault = self.job.fault
        if fault is Fault.RESET:
            await self.flush()
            raise ClientGone("simulated connection reset")
        if fault is Fault.ERROR_FRAME:
            await self.write(streaming.error_frame(
                "Simulated engine failure during generation.", compact=self.job.chat))
            await self.write(streaming.DONE)
            await self.finish()
            return True
        if fault is Fault.MALFORMED:
            await self.write(b'data: {"id":"' + self.job.ctx.id.encode() + b'","object":"chat.comp\n\n')
        return False

    async def _wait_alive(self, pacer: Pacer) -> None:
        """Wait for the pacer, sending ``: keep-alive`` comments if vLLM would."""
        interval = self.settings.sse_keep_alive_interval
        while interval > 0 and pacer.pending() > interval:
            await asyncio.sleep(interval)
            await self.write(streaming.KEEP_ALIVE)
            await self.flush()
        await pacer.wait()

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
    """The frames of one choice: its tokens, held back around stop strings."""

    def __init__(self, choice: Choice, job: Job, engine: Engine) -> None:
        self.choice = choice
        self.job = job
        self.steps = max(choice.completion_tokens, 1)
        prompt = job.prompts[choice.index // prompt_n(job)]
        stops = prompt.sampling.stop
        # vLLM holds back the characters that could begin a stop string.
        self.hold = (max(map(len, stops)) - 1) if stops and not prompt.sampling.include_stop_str_in_output else 0
        self.echo = prompt.text if job.echo else ""
        self.text = choice.text
        self.sent = 0
        self.upto = 0       # characters of the tokens generated so far
        self.offset = 0

    def frame(self, chunks: streaming.ChatChunks, step: int) -> bytes:
        choice = self.choice
        last = step == self.steps - 1
        visible = len(choice.tokens)
        if step < visible:
            self.upto += len(choice.tokens[step].text)
        allowed = len(self.text) if last else max(self.sent, min(self.upto, len(self.text) - self.hold))
        delta = self.echo + self.text[self.sent:allowed]
        self.echo = ""
        self.sent = allowed
        lp = None
        if choice.positions is not None and step < visible:
            position = choice.positions[step]
            if self.job.chat:
                lp = logprobs.chat_content([position], self.job.top_n)
            else:
                token = choice.tokens[step].text
                lp = logprobs.completion_logprobs([position], [token], self.job.top_n, self.offset)
                self.offset += len(token)
        used = step + 1
        if last:
            return chunks.final(choice.index, delta, lp, choice.finish_reason, choice.stop_reason,
                                used, empty=not self.text and not delta)
        return chunks.token(choice.index, delta, lp, used)


def prompt_n(job: Job) -> int:
    return job.prompts[0].sampling.n


async def _sleep(pacer: Pacer) -> None:
    await pacer.wait()


async def respond(engine: Engine, job: Job, receive: Receive, send: Send) -> None:
    """Run ``job``; stop it if the client disconnects first."""
    run = _Run(engine, job, send)

    async def listen() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return

    async with anyio.create_task_group() as group:
        async def work() -> None:
            with contextlib.suppress(ClientGone):
                await (run.stream() if job.stream else run.plain())
            group.cancel_scope.cancel()

        async def watch() -> None:
            await listen()
            group.cancel_scope.cancel()

        group.start_soon(work)
        group.start_soon(watch)

"""Replaying a log: both sides (and the replica) per request, compared, stored.

Records stream from the log through a bounded queue to ``concurrency`` workers, so
memory does not grow with the log. Each pair is written to the store, whole, within a
fraction of a second of its answers being in (``HANDOVER_DELAY``, then the writer's batch);
with ``resume`` the pairs already stored are skipped, which is what makes ``kill -9`` then
``--resume`` lose and duplicate nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import signal
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from shadowdiff.answers.arrivals import answers_session, http_client
from shadowdiff.answers.client import Caller, RetryPolicy, Upstream
from shadowdiff.answers.compare import Thresholds, compare_off_loop, error_comparison, is_comparable
from shadowdiff.answers.parse import CUT_SHORT
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.answers.redact import Redactor, check_patterns, public_url
from shadowdiff.errors import INTERRUPTED, ConfigError, InputError
from shadowdiff.replay import logs
from shadowdiff.replay.references import Grading, grading_settings
from shadowdiff.store import Store
from shadowdiff.store.writer import PairWriter
from shadowdiff.triage.grading import Grader
from shadowdiff.triage.pairing import assemble_pair_off_loop
from shadowdiff.triage.scoring import Scorer, score_pair
from shadowdiff.verdict.flips import grade_pair_off_loop
from shadowdiff.vocabulary import Outcome, Side

log = logging.getLogger("shadowdiff.replay")
GIVE_UP_AFTER = 60.0   # seconds of store failure after which a replay stops (to be resumed)
# Pairs are handed to the writer's thread in bursts, not one by one: a burst once HANDOVER_PAIRS
# are ready or the first of them has waited HANDOVER_DELAY seconds, so that its thread wakes
# once a burst rather than once a pair (a pair killed in a burst not yet handed over is redone
# by --resume, as one in the writer's batch is).
HANDOVER_PAIRS = 64
HANDOVER_DELAY = 0.1

@dataclass(frozen=True)
class Overrides:
    """What replay changes in every request (None: keep the request's own value)."""

    temperature: float | None = 0.0
    max_tokens: int | None = 256
    stream: bool = True
    logprobs: int = 2
    # fields sent in every request over the log's (``--extra-body``): what an engine needs
    # that vLLM does not, e.g. llama.cpp's repeat_penalty 1.0 for argmax decoding
    extra: dict[str, Any] = field(default_factory=dict)

    def apply(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        out = {**body, **self.extra}
        if self.temperature == 0:
            # vLLM refuses greedy n > 1 ("n must be 1 when using greedy sampling", 0.34's
            # sampling_params.py), and greedy choices would all be one; a kept or other
            # temperature keeps the request's n, and every choice is compared
            out["n"] = 1
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.max_tokens is not None:
            if endpoint == logs.CHAT and "max_completion_tokens" in out:
                out["max_completion_tokens"] = self.max_tokens
            else:
                out["max_tokens"] = self.max_tokens
        out["stream"] = self.stream
        if self.stream:
            out["stream_options"] = {"include_usage": True}
        else:
            out.pop("stream_options", None)
        if self.logprobs:
            if endpoint == logs.CHAT:
                out["logprobs"], out["top_logprobs"] = True, self.logprobs
            else:
                out["logprobs"] = self.logprobs
        return out


@dataclass(frozen=True)
class ReplaySettings:
    log: Path
    baseline: Upstream
    candidate: Upstream
    replica: Upstream | None = None
    fmt: logs.LogFormat | None = None
    turn: int = 1
    endpoint: str = logs.CHAT
    concurrency: int = 8
    overrides: Overrides = field(default_factory=Overrides)
    thresholds: Thresholds = field(default_factory=Thresholds)
    strict: bool = False
    timeout: float = 300.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    redact: tuple[str, ...] = ()                 # patterns redacted from stored prompts and requests
    labels: dict[str, str] = field(default_factory=dict)   # what moves the noise floor: gpu=H100...
    servers: dict[str, str | None] = field(default_factory=dict)   # each side's vLLM version (/version)
    simulated: tuple[str, ...] = ()   # the sides that are shadowdiff's simulator (its /version says so)
    score: bool = True        # teacher-forced scoring of the baseline's answers (shadowdiff.triage.scoring)
    references: Path | None = None               # --references: reference answers by record id
    grader: Grader | None = None                 # --grader: for references that name none

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError("--concurrency must be at least 1")
        if self.turn < 1:
            raise ConfigError("--turn counts from 1")
        check_patterns(self.redact)

    @property
    def upstreams(self) -> list[Upstream]:
        return [u for u in (self.baseline, self.candidate, self.replica) if u is not None]

    def recorded(self, fmt: logs.LogFormat) -> dict[str, Any]:
        """The settings stored with the run (no API keys)."""
        return {
            "log": str(self.log.resolve()), "format": fmt.value, "turn": self.turn, "endpoint": self.endpoint,
            "sides": {u.side.value: {"url": public_url(u.url), "model": u.model} for u in self.upstreams},
            "concurrency": self.concurrency, "overrides": asdict(self.overrides),
            "thresholds": asdict(self.thresholds), "timeout": self.timeout,
            "redact": list(self.redact), "labels": dict(self.labels), "versions": dict(self.servers),
            "score": self.score,
            "grading": grading_settings(self.references, self.grader),
            **({"simulated": list(self.simulated)} if self.simulated else {}),
        }


@dataclass
class Tally:
    """Running totals, for the progress bar and the closing line."""

    total: int = 0
    done: int = 0
    resumed: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    skipped: int = 0


Listener = Callable[[Tally], None]


def _counted_as(pair: Pair) -> str:
    """A pair's outcome as the run's counts name it: a sampled pair that both sides
    answered is sampled, whatever its texts (``Summary.counts``)."""
    outcome = pair.comparison.outcome
    return "sampled" if not pair.comparable and outcome is not Outcome.ERROR else outcome.value


class Replay:
    """One replay run into ``store`` (``run_id``), reporting progress to ``listener``."""

    def __init__(self, settings: ReplaySettings, store: Store, run_id: str, *, resume: bool = False,
                 listener: Listener | None = None, warn: Callable[[str], None] | None = None,
                 grading: Grading | None = None, resume_command: str | None = None) -> None:
        self.settings = settings
        self.resume_command = resume_command   # said by a second Ctrl+C, which exits at once
        self.store = store
        self.run_id = run_id
        self.resume = resume
        self.tally = Tally()
        self._redactor = Redactor(settings.redact)
        self._listener = listener or (lambda _: None)
        self._warn = warn or (lambda _: None)
        self._cut: set[Side] = set()   # the sides that have cut a stream short (said once each)
        self._scorer: Scorer | None = None
        self._grading = grading or Grading(settings.grader)

    async def run(self, fmt: logs.LogFormat) -> Tally:
        """Replay the log; Ctrl+C cancels it (``CancelledError``) once the pairs made before the
        signal are stored, and a second Ctrl+C exits at once (``_stop_now``)."""
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        interrupted = False
        self._closing = False   # (the last pairs are being stored: a Ctrl+C then waits for them)

        def interrupt() -> None:
            nonlocal interrupted
            if interrupted:
                _exit_at_once(self.resume_command)
            interrupted = True
            if task is not None and not self._closing:
                task.cancel()

        # (the event loop's own handler, in place from the first instruction: asyncio.run's raises
        # KeyboardInterrupt wherever the second signal finds the main thread; a run started
        # ignoring SIGINT, `shadowdiff replay … &` from a script, keeps ignoring it)
        previous = signal.getsignal(signal.SIGINT)
        if previous is not signal.SIG_IGN:
            with contextlib.suppress(NotImplementedError, ValueError, RuntimeError):   # (not the main thread)
                loop.add_signal_handler(signal.SIGINT, interrupt)
        try:
            tally = await self._run(fmt)
            if interrupted:   # (it came while the last pairs were stored: they are, and the run stays unfinished)
                raise asyncio.CancelledError
            return tally
        finally:
            if previous is not signal.SIG_IGN:
                with contextlib.suppress(NotImplementedError, ValueError, RuntimeError):
                    loop.remove_signal_handler(signal.SIGINT)
                    # until the command restores its own: after a Ctrl+C, a second one exits at once
                    signal.signal(signal.SIGINT, (lambda signum, frame: _exit_at_once(self.resume_command))
                                  if interrupted
                                  else previous if previous is not None else signal.default_int_handler)

    async def _run(self, fmt: logs.LogFormat) -> Tally:
        s = self.settings
        queue: asyncio.Queue[logs.LogRecord | None] = asyncio.Queue(maxsize=s.concurrency * 2)
        duplicates: list[Pair] = []
        # (a replay has no client to protect: it waits for room rather than drop a pair,
        # and a store down for a minute stops it, to be resumed)
        self._writer = PairWriter(self.store, self.run_id, on_duplicate=duplicates.append, block_when_full=True,
                                  give_up_after=GIVE_UP_AFTER)
        self._stopped: Exception | None = None
        self._ready: list[Pair] = []        # made, not yet handed to the writer (nor counted)
        self._flush: asyncio.TimerHandle | None = None   # the hand-over of the pairs ready, when due
        self._later: asyncio.Future[None] | None = None  # ... once begun
        self._handing = asyncio.Lock()
        try:
            # a connection for every request in flight: none waits for another's
            connections = s.concurrency * len(s.upstreams) + 4
            async with answers_session(connections, s.timeout) as session, contextlib.AsyncExitStack() as scoring:
                caller = Caller(session, s.retry, s.timeout)
                if s.score:   # (the scorer reads through httpx, as the proxy's does: its own pool)
                    timeout = httpx.Timeout(s.timeout, connect=min(s.timeout, 10.0))
                    client = await scoring.enter_async_context(http_client(connections, timeout))
                    self._scorer = Scorer(client, timeout=s.timeout)
                workers = [asyncio.create_task(self._worker(queue, caller)) for _ in range(s.concurrency)]
                try:
                    await self._produce(queue, fmt)
                except asyncio.CancelledError:
                    await _stop_now(workers)
                    raise
                finally:
                    try:
                        if not all(w.done() for w in workers):
                            for _ in workers:
                                await queue.put(None)
                        results = await asyncio.gather(*workers, return_exceptions=True)
                    except asyncio.CancelledError:   # Ctrl+C while the log's last records wait for a worker
                        await _stop_now(workers)
                        raise
                for result in results:
                    if isinstance(result, BaseException):
                        raise result
                if self._stopped is not None:
                    raise self._stopped
            for message in self._grading.notes():
                self._warn(message)
        finally:
            self._closing = True
            if self._flush is not None:
                self._flush.cancel()
            if self._later is not None:   # (awaited, not cancelled: its pairs are in hand)
                await asyncio.wait([self._later])
            ready, self._ready = self._ready, []
            submitted: list[Pair] = []
            try:
                await asyncio.to_thread(self._close_writer, ready, submitted)
            finally:
                for stored in submitted:
                    self._count(stored)
        for pair in duplicates:
            # counted when submitted; the store refused it: an earlier line had its id
            self.tally.done -= 1
            self.tally.outcomes[_counted_as(pair)] -= 1
            await self._bad(pair.seq, f"duplicate id {pair.key!r}: an earlier line has it")
        return self.tally

    async def _produce(self, queue: asyncio.Queue[logs.LogRecord | None], fmt: logs.LogFormat) -> None:
        s = self.settings
        for item in logs.read(s.log, fmt, turn=s.turn, endpoint=s.endpoint):
            if isinstance(item, logs.BadLine):
                await self._bad(item.line, item.reason)
                continue
            try:
                item = self._grading.resolve(item)
            except InputError as exc:
                await self._bad(item.line, str(exc))
                continue
            line = await asyncio.to_thread(self.store.pair_line, self.run_id, item.key) if self.resume else None
            if line is not None:
                if line != item.line:   # an earlier line has this id: this one was never compared
                    await self._bad(item.line, f"duplicate id {item.key!r}: line {line} has it")
                    continue
                self.tally.resumed += 1
                self._listener(self.tally)
                continue
            if self._stopped is not None:
                raise self._stopped
            await queue.put(item)

    async def _bad(self, line: int, reason: str) -> None:
        self.tally.skipped += 1
        self._warn(f"line {line}: {reason}")
        await asyncio.to_thread(self.store.add_skipped, self.run_id, line, reason)
        self._listener(self.tally)
        if self.settings.strict:
            raise InputError(f"{self.settings.log}, line {line}: {reason} (stopped by --strict)")

    async def _worker(self, queue: asyncio.Queue[logs.LogRecord | None], caller: Caller) -> None:
        while (record := await queue.get()) is not None:
            try:
                pair = await self._pair(record, caller)
                pair = await self._graded(record, pair)
            except Exception as exc:   # a bug here must cost this pair, not hang or end the run
                log.exception("line %d: the pair could not be made", record.line)
                self._warn(f"line {record.line}: the pair could not be made ({type(exc).__name__}: {exc}); "
                           "recorded as an error")
                pair = self._failed(record, exc)
            self._say_if_cut(record, pair)
            if self._stopped is not None:
                continue        # the writer gave up: take what is queued, so that nothing waits on us
            # compared on the true answers; stored redacted (in a thread, during which a burst may be
            # handed over and self._ready replaced: the list is looked up after the await, not before)
            stored = await self._redactor.pair_off_loop(pair)
            self._ready.append(stored)
            if len(self._ready) >= HANDOVER_PAIRS:
                await self._hand_over()
            elif self._flush is None:
                self._flush = asyncio.get_running_loop().call_later(HANDOVER_DELAY, self._hand_over_later)

    def _hand_over_later(self) -> None:
        self._flush = None
        self._later = asyncio.ensure_future(self._hand_over())   # (held: a task nobody holds may be collected)

    async def _hand_over(self) -> None:
        """Give the writer the pairs made so far, and count them: on the event loop while its
        queue has room (a put then returns at once), in a thread when it has none (the writer
        waits for room while the store is failing, and the event loop must not)."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        async with self._handing:   # one burst at a time, in order
            ready, self._ready = self._ready, []
            submitted: list[Pair] = []
            try:
                if not ready or self._stopped is not None:
                    return
                if self._writer.has_room(len(ready)):   # (only the event loop's own puts fill it)
                    self._submit_all(ready, submitted)
                else:
                    await asyncio.to_thread(self._submit_all, ready, submitted)
            except Exception as exc:     # the store failed for longer than the writer waits: stop, to resume
                self._stopped = exc
            finally:
                for stored in submitted:
                    self._count(stored)

    def _submit_all(self, pairs: list[Pair], submitted: list[Pair]) -> None:
        for pair in pairs:
            self._writer.submit(pair)
            submitted.append(pair)

    def _close_writer(self, ready: list[Pair], submitted: list[Pair]) -> None:
        """Hand over what is left (unless the writer stopped), then write everything and stop it."""
        try:
            if self._stopped is None:
                self._submit_all(ready, submitted)
        finally:
            self._writer.close()

    def _say_if_cut(self, record: logs.LogRecord, pair: Pair) -> None:
        """Once per side: it cuts streams short (llama.cpp's server at its defaults, when
        requests overlap). Each such answer is an error; retries cut other streams in turn."""
        for side, answer in pair.answers.items():
            if side not in self._cut and answer.error is not None and answer.error.startswith(CUT_SHORT):
                self._cut.add(side)
                self._warn(f"line {record.line}: the {side.value} cut a stream short (no finish reason), which "
                           "llama.cpp's server does to a running stream when another request arrives: start it "
                           "with --interrupt_requests false, or replay with --concurrency 1 (retries do not help "
                           "while requests overlap); such answers are errors, not compared")

    def _failed(self, record: logs.LogRecord, exc: Exception) -> Pair:
        return self._error_pair(record, f"shadowdiff could not make this pair: {type(exc).__name__}: {exc}"[:500],
                                self.settings.overrides.apply(record.endpoint, record.body))

    def _error_pair(self, record: logs.LogRecord, error: str, body: dict[str, Any]) -> Pair:
        """A pair no side could answer, recorded (not lost) with ``error`` and the request it had come to."""
        answers = {u.side: Answer(u.side, u.model, error=error) for u in self.settings.upstreams}
        return Pair(key=record.key, seq=record.line, endpoint=record.endpoint,
                    prompt=record.prompt, request=self._stored(body), comparison=error_comparison(),
                    answers=answers, category=record.category,
                    comparable=is_comparable(body))

    def _stored(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as the baseline was sent it - overrides applied, its model name (the
        candidate's differs in that alone; not the log's body)."""
        model = self.settings.baseline.model
        return {**body, "model": model} if model is not None else body

    async def _history(self, record: logs.LogRecord, caller: Caller) -> list[dict[str, Any]] | str:
        """The conversation before ``record``'s turn: each earlier user turn and the baseline's
        answer to it, asked in order with the replay's overrides; or what went wrong."""
        messages: list[dict[str, Any]] = []
        for number, text in enumerate(record.earlier, start=1):
            messages.append({"role": "user", "content": text})
            body = self.settings.overrides.apply(record.endpoint, {**record.body, "messages": list(messages)})
            answer = await caller.call(self.settings.baseline, record.endpoint, body)
            if answer.error is not None:
                return f"turn {number}, asked of the baseline for the conversation's history, failed: {answer.error}"
            messages.append({"role": "assistant", "content": answer.text})
        return messages

    async def _pair(self, record: logs.LogRecord, caller: Caller) -> Pair:
        body = self.settings.overrides.apply(record.endpoint, record.body)
        if record.earlier:
            # --turn N: both sides continue the same conversation (turns 1..N-1, the baseline's answers)
            history = await self._history(record, caller)
            if isinstance(history, str):
                return self._error_pair(record, history[:2000], body)
            body = {**body, "messages": history + body["messages"]}
        # Whichever request is written first reaches the server first: the order is drawn
        # per pair, so that neither side is always second.
        sides = random.sample(self.settings.upstreams, len(self.settings.upstreams))
        answers = await asyncio.gather(*(caller.call(u, record.endpoint, body) for u in sides))
        by_side = {a.side: a for a in answers}
        base, cand = by_side[Side.BASELINE], by_side[Side.CANDIDATE]
        comparison = await compare_off_loop(base, cand, self.settings.thresholds)
        replica = by_side.get(Side.REPLICA)
        noise = await compare_off_loop(base, replica, self.settings.thresholds) if replica is not None else None
        scores: dict[str, Any] = {}
        if self._scorer is not None:
            scores = await score_pair(self._scorer, record.endpoint, body, by_side, self.settings.upstreams,
                                      comparison.outcome)
        return await assemble_pair_off_loop(record.key, record.line, record.endpoint, record.prompt,
                                            self._stored(body), by_side, comparison, noise=noise, scores=scores,
                                            category=record.category, comparable=is_comparable(body))

    async def _graded(self, record: logs.LogRecord, pair: Pair) -> Pair:
        """``pair`` graded on every side by the record's reference, if it has one."""
        if record.reference is None or record.grader is None:
            return pair
        return await grade_pair_off_loop(pair, record.reference, Grader(record.grader))

    def _count(self, pair: Pair) -> None:
        self.tally.done += 1
        self.tally.outcomes[_counted_as(pair)] += 1
        if pair.comparison.outcome is Outcome.ERROR:
            self.tally.errors += 1
        self._listener(self.tally)


async def _stop_now(workers: list[asyncio.Task[None]]) -> None:
    """Ctrl+C: the requests in flight are dropped, not waited for, so that the run stops
    within a moment whatever its answers' length, and nothing made after the signal is
    stored; the pairs made before it are, and counted in what the command says (a --resume
    makes the rest)."""
    for worker in workers:
        worker.cancel()
    await asyncio.gather(*workers, return_exceptions=True)


def _exit_at_once(resume_command: str | None = None) -> None:
    """The second Ctrl+C: out now, without waiting for the store (whose transactions keep
    it whole: the pairs being written are not stored, and a --resume makes them again),
    saying how to continue, on the terminal too when standard error's reader is gone."""
    text = ("\ninterrupted again: stopped at once; the pairs being stored when it came may not be, and --resume "
            "makes them again" + (f". Continue the run with:\n  {resume_command}" if resume_command else "") + "\n")
    for where in ("stderr", "/dev/tty") if getattr(sys.stderr, "lost", False) else ("stderr",):
        with contextlib.suppress(OSError):
            fd = 2 if where == "stderr" else os.open(where, os.O_WRONLY)
            os.write(fd, text.encode())
    os._exit(INTERRUPTED)

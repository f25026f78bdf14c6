"""The latency model: so that load on the simulator behaves like load on a server.

vLLM admits at most ``--max-num-seqs`` sequences into its running batch and queues
the rest; a request first pays a prefill (a fixed cost plus a cost per prompt token),
then one decode step per output token, and decode steps slow down as the running
batch grows. ``speed`` divides every delay, so a candidate can be made 1.5x faster
than its baseline. With every delay at zero nothing sleeps at all: the simulator
then runs as fast as Python can serialize frames, so it never limits a benchmark of
the proxy or the replay client.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from shadowdiff.errors import ConfigError

# Sleeping for less than this is not worth a trip through the event loop; the pacer
# carries the owed time forward instead, so the average rate stays right.
_MIN_SLEEP = 0.0005


@dataclass(frozen=True)
class LatencyModel:
    """Delays in seconds, before the speed factor is applied."""

    ttft: float = 0.0
    prefill_per_token: float = 0.0
    tpot: float = 0.0
    batch_slowdown: float = 0.0
    speed: float = 1.0
    max_num_seqs: int = 256

    def __post_init__(self) -> None:
        for name in ("ttft", "prefill_per_token", "tpot", "batch_slowdown"):
            if getattr(self, name) < 0:
                raise ConfigError(f"latency setting {name} must not be negative")
        if self.speed <= 0:
            raise ConfigError("--speed must be positive")
        if self.max_num_seqs < 1:
            raise ConfigError("--max-num-seqs must be at least 1")

    def prefill(self, prompt_tokens: int) -> float:
        return (self.ttft + self.prefill_per_token * prompt_tokens) / self.speed

    def decode_step(self, running: int) -> float:
        return self.tpot * (1.0 + self.batch_slowdown * max(running - 1, 0)) / self.speed


# A BF16 8B model on one H100, roughly: 12 ms per token alone, ~1,725 output tok/s
# at concurrency 32 (the published FP8-vs-BF16 run).
LATENCY_PRESETS = {
    "zero": LatencyModel(),
    "realistic": LatencyModel(ttft=0.03, prefill_per_token=0.00005, tpot=0.012,
                              batch_slowdown=0.0177),
}



class Scheduler:
    """Admission to the running batch (FIFO beyond ``max_num_seqs``) and pacing.

    Counts are in sequences, as vLLM's are: a request with ``n`` choices for ``p``
    prompts occupies ``n * p`` places in the batch.
    """

    def __init__(self, model: LatencyModel) -> None:
        self.model = model
        self.running = 0
        self.waiting = 0
        self._queue: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    def _fits(self, seqs: int) -> bool:
        # A request larger than the whole batch still runs, alone.
        return self.running + seqs <= self.model.max_num_seqs or self.running == 0

    def _wake(self) -> None:
        while self._queue and self._fits(self._queue[0][0]):
            seqs, future = self._queue.popleft()
            if not future.done():
                self.waiting -= seqs
                self.running += seqs
                future.set_result(None)

    @contextlib.asynccontextmanager
    async def admitted(self, seqs: int = 1) -> AsyncIterator[None]:
        """Hold ``seqs`` places in the running batch for the body of the ``with``."""
        if not self._queue and self._fits(seqs):
            self.running += seqs
        else:
            future = asyncio.get_running_loop().create_future()
            self._queue.append((seqs, future))
            self.waiting += seqs
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self.running -= seqs   # admitted just as the caller went away
                else:
                    self.waiting -= seqs
                    self._queue = collections.deque(e for e in self._queue if e[1] is not future)
                self._wake()
                raise
        try:
            yield
        finally:
            self.running -= seqs
            self._wake()

    def pacer(self) -> Pacer:
        return Pacer(self)


class Pacer:
    """Sleeps until each token is due, keeping the owed time when it is tiny."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._loop = asyncio.get_running_loop()
        self._due = self._loop.time()

    def pending(self) -> float:
        """Seconds until the next scheduled point (may be negative)."""
        return self._due - self._loop.time()

    def schedule_prefill(self, prompt_tokens: int) -> None:
        self._due += self._scheduler.model.prefill(prompt_tokens)

    def schedule_token(self) -> None:
        self._due += self._scheduler.model.decode_step(self._scheduler.running)

    def schedule(self, seconds: float) -> None:
        self._due += seconds

    async def wait(self) -> bool:
        """Sleep until due; True if it slept (a natural point to flush output)."""
        delay = self.pending()
        if delay < _MIN_SLEEP:
            return False
        await asyncio.sleep(delay)
        return True

"""One thread for the pairs' work that grows with their answers, taken in batches.

Reading the answers, comparing them, triaging and redacting a pair cost far more than
forwarding its request (a changed 1,000-character pair: about a millisecond), and the
event loop that forwards every client's bytes must not do it. A thread per pair
(``asyncio.to_thread``) costs a hand-off each way per pair - a pool's queue, a lock,
a wake-up - which was as much again. Here one thread takes what the pair tasks queued,
as many as have come (up to ``MAX_BATCH``), does them one after the other, and hands
the results back to the event loop in one call per batch.

The thread shares the interpreter's lock with the event loop, which would wait for it
up to Python's switch interval (5 ms) at each wake-up while a job runs, and a core with
the event loop, which the scheduler would make wait for the thread's time slice: a
client's request arriving then waited for the pair (+0.96 ms p50 at concurrency 1 for
changed 1,000-character pairs, bench/mirror_cpu.py). So the thread runs at ``NICE``
(the event loop preempts it), the interval is ``SWITCH_INTERVAL`` once the thread
starts (+0.42 ms), and the thread gives the lock up between two jobs too.

The queue is bounded (``MAX_WAITING``): past the bound a pair task waits in line
(asynchronously: the event loop goes on forwarding every client's bytes) until the pairs'
thread has taken jobs off the queue - one waiting task let in for each job taken, in the
order they came, when a batch is handed back, so that a full queue costs no wake-up of
every waiting task per job - so a proxy whose CPU cannot keep up with its pairs finishes them later rather than
slowing its clients. Those that wait past the drain deadline at shutdown are counted as
drained, like any pair the proxy stopped waiting for.

Making a pair (``make``: its answers read, compared, triaged, redacted) is done by the
pair process (``shadowdiff.proxy.pairprocess``) when there is one: the thread hands it
the batch's pairs at once and waits for them, its lock let go, then counts each in the
thread (``then``). Without one, or while it is not ready (starting, or failing to), the
thread makes them itself. While the process makes them, the thread lets pairs gather
for ``GATHER`` after it wakes, so that a batch carries several.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from shadowdiff.proxy.pairmaking import Made, Maker, PairInputs
from shadowdiff.proxy.pairprocess import (
    SWITCH_INTERVAL,
    MakeHere,
    PairFailed,
    PairProcess,
    PairProcessUnavailable,
    Starting,
)

MAX_BATCH = 64             # jobs handed back to the event loop in one call, at most
MAX_WAITING = 256          # jobs queued, at most; past it, a pair task waits for room
NICE = 10                  # the pairs' thread's nice value (the event loop's: the process's, 0 as a rule)
# seconds the thread lets pairs gather after a wake-up while the pair process makes them: the
# hand-over's cost is mostly per batch, not per pair (at 400 pairs a second, one pair a batch
# cost the thread 160 µs a pair, four 120), and a pair's making waits no longer than this
GATHER = 0.02
T = TypeVar("T")
# a job: a call (``run``: no ``then``; ``post``: nor a future), or a pair to make and what to
# do with it (``make``)
_Job = tuple[Callable[[], Any] | PairInputs, Callable[[Made], Any] | None, "asyncio.Future[Any] | None"]
_Done = tuple["asyncio.Future[Any]", Any, BaseException | None]
log = logging.getLogger("shadowdiff.proxy")


class PairWork:
    """``run(job)``: ``job()``'s result, computed in the pairs' thread (started on first use);
    ``make(inputs, then)``: ``then`` of the pair made of ``inputs`` by ``maker`` or ``process``."""

    def __init__(self, maker: Maker | None = None, process: PairProcess | None = None,
                 on_process: Callable[[bool], None] | None = None) -> None:
        self._maker = maker
        self._process = process
        self._on_process = on_process    # told whether the pair process makes the pairs, when that changes
        self._by_process = process is not None
        self._jobs: collections.deque[_Job] = collections.deque()
        self._wake = threading.Event()
        self._waiting_room: collections.deque[asyncio.Future[None]] = collections.deque()   # tasks in line
        self._stopping = False
        self._posted = self._posted_done = 0    # jobs posted, and done (each counted by one thread only)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Start the pair process, if there is one, without waiting for it (the proxy's start-up)."""
        if self._process is not None:
            self._process.start()
        if self._on_process is not None:
            self._on_process(self._process is not None)

    async def run(self, job: Callable[[], T]) -> T:
        """``job()``, done in the thread (on the event loop once the thread has stopped).
        With the queue full, the caller first waits for room (the event loop does not). A
        job whose caller was cancelled before the thread took it is not done."""
        return await self._queued(job, None, job)   # type: ignore[no-any-return]

    def post(self, job: Callable[[], Any]) -> None:
        """``job()``, done in the thread, its result for no one (on the event loop, at once,
        once the thread has stopped). Not bounded by the queue's room: what is posted is a
        pair's last step, and the pairs are bounded before they begin (``PairRecorder.behind``)."""
        if self._stopping:
            job()
            return
        self._started(asyncio.get_running_loop())
        self._posted += 1
        self._jobs.append((job, None, None))
        self._wake.set()

    @property
    def settled(self) -> bool:
        """Whether every job posted is done."""
        return self._posted == self._posted_done

    async def make(self, inputs: PairInputs, then: Callable[[Made], T]) -> T:
        """``then(made)`` of the pair made of ``inputs`` (in the pair process, if there is
        one), both in the thread, as ``run`` does a job. A pair the process could not make
        raises ``PairFailed``."""
        assert self._maker is not None
        maker = self._maker
        return await self._queued(inputs, then, lambda: then(maker.make(inputs)))  # type: ignore[no-any-return]

    async def _queued(self, what: Callable[[], Any] | PairInputs, then: Callable[[Made], Any] | None,
                      here: Callable[[], Any]) -> Any:
        """The job's result from the thread; ``here()`` where it is done by its caller (the thread stopped)."""
        if self._stopping:
            return here()
        loop = asyncio.get_running_loop()
        self._thread = self._started(loop)
        if (self._waiting_room or len(self._jobs) >= MAX_WAITING) and self._thread.is_alive():
            room = loop.create_future()
            self._waiting_room.append(room)
            await room
            if self._stopping:      # (stopped while this waited for room)
                return here()
        done: asyncio.Future[Any] = loop.create_future()
        self._jobs.append((what, then, done))
        self._wake.set()     # (a lock taken and let go while the thread works: no wake-up)
        return await done

    def _started(self, loop: asyncio.AbstractEventLoop) -> threading.Thread:
        """The thread, started on first use."""
        if self._thread is None:
            self._loop = loop
            self._thread = threading.Thread(target=self._run, name="shadowdiff-pairs", daemon=True)
            # (the process's: the proxy's threads are the event loop's helpers, none must hold it long)
            sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
            self._thread.start()
        return self._thread

    def close(self, timeout: float = 5.0, process_timeout: float | None = None) -> None:
        """Stop the thread once the jobs queued are done (at most ``timeout`` seconds);
        jobs given later are done by their callers. The pair process has ``process_timeout``
        (by default ``timeout``) to end, writing what it stored itself."""
        self._stopping = True
        self._wake.set()
        if self._loop is not None:    # the tasks waiting for room do their jobs themselves now
            with contextlib.suppress(RuntimeError):   # the event loop is closed
                self._loop.call_soon_threadsafe(self._let_in, len(self._waiting_room))
        if self._thread is not None:
            self._thread.join(timeout)
        if self._process is not None:
            self._process.close(timeout if process_timeout is None else process_timeout)

    @property
    def incomplete(self) -> bool:
        """Whether the pair process ended leaving pairs it stored itself unwritten (``close``)."""
        return self._process is not None and self._process.incomplete

    def _run(self) -> None:
        # Below the event loop in the OS's eyes too: on a core they share, a request arriving
        # while a pair is worked on preempts it at once, where the scheduler otherwise let the
        # pair finish its time slice first.
        below_the_event_loop(threading.get_native_id())
        while True:
            self._wake.wait()
            if self._by_process and not self._stopping:
                time.sleep(GATHER)
            self._wake.clear()
            while self._jobs:
                batch: list[_Done] = []
                making: list[tuple[PairInputs, Callable[[Made], Any], asyncio.Future[Any]]] = []
                # what was queued when the batch began: a result waits for no job queued after it
                taken = min(len(self._jobs), MAX_BATCH)
                for _ in range(taken):
                    what, then, done = self._jobs.popleft()
                    if done is None:        # posted: its result is for no one
                        assert callable(what)
                        try:
                            what()
                        except Exception:   # (a bug: said, and the thread goes on)
                            log.exception("a job of the pairs' thread failed")
                        self._posted_done += 1
                        continue
                    if done.cancelled():    # (read from this thread: at worst, a job done for nothing)
                        continue
                    if then is not None:
                        assert isinstance(what, PairInputs)
                        making.append((what, then, done))
                        continue
                    assert callable(what)
                    try:
                        batch.append((done, what(), None))
                    except BaseException as exc:  # handed to the caller, as its own exception
                        batch.append((done, None, exc))
                    time.sleep(0)   # the interpreter's lock to the event loop, if it waits for it
                if making:
                    batch += self._made([inputs for inputs, _, _ in making], making)
                self._hand_back(batch, taken)
            if self._stopping and not self._jobs:
                return

    def _made(self, inputs: list[PairInputs],
              making: list[tuple[PairInputs, Callable[[Made], Any], asyncio.Future[Any]]]) -> list[_Done]:
        """(in the thread) The pairs made, by the process if one is ready, each handed to its ``then``."""
        results: list[Made | PairFailed] | None = None
        if self._process is not None:
            try:
                results = self._process.make(inputs)
                self._made_by(True, "")
            except Starting:
                pass
            except PairProcessUnavailable as exc:
                self._made_by(False, str(exc))
        done_ones: list[_Done] = []
        for i, (pair, then, done) in enumerate(making):
            try:
                result = results[i] if results is not None else None
                if result is None or isinstance(result, MakeHere):
                    assert self._maker is not None
                    result = self._maker.make(pair)
                if isinstance(result, PairFailed):
                    raise result
                done_ones.append((done, then(result), None))
            except BaseException as exc:  # handed to the caller, as its own exception
                done_ones.append((done, None, exc))
            time.sleep(0)
        return done_ones

    def _made_by(self, process: bool, why: str) -> None:
        """Whether the process makes the pairs now: said when it changes (in the log and to ``on_process``)."""
        if process == self._by_process:
            return
        self._by_process = process
        if self._stopping:
            return
        if process:
            log.warning("the pair process makes the pairs again")
        else:
            log.error("the pair process is not available (%s); the proxy's own thread makes the pairs meanwhile", why)
        if self._on_process is not None:
            self._on_process(process)

    def _hand_back(self, batch: list[_Done], taken: int) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):   # the event loop is closed: no one waits for these any more
            self._loop.call_soon_threadsafe(self._settle, batch, taken)

    def _settle(self, batch: list[_Done], taken: int) -> None:
        """(on the event loop) A batch's results to their callers, and as many tasks let in
        from the waiting room as jobs were taken off the queue."""
        _settle(batch)
        self._let_in(taken)

    def _let_in(self, n: int) -> None:
        """(on the event loop) Let the first ``n`` tasks still waiting for room queue their jobs."""
        while n > 0 and self._waiting_room:
            room = self._waiting_room.popleft()
            if not room.done():     # (a task cancelled while it waited has left the line)
                room.set_result(None)
                n -= 1


def below_the_event_loop(thread: int) -> None:
    """Give a thread of the proxy's (by its native id) the ``NICE`` value, unless it has a
    higher one: the scheduler lets the event loop preempt it. (Linux: a thread's own nice
    value; elsewhere, nothing.)"""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, thread, max(NICE, os.getpriority(os.PRIO_PROCESS, thread)))


def _settle(batch: list[_Done]) -> None:
    for done, result, error in batch:
        if done.done():     # its caller was cancelled (shutdown's deadline) meanwhile
            continue
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)

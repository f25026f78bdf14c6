"""The shadow's calls made by the pair process, off the proxy's event loop.

A shadow's request is a second HTTP request for every mirrored one, and on the event loop
that forwards the clients' bytes it is aiohttp's request, its headers and the answer's
reads: made elsewhere, the event loop's CPU per mirrored request fell from 0.74-0.77 to
0.65-0.67 ms at 400 requests a second (bench/mirror_cpu.py, docs/performance.md). With a
pair process (``shadowdiff.proxy.pairprocess``) the
shadow is called from there instead: the event loop writes one message to the child when
the request's body is in and reads one back, the shadow's answer as ``Mirror`` would have
returned it (``ShadowReply``, its bytes unread), and the pair is made as before.

Two ends of one socket pair, a second one beside the pair process's own (which the pairs'
thread uses, blocking): ``ShadowChannel`` on the proxy's event loop, and ``serve`` in a
thread of the child with an event loop of its own and the same ``Mirror`` code, so the
shadow gets the same request, timeouts, retry and credentials either way. Messages are
pickles, each after its length.

A call the proxy makes its pair of (``keep``: no replica, no scoring) stays in the child:
the child says when the shadow has answered (``answered``, which frees the shadow's place),
the proxy sends the primary's answer once it passed whole (``pair``), and the child makes
the pair and stores it (``shadowdiff.proxy.childpairs``), and gives back only what the
proxy counts (``made``: the pair's ``Measured``). The shadow's answer never crosses back.

Until the child says it is ready (at start-up, after a restart) the proxy calls the shadow
itself, as without a process. A call under way when the child dies is lost with it: its
pair fails as the proxy's own failure (``proxy_failed``), counted and logged, as a pair the
child died making does; the clients notice nothing. A call whose pair is abandoned (the
client left, the shutdown's deadline) is cancelled in the child too. A child that has not
answered a call long after its ``--shadow-timeout`` (``LATE``) is hung (stopped, or stuck
holding its interpreter's lock): it is killed, its calls lost, and another started. Without
that, its calls would hold the shadow's places for ever and mirroring stop; the pairs' thread
would not notice, as no pair gets to it until its shadow's call ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import logging.config
import pickle
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any, cast

import orjson
from prometheus_client import CollectorRegistry

from shadowdiff.answers.compare import is_comparable
from shadowdiff.answers.records import Answer
from shadowdiff.answers.redact import failure_text
from shadowdiff.errors import ShadowdiffError
from shadowdiff.proxy.childpairs import GATHER, ChildPairs, Stats
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.pairmaking import Maker, MakerSettings, PairInputs
from shadowdiff.proxy.pairprocess import BATCH_TIMEOUT, PairFailed, hurry
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.proxy.shadow import Mirror, Plan, ShadowReply
from shadowdiff.proxy.tap import Tapped

log = logging.getLogger("shadowdiff.proxy")

_LENGTH = struct.Struct("!I")
_READY = ("ready",)
# seconds the proxy lets its messages to the child gather before it writes them: a shadow's
# call starts at most this much later (its times are taken in the child, from its own start).
# At 200 requests a second, 20 ms rather than 5 saved ~0.1 ms of the child's CPU a mirrored
# request (fewer writes, fewer wake-ups; bench/mirror_ab.py)
GATHER_OUT = 0.02
STOP_BUDGET = 5.0    # seconds the child's writer has for what it holds when the channel closes, unless told
# seconds past --shadow-timeout a call may go unanswered before its child is held to be hung:
# as long as a batch of pairs may keep the child busy (a retry on a fresh connection, after
# a stale one failed, takes well under it too)
LATE = BATCH_TIMEOUT


class ShadowCallLost(ShadowdiffError):
    """The pair process ended (or failed) during a shadow's call: the pair is the proxy's failure."""


def _frame(message: tuple[Any, ...]) -> bytes:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


class _Frames:
    """The messages in a byte stream, as they complete."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._buffer += data
        messages = []
        start = 0
        while len(self._buffer) - start >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(self._buffer, start)
            end = start + _LENGTH.size + length
            if len(self._buffer) < end:
                break
            messages.append(pickle.loads(memoryview(self._buffer)[start + _LENGTH.size:end]))
            start = end
        if start:
            del self._buffer[:start]
        return messages


class ShadowChannel:
    """The proxy's end: ``call`` sends a shadow's request to the pair process when it is
    ``ready``. ``attach`` is given each new child's socket (from any thread)."""

    def __init__(self, settings: ProxySettings, metrics: ProxyMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.calls = 0       # calls the pair process was given
        # what a reply is made around, as ``Mirror.failed`` in the child (only read: a reply's answer is a copy)
        self.failed = Answer(settings.shadow_side, settings.shadow_model)
        # called (in a thread of the default pool) when a child's channel is lost, unless this
        # one is closed: the pair process starts another without waiting for a pair to need it
        self.on_lost: Callable[[], None] | None = None
        # called (likewise) when a child has not answered a call within ``patience``: it ends it
        self.on_hung: Callable[[], None] | None = None
        self.patience = settings.shadow_timeout + LATE
        # told what the child's writer did (``Stats``), on the event loop
        self.on_stats: Callable[[Stats], None] | None = None
        # told (likewise) that a child ended while the channel was open (killed, or ended as
        # hung), with the last ``Stats`` it sent: the pairs its writer held are lost
        self.on_ended: Callable[[Stats], None] | None = None
        self.run_id: str | None = None    # the run the child stores pairs in (None: no store)
        self.budget = STOP_BUDGET          # the child's writer's time for what it holds, at the end
        self._loop: asyncio.AbstractEventLoop | None = None
        self._link: _Link | None = None
        self._closed = False

    def open(self) -> None:
        """(on the event loop, at start-up: before the first child is started)"""
        self._loop = asyncio.get_running_loop()

    @property
    def ready(self) -> bool:
        return self._link is not None and self._link.ready

    def attach(self, sock: socket.socket) -> None:
        """A new child's end of the channel (called by the pair process as it starts one)."""
        loop = self._loop
        if loop is None or self._closed:
            sock.close()
            return
        try:
            loop.call_soon_threadsafe(self._attach, sock)
        except RuntimeError:     # the event loop is closed
            sock.close()

    def _attach(self, sock: socket.socket) -> None:
        old, self._link = self._link, None
        if old is not None:
            old.close()
        if self._closed:
            sock.close()
            return
        link = self._link = _Link(self)
        assert self._loop is not None
        task = self._loop.create_task(self._loop.create_unix_connection(lambda: link, sock=sock))
        task.add_done_callback(functools.partial(_connected, link))

    def call(self, body: bytes, stream: bool, path: str, query: str, headers: list[tuple[bytes, bytes]],
             keep: Plan | None = None, answered: Callable[[], None] | None = None) -> asyncio.Future[Any]:
        """The shadow's answer, as ``Mirror.ask`` gives it, from the pair process (``ready``).

        With ``keep`` (the call's plan), the answer stays in the child, ``answered`` is
        called when it is in, and the future gives the pair's ``Made`` once ``pair`` has
        handed over the primary's answer."""
        link, loop = self._link, self._loop
        assert link is not None and loop is not None
        self.calls += 1
        original = None
        if keep is not None and keep.source and keep.body is not keep.source:
            original = keep.source        # (the body as the client sent it: the shadow's names another model)
        request = (body, stream, path, query, headers, keep is not None, original)
        return link.call(loop, request, answered)

    def kept(self, call: asyncio.Future[Any]) -> KeptCall:
        """The call just made (``call``, with ``keep``), for its ``pair``."""
        assert self._link is not None
        return KeptCall(call, self._link, self._link.last)


    def move(self, run_id: str | None) -> None:
        """(any thread) The proxy's run is now ``run_id``: the child stores its pairs there."""
        self.run_id = run_id
        loop = self._loop
        if loop is not None and not self._closed:
            with contextlib.suppress(RuntimeError):   # the event loop is closed
                loop.call_soon_threadsafe(self._tell_run)

    def _tell_run(self) -> None:
        if self._link is not None:
            self._link.send(("run", -1, self.run_id))

    def close(self, budget: float | None = None) -> None:
        """End the channel; the child's writer has ``budget`` seconds for the pairs it holds."""
        self._closed = True
        if budget is not None:
            self.budget = budget
        if self._link is not None:
            self._link.send(("stop", -1, self.budget))
            self._link.close()
            self._link = None

    def _lost(self, link: _Link) -> None:
        if link is self._link and not self._closed and self.on_lost is not None and self._loop is not None:
            log.warning("the pair process's channel for the shadow's calls closed; the proxy calls the shadow "
                        "itself until another is ready")
            self._loop.run_in_executor(None, self.on_lost)

    def _hung(self, link: _Link) -> None:
        if link is self._link and not self._closed and self.on_hung is not None and self._loop is not None:
            log.error("the pair process has not answered a shadow's call within %g s; it is ended, its calls lost",
                      self.patience)
            self._loop.run_in_executor(None, self.on_hung)
        link.close(at_once=True)

    def _retried(self, n: int) -> None:
        if n > 0:
            self.metrics.retries.labels(self.settings.shadow_side.value).inc(n)

    def _stats(self, stats: Stats) -> None:
        if self.on_stats is not None:
            self.on_stats(stats)

    def _ended(self, link: _Link) -> None:
        # (at the channel's close, the child writes what it holds: its exit status says if it did)
        told, link.told = link.told, Stats()    # (once: a link's end may be seen twice)
        if not self._closed and self.on_ended is not None:
            self.on_ended(told)


class KeptCall:
    """A shadow's call whose answer the pair process keeps, to make the pair of."""

    __slots__ = ("future", "link", "number")

    def __init__(self, future: asyncio.Future[Any], link: _Link, number: int) -> None:
        self.future, self.link, self.number = future, link, number

    def pair(self, key: str, seq: int, path: str, tapped: Tapped, kept: bool, stores: bool) -> asyncio.Future[Any]:
        """Hand the child the primary's answer: the call's future then gives the pair as
        made, ``(measured, stored, size)`` (``childpairs``), or raises ``PairFailed`` or
        ``ShadowCallLost``."""
        if not self.future.done():
            t = tapped
            self.link.pair(self.number, ((t.raw, t.status, t.stream, t.started, t.first, t.first_answer, t.ended,
                                          t.last), key, seq, path, kept, stores))
        return self.future


def _connected(link: _Link, task: asyncio.Task[Any]) -> None:
    """A child's channel that could not be set up is lost at once (the proxy calls the shadow itself)."""
    if task.cancelled() or task.exception() is not None:
        link.close()


class _Link(asyncio.Protocol):
    """One child's connection, on the proxy's event loop."""

    def __init__(self, channel: ShadowChannel) -> None:
        self.channel = channel
        self.ready = False
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.answered: dict[int, Callable[[], None]] = {}   # kept calls whose shadow has not answered
        # when each pending call is due, in the order they were sent (the first is the oldest);
        # a kept call is not due while the proxy has yet to send the primary's answer
        self._due: dict[int, float] = {}
        self._watch: asyncio.TimerHandle | None = None
        self._ids = itertools.count()
        self.last = -1           # the last call's number
        self._frames = _Frames()
        self._outbox: list[bytes] = []     # frames to write (``_write``)
        self._retries = 0        # the child's count so far
        self.told = Stats()      # the last stats of the child's writer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)   # (uvloop's is not a subclass)
        # (first of all: the child knows the run before any pair comes)
        self.send(("run", -1, self.channel.run_id))

    def data_received(self, data: bytes) -> None:
        try:
            messages = self._frames.feed(data)
        except Exception as exc:   # (a bug: the child wrote it)
            log.error("the pair process sent what cannot be read (%s); its shadow calls are lost", failure_text(exc))
            self.close()
            return
        for message in messages:
            if message == _READY:
                self.ready = True
                continue
            kind, call, rest = message
            if kind == "answered":
                self._due.pop(call, None)
                self._answered(call)
                continue
            if kind == "stats":
                self.told = Stats.from_parts(rest)
                self.channel._stats(self.told)
                continue
            future = self.pending.pop(call, None)
            self._due.pop(call, None)
            self._answered(call)
            if kind in ("reply", "made"):
                result, retries = rest
                # (a count taken earlier may come later: made pairs wait for their primaries)
                if retries > self._retries:
                    self.channel._retried(retries - self._retries)
                    self._retries = retries
                if future is not None and not future.done():
                    future.set_result(ShadowReply.from_parts(self.channel.failed, result) if kind == "reply"
                                      else result)
            elif future is None or future.done():
                pass
            elif kind == "failed":    # the pair could not be made: its failure, in one line
                future.set_exception(PairFailed(f"the pair process failed over this pair: {rest}"))
            else:   # "error": the child's failure, in one line
                future.set_exception(ShadowCallLost(f"the pair process failed over the shadow's call: {rest}"))

    def _answered(self, call: int) -> None:
        answered = self.answered.pop(call, None)
        if answered is not None:
            answered()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ready = False
        self.transport = None
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self.channel._lost(self)
        self.channel._ended(self)
        pending, self.pending = self.pending, {}
        self._due.clear()
        answered, self.answered = self.answered, {}
        for release in answered.values():
            release()
        for future in pending.values():
            if not future.done():
                future.set_exception(ShadowCallLost("the pair process ended during the shadow's call"))

    def call(self, loop: asyncio.AbstractEventLoop, request: tuple[Any, ...],
             answered: Callable[[], None] | None) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = loop.create_future()
        if self.transport is None or self.transport.is_closing():
            future.set_exception(ShadowCallLost("the pair process's channel closed before the shadow's call"))
            return future
        call = self.last = next(self._ids)
        self.pending[call] = future
        if answered is not None:
            self.answered[call] = answered
        self._due_in(loop, call)
        self._write(_frame(("call", call, request)))
        future.add_done_callback(lambda f: self._cancel(call) if f.cancelled() else None)
        return future

    def pair(self, call: int, parts: tuple[Any, ...]) -> None:
        """The primary's answer for a kept call: the child makes the pair."""
        if call in self.pending and self.transport is not None and not self.transport.is_closing():
            self._due_in(asyncio.get_running_loop(), call)
            self._write(_frame(("pair", call, parts)))

    def send(self, message: tuple[Any, ...]) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self._write(_frame(message))

    def _write(self, frame: bytes) -> None:
        """Written with the others of the next ``GATHER``: each write costs a system call and
        wakes the child, and at 400 requests a second one write per message was ~0.05 ms of
        the event loop's CPU a mirrored request (two messages each)."""
        if not self._outbox:
            asyncio.get_running_loop().call_later(GATHER_OUT, self._flush)
        self._outbox.append(frame)

    def _flush(self) -> None:
        outbox, self._outbox = self._outbox, []
        if outbox and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(outbox))

    def _due_in(self, loop: asyncio.AbstractEventLoop, call: int) -> None:
        self._due.pop(call, None)     # (re-entered last: the first is still the oldest)
        self._due[call] = loop.time() + self.channel.patience
        if self._watch is None:
            self._watch = loop.call_at(self._due[call], self._check)

    def _cancel(self, call: int) -> None:
        self._due.pop(call, None)
        self._answered(call)
        if self.pending.pop(call, None) is not None and self.transport is not None and \
                not self.transport.is_closing():
            self._write(_frame(("cancel", call, None)))   # (every message is kind, call, what)

    def _check(self) -> None:
        """(one timer for all the calls, at the oldest one's due time) Whether the child is hung."""
        self._watch = None
        if not self._due or self.transport is None:
            return
        oldest = next(iter(self._due.values()))
        loop = asyncio.get_running_loop()
        if oldest <= loop.time():
            self.channel._hung(self)
        else:
            self._watch = loop.call_at(oldest, self._check)

    def close(self, at_once: bool = False) -> None:
        """End the connection; ``connection_lost`` fails what is pending. ``at_once``: a hung
        child's, what was written to it not waited for."""
        self.ready = False     # (no call is given to a closing channel)
        if not at_once:
            self._flush()
        if self.transport is None:
            self.connection_lost(None)
        elif at_once:
            self.transport.abort()
        else:
            self.transport.close()


# -- the child's end -------------------------------------------------------------------


class Serving:
    """(in the pair process) The thread that calls the shadow for the proxy; ``complete``
    once it ended: whether its writer wrote everything it was given."""

    def __init__(self, fd: int, settings: ProxySettings) -> None:
        self.complete = True
        self.thread = threading.Thread(target=self._run, args=(fd, settings), name="shadowdiff-shadow-calls",
                                       daemon=True)
        self.thread.start()

    def join(self) -> bool:
        """Wait for the thread, which ends once its channel closed and its writer wrote what it
        held (within the budget the proxy gave it): whether it ended complete. Not bounded
        here: the proxy waits as long as it gave, then kills the child."""
        self.thread.join()
        return self.complete

    def _run(self, fd: int, settings: ProxySettings) -> None:
        """``serve`` on uvloop, the proxy's own event loop (uvicorn's), where it is installed."""
        # (what the child says - its writer's outages above all - reads as the proxy's own lines;
        # imported here: the server's module imports the app's, which imports this one)
        from shadowdiff.proxy.server import log_config

        config = log_config(settings, "warning")
        config["formatters"]["default"]["fmt"] = "%(levelprefix)s the pair process: %(message)s"
        logging.config.dictConfig(config)
        main = serve(fd, settings, self)
        try:
            import uvloop
        except ImportError:
            asyncio.run(main)
            return
        loop = uvloop.new_event_loop()
        try:
            loop.run_until_complete(main)
        finally:
            loop.close()


def serve_in_thread(fd: int, settings: ProxySettings) -> Serving:
    """(in the pair process) Call the shadow for the proxy, over the socket ``fd``, in a
    thread with an event loop of its own, until the proxy closes its end."""
    return Serving(fd, settings)


async def serve(fd: int, settings: ProxySettings, serving: Serving) -> None:
    loop = asyncio.get_running_loop()
    # (its own registry: the proxy counts what the child tells it)
    mirror = Mirror(settings, ProxyMetrics(CollectorRegistry(auto_describe=False)))
    mirror.open()
    ended: asyncio.Future[None] = loop.create_future()
    calls = _Calls(mirror, ended, settings)
    try:
        transport, _ = await loop.create_unix_connection(lambda: calls, sock=socket.socket(fileno=fd))
        transport.write(_frame(_READY))
        await ended
    finally:
        await mirror.close()
        serving.complete = await asyncio.to_thread(calls.pairs.close, calls.budget)


class _Kept:
    """A call whose pair the child makes: the request, then the shadow's answer and the primary's."""

    __slots__ = ("body", "headers", "original", "primary", "reply", "retries", "stream")

    def __init__(self, body: bytes, stream: bool, headers: list[tuple[bytes, bytes]], original: bytes | None) -> None:
        self.body, self.stream, self.headers, self.original = body, stream, headers, original
        self.reply: ShadowReply | None = None
        self.primary: tuple[Any, ...] | None = None
        self.retries = 0

    def inputs(self) -> PairInputs:
        """(in the thread making pairs: the request is parsed again there, not on the event loop)"""
        assert self.reply is not None and self.primary is not None
        tapped, key, seq, path, kept, stores = self.primary
        raw, status, stream, started, first, first_answer, ended, last = tapped
        source = self.original if self.original is not None else self.body
        request = orjson.loads(source)
        plan = Plan(self.body, request, self.stream, is_comparable(request), holds_slot=False, headers=self.headers,
                    source=source)
        return PairInputs(key, seq, path, plan, Tapped(raw, status, stream, started, first, first_answer, ended,
                                                        last=last), self.reply, None, kept, stores)


class _Calls(asyncio.Protocol):
    """The child's end: each call a task of its own, its reply written back when it ends
    (or, kept, its pair made and stored once the primary's answer is in too)."""

    def __init__(self, mirror: Mirror, ended: asyncio.Future[None], settings: ProxySettings) -> None:
        self.mirror = mirror
        self.ended = ended
        self.transport: asyncio.Transport | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.kept: dict[int, _Kept] = {}
        self.budget = STOP_BUDGET
        self._frames = _Frames()
        self._outbox: list[tuple[Any, ...]] = []    # replies to write (``_send``)
        self._loop = asyncio.get_running_loop()
        self.pairs = ChildPairs(Maker(MakerSettings.of(settings)), settings, self._send_from_thread)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)   # (uvloop's is not a subclass)

    def data_received(self, data: bytes) -> None:
        for kind, call, rest in self._frames.feed(data):
            if kind == "call":
                body, stream, path, query, headers, keep, original = rest
                if keep:
                    self.kept[call] = _Kept(body, stream, headers, original)
                task = self._loop.create_task(self._call(call, body, stream, path, query, headers))
                self.tasks[call] = task
                task.add_done_callback(functools.partial(self._ended, call))
            elif kind == "pair":
                kept = self.kept.get(call)
                if kept is not None:
                    kept.primary = rest
                    if kept.reply is not None:
                        self._make(call)
            elif kind == "cancel":
                self.kept.pop(call, None)
                cancelled = self.tasks.pop(call, None)
                if cancelled is not None:
                    cancelled.cancel()
            elif kind == "run":
                self.pairs.run(rest)
            elif kind == "stop":
                self.budget = rest
                hurry()     # (what the child holds is all the proxy now waits for)

    def _ended(self, call: int, _: asyncio.Task[None]) -> None:
        self.tasks.pop(call, None)

    async def _call(self, call: int, body: bytes, stream: bool, path: str, query: str,
                    headers: list[tuple[bytes, bytes]]) -> None:
        try:
            answer = await self.mirror.ask(body, stream, path, query, headers)
            kept = self.kept.get(call)
            if kept is not None:
                kept.reply, kept.retries = answer, int(self._retried())
                if kept.primary is not None:    # (the pair is made now: its reply gives the shadow's place back)
                    self._make(call)
                    return
                reply: tuple[Any, ...] = ("answered", call, None)
            else:
                reply = ("reply", call, (answer.parts(), int(self._retried())))
        except Exception as exc:   # (a bug: the proxy's failure, not the shadow's)
            self.kept.pop(call, None)
            reply = ("error", call, failure_text(exc))
        self._send([reply])

    def _make(self, call: int) -> None:
        kept = self.kept.pop(call)
        self.pairs.make(call, kept.inputs, kept.retries)

    def _send(self, replies: list[tuple[Any, ...]]) -> None:
        """Replies from the event loop, written together after ``GATHER`` (see ``_send_from_thread``)."""
        if not self._outbox:
            self._loop.call_later(GATHER, self._flush)
        self._outbox += replies

    def _flush(self) -> None:
        outbox, self._outbox = self._outbox, []
        if self.transport is not None:
            self.transport.write(_framed(outbox))

    def _send_from_thread(self, replies: list[tuple[Any, ...]]) -> None:
        """(the thread making pairs) Its replies, pickled there, written by the event loop."""
        data = _framed(replies)
        with contextlib.suppress(RuntimeError):    # the event loop is closed: the proxy is gone
            self._loop.call_soon_threadsafe(self._write, data)

    def _write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def _retried(self) -> float:
        upstream = self.mirror.upstream
        return 0.0 if upstream is None else upstream.retries._value.get()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.kept.clear()
        for task in list(self.tasks.values()):
            task.cancel()
        if not self.ended.done():
            self.ended.set_result(None)


def _framed(replies: list[tuple[Any, ...]]) -> bytes:
    """The replies framed; one that does not pickle (a bug, or a pair nested too deep to go
    back whole) is its call's failure, not the others'."""
    out = []
    for reply in replies:
        try:
            out.append(_frame(reply))
        except Exception as exc:
            out.append(_frame(("failed" if reply[0] == "made" else "error", reply[1], failure_text(exc))))
    return b"".join(out)

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
import functools
import itertools
import logging
import pickle
import socket
import struct
import threading
from collections.abc import Callable, Coroutine
from typing import Any, cast

from prometheus_client import CollectorRegistry

from shadowdiff.answers.records import Answer
from shadowdiff.answers.redact import failure_text
from shadowdiff.errors import ShadowdiffError
from shadowdiff.proxy.metrics import ProxyMetrics
from shadowdiff.proxy.pairprocess import BATCH_TIMEOUT
from shadowdiff.proxy.settings import ProxySettings
from shadowdiff.proxy.shadow import Mirror, ShadowReply

log = logging.getLogger("shadowdiff.proxy")

_LENGTH = struct.Struct("!I")
_READY = ("ready",)
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

    def call(self, body: bytes, stream: bool, path: str, query: str,
             headers: list[tuple[bytes, bytes]]) -> asyncio.Future[ShadowReply]:
        """The shadow's answer, as ``Mirror.ask`` gives it, from the pair process (``ready``)."""
        assert self._link is not None and self._loop is not None
        self.calls += 1
        return self._link.call(self._loop, (body, stream, path, query, headers))

    def close(self) -> None:
        self._closed = True
        if self._link is not None:
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
        self.pending: dict[int, asyncio.Future[ShadowReply]] = {}
        # when each pending call is due, in the order they were sent (the first is the oldest)
        self._due: dict[int, float] = {}
        self._watch: asyncio.TimerHandle | None = None
        self._ids = itertools.count()
        self._frames = _Frames()
        self._retries = 0        # the child's count so far

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)   # (uvloop's is not a subclass)

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
            future = self.pending.pop(call, None)
            self._due.pop(call, None)
            if kind == "reply":
                parts, retries = rest
                self.channel._retried(retries - self._retries)
                self._retries = retries
                if future is not None and not future.done():
                    future.set_result(ShadowReply.from_parts(self.channel.failed, parts))
            elif future is not None and not future.done():   # "error": the child's failure, in one line
                future.set_exception(ShadowCallLost(f"the pair process failed over the shadow's call: {rest}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.ready = False
        self.transport = None
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self.channel._lost(self)
        pending, self.pending = self.pending, {}
        self._due.clear()
        for future in pending.values():
            if not future.done():
                future.set_exception(ShadowCallLost("the pair process ended during the shadow's call"))

    def call(self, loop: asyncio.AbstractEventLoop,
             request: tuple[bytes, bool, str, str, list[tuple[bytes, bytes]]]) -> asyncio.Future[ShadowReply]:
        future: asyncio.Future[ShadowReply] = loop.create_future()
        if self.transport is None or self.transport.is_closing():
            future.set_exception(ShadowCallLost("the pair process's channel closed before the shadow's call"))
            return future
        call = next(self._ids)
        self.pending[call] = future
        self._due[call] = loop.time() + self.channel.patience
        if self._watch is None:
            self._watch = loop.call_at(self._due[call], self._check)
        self.transport.write(_frame(("call", call, request)))
        future.add_done_callback(lambda f: self._cancel(call) if f.cancelled() else None)
        return future

    def _cancel(self, call: int) -> None:
        self._due.pop(call, None)
        if self.pending.pop(call, None) is not None and self.transport is not None and \
                not self.transport.is_closing():
            self.transport.write(_frame(("cancel", call)))

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
        if self.transport is None:
            self.connection_lost(None)
        elif at_once:
            self.transport.abort()
        else:
            self.transport.close()


# -- the child's end -------------------------------------------------------------------


def serve_in_thread(fd: int, settings: ProxySettings) -> threading.Thread:
    """(in the pair process) Call the shadow for the proxy, over the socket ``fd``, in a
    thread with an event loop of its own, until the proxy closes its end."""
    thread = threading.Thread(target=_run, args=(serve(fd, settings),), name="shadowdiff-shadow-calls", daemon=True)
    thread.start()
    return thread


def _run(main: Coroutine[Any, Any, None]) -> None:
    """``main`` on uvloop, the proxy's own event loop (uvicorn's), where it is installed."""
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


async def serve(fd: int, settings: ProxySettings) -> None:
    loop = asyncio.get_running_loop()
    # (its own registry: the proxy counts what the child tells it)
    mirror = Mirror(settings, ProxyMetrics(CollectorRegistry(auto_describe=False)))
    mirror.open()
    ended: asyncio.Future[None] = loop.create_future()
    try:
        transport, _ = await loop.create_unix_connection(lambda: _Calls(mirror, ended),
                                                         sock=socket.socket(fileno=fd))
        transport.write(_frame(_READY))
        await ended
    finally:
        await mirror.close()


class _Calls(asyncio.Protocol):
    """The child's end: each call a task of its own, its reply written back when it ends."""

    def __init__(self, mirror: Mirror, ended: asyncio.Future[None]) -> None:
        self.mirror = mirror
        self.ended = ended
        self.transport: asyncio.Transport | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self._frames = _Frames()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)   # (uvloop's is not a subclass)

    def data_received(self, data: bytes) -> None:
        for message in self._frames.feed(data):
            if message[0] == "call":
                _, call, (body, stream, path, query, headers) = message
                task = asyncio.get_running_loop().create_task(self._call(call, body, stream, path, query, headers))
                self.tasks[call] = task
                task.add_done_callback(functools.partial(self._ended, call))
            elif message[0] == "cancel":
                cancelled = self.tasks.pop(message[1], None)
                if cancelled is not None:
                    cancelled.cancel()

    def _ended(self, call: int, _: asyncio.Task[None]) -> None:
        self.tasks.pop(call, None)

    async def _call(self, call: int, body: bytes, stream: bool, path: str, query: str,
                    headers: list[tuple[bytes, bytes]]) -> None:
        try:
            answer = await self.mirror.ask(body, stream, path, query, headers)
            reply: tuple[Any, ...] = ("reply", call, (answer.parts(), int(self._retried())))
        except Exception as exc:   # (a bug: the proxy's failure, not the shadow's)
            reply = ("error", call, failure_text(exc))
        if self.transport is not None:
            try:
                data = _frame(reply)
            except Exception as exc:   # (a reply that does not pickle: a bug)
                data = _frame(("error", call, failure_text(exc)))
            self.transport.write(data)

    def _retried(self) -> float:
        upstream = self.mirror.upstream
        return 0.0 if upstream is None else upstream.retries._value.get()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        for task in list(self.tasks.values()):
            task.cancel()
        if not self.ended.done():
            self.ended.set_result(None)

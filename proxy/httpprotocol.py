"""uvicorn's HTTP protocol, keeping what the ASGI scope loses of a request's target, and
letting the proxy end an answer it cannot complete without uvicorn's error line.

uvicorn splits the target at ``?`` and drops a query that is empty, so ``/v1/models?``
reaches an app as ``/v1/models`` (the scope's ``raw_path`` ends before the ``?``). The
proxy forwards a request as it was received: this protocol, which
``serve`` runs uvicorn with, marks a target that ended in ``?`` in the scope, under
``EMPTY_QUERY``, and the forwarder puts the ``?`` back.

When the primary fails mid-answer, the only way to tell the client is to close its
connection before the answer's end. ASGI has no message for that: an app returns
without finishing, and uvicorn closes the connection and logs "ASGI callable returned
without completing response.", with no method, path or cause. The forwarder logs its
own line, with them, and closes the connection through ``ABORT`` (in the scope): the
same close, which uvicorn then knows was meant.

uvicorn bounds the idle time between requests (``timeout_keep_alive``) but not the time a
client takes to send a request's head: a client that sends a header line now and then
(slowloris) holds its connection, and a socket, for as long as it likes. The protocol
closes a connection whose request head has not arrived whole within ``HEAD_TIMEOUT``
seconds of the connection, or of the request's first byte. (A constant of the class, not a
setting: ``--workers`` hands uvicorn's configuration, this class included, to processes
that import it by name.)

WebSocket is off (``ws="none"`` in ``shadowdiff.proxy.server``): with a WebSocket library installed,
uvicorn would take an upgrade request over and, at debug level, log its headers one a
line, cookies and tokens included; the proxy serves it as plain HTTP (an OpenAI server
has no WebSocket route), after one warning that ``shadowdiff.proxy.repeats`` keeps to one a minute,
and closes the connection after the answer (llhttp reads nothing more on it). An upgrade
request with a body (curl --http2's h2c POST) gets a 400: llhttp hands the body to no one.

uvicorn closes a kept-alive connection idle for ``timeout_keep_alive`` seconds
(``--client-idle-timeout``). After a stall across that deadline, a request may be waiting
unread on the connection: it is read and answered, not reset by the close.
"""

from __future__ import annotations

import asyncio
import select
import weakref
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

EMPTY_QUERY = "shadowdiff.empty_query"
ABORT = "shadowdiff.abort"


# Seconds a client may take to send a request's head (method, target, headers). Clients of
# an OpenAI server send theirs at once; nginx allows 60 s (client_header_timeout), Apache's
# mod_reqtimeout 20 to 40 s.
HEAD_TIMEOUT = 20.0


class TargetKeepingProtocol(HttpToolsProtocol):
    head_timeout = HEAD_TIMEOUT
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_timer is None:   # (a request after a kept-alive one: its own limit)
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def _unsupported_upgrade_warning(self) -> None:
        # (without uvicorn's advice to install a WebSocket library: the proxy forwards HTTP
        # only, by design; the request is served as plain HTTP)
        self.logger.warning("Unsupported upgrade request.")

    def timeout_keep_alive_handler(self) -> None:
        # A loop stalled past the deadline (a loaded host) runs its timers before it reads its
        # sockets (uvloop always; asyncio after SIGSTOP/SIGCONT): a request the client sent on
        # its pooled connection during the stall waits unread, and closing now would reset it.
        # The read comes first; an idle connection with nothing waiting still closes on time.
        if not self.transport.is_closing() and _bytes_waiting(self.transport):
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)
            return
        super().timeout_keep_alive_handler()

    def _arm_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._disarm_head_timer()
        upgrade = self.parser.should_upgrade()
        if upgrade and _has_body(self.headers):
            # llhttp hands the bytes after an upgrade request's head (h2c's POST from curl
            # --http2, CONNECT) to no one: the body would be lost and the request hang
            self.send_400_response("Upgrade requests with a body are not supported: send it without Upgrade.")
            return
        super().on_headers_complete()
        if upgrade and self.cycle is not None:
            self.cycle.keep_alive = False   # (nor does llhttp read a next request on the connection)
        # The request's task has been created but not run: the scope can still be told.
        scope = cast(dict[str, Any], self.scope)
        if self.url.endswith(b"?"):
            scope[EMPTY_QUERY] = True
        if self.cycle is not None and self.cycle.scope is self.scope:   # (not an upgrade)
            scope[ABORT] = _Abort(self.cycle)


def _has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    return any((name == b"content-length" and value.strip() not in (b"", b"0")) or name == b"transfer-encoding"
               for name, value in headers)


def _bytes_waiting(transport: asyncio.Transport) -> bool:
    """Whether the connection's socket holds bytes not yet read (a request, or the client's close)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    poller = select.poll()   # (not select.select: descriptors above 1023)
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


class _Abort:
    """Closes a request's connection before its answer is complete, as uvicorn does when
    an app returns early, but as a close the app meant: without uvicorn's error line."""

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self.cycle = weakref.ref(cycle)   # the cycle holds the scope, which holds this

    def __call__(self) -> None:
        cycle = self.cycle()
        if cycle is not None:
            cycle.disconnected = True   # what uvicorn checks before its line
            cycle.transport.close()

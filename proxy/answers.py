"""An upstream answer whose body broke off in a way aiohttp does not report.

When an answer's body is invalid HTTP after its head was read (a chunk size that is not
hex, data without its CRLF), aiohttp closes the connection and notes the error on the
connection, but on the answer's body only sometimes: when the bad bytes come in a later
read than the head, the body's reader is left waiting with no error, no end and no
read timeout (that is dropped with the error). Through the proxy 112 of 2,000 such
answers held their client until its own timeout, and a shadow its slot for
--shadow-timeout. ``guarded`` fails such a body as soon as the connection is closed.
"""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp.client_proto import ResponseHandler

from shadowdiff.answers.redact import failure_text


class BrokenAnswer(aiohttp.ClientError):
    """The upstream's answer was invalid HTTP after its head: counted as malformed (it is
    not a ClientPayloadError, which a shadow counts as a reset connection)."""


def guarded(response: aiohttp.ClientResponse) -> aiohttp.ClientResponse:
    """``response``, whose body fails with ``BrokenAnswer`` if its connection closes
    before the body's end with no error of its own."""
    connection = response.connection
    if connection is None or connection.protocol is None:   # the body is in already
        return response
    protocol = connection.protocol
    body = response.content
    closed = protocol.closed
    if closed is None:   # closed already
        _fail_unfinished(body, protocol)
        return response

    def on_close(future: asyncio.Future[None]) -> None:
        if not future.cancelled():
            future.exception()   # (retrieved: a reset connection's error is the body's already)
        _fail_unfinished(body, protocol)

    def on_end() -> None:
        # a kept-alive connection serves many answers: only the current one is watched
        closed.remove_done_callback(on_close)

    closed.add_done_callback(on_close)
    body.on_eof(on_end)
    return response


def _fail_unfinished(body: aiohttp.StreamReader, protocol: ResponseHandler) -> None:
    if body.is_eof() or body.exception() is not None:
        return
    cause = protocol.exception()
    why = failure_text(cause) if cause is not None else "the connection closed"
    body.set_exception(BrokenAnswer(f"invalid answer after its head: {why}"))

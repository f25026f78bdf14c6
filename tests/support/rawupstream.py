"""Raw asyncio upstreams on loopback, for proxy tests that need an upstream to do what no
well-behaved framework would (close kept-alive connections unannounced, cut a body), and
the pieces they are built of: reading a request, a minimal answer, a proxy whose start-up
probe is over."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from tests.support.proxying import wait_for

Start = Callable[..., Any]
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
ANSWER = (b'{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",'
          b'"content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,'
          b'"total_tokens":3}}')


@contextlib.contextmanager
def raw_server(handler: Handler) -> Iterator[str]:
    """Serve ``handler`` (one call per connection) from an asyncio loop in a thread."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def start() -> None:
        holder["server"] = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=1024)
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    assert ready.wait(10)
    port = holder["server"].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        async def stop() -> None:
            holder["server"].close()
            handlers = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter | None) -> tuple[bytes, bytes]:
    """The next request's head and (Content-Length or chunked) body. With ``writer``, a ``GET
    /health`` and a ``GET /version`` (the proxy's probes at start-up) are answered on the way
    (``/version`` with a 404, as a server that is not vLLM answers it) and not returned."""
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = [line.lower() for line in head.split(b"\r\n")]
        length = next((int(line.split(b":", 1)[1]) for line in lines if line.startswith(b"content-length:")), 0)
        body = await reader.readexactly(length) if length else b""
        if b"transfer-encoding: chunked" in lines:
            body = await read_chunks(reader)
        if writer is None or not head.startswith((b"GET /health ", b"GET /version ")):
            return head, body
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" if head.startswith(b"GET /health ")
                     else b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


async def read_chunks(reader: asyncio.StreamReader) -> bytes:
    """A chunked body (without trailers)."""
    body = b""
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        body += (await reader.readexactly(size + 2))[:-2]
    await reader.readuntil(b"\r\n")
    return body


def proxy_for(start_proxy: Start, **settings: Any) -> tuple[str, Any]:
    """A proxy whose probe of the upstreams at start-up is over: its /health requests
    must not mix with the requests a test counts."""
    proxy, app = start_proxy(**settings)
    wait_for(lambda: app.probe is not None and app.probe.done())
    return proxy, app


def answer(body: bytes = ANSWER, extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s"
            % (len(body), extra, body))


async def keep_answering(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A well-behaved upstream: every request on a connection gets the same answer."""
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        while True:
            await read_request(reader, writer)
            writer.write(answer())
            await writer.drain()
    writer.close()

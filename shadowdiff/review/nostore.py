"""``Cache-Control: no-store`` on every answer of the review UI.

Its pages show prompts and answers, its exports every verdict: none may stay in a
browser's or a proxy's cache, where Back after signing out (or the next user of a
shared machine) would find them. Set on the way out of the whole app, so that pages,
redirects, errors (503, 404, 405) and exports all carry it. (``Pragma: no-cache`` is
for HTTP/1.0 caches, which no browser of today is.)
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class NoStore:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, sending)

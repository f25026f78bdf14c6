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
"""

from __future__ import annotations

import weakref
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

EMPTY_QUERY = "shadowdiff.empty_query"
ABORT = "shadowdiff.abort"


class TargetKeepingProtocol(HttpToolsProtocol):
    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        # The request's task has been created but not run: the scope can still be told.
        scope = cast(dict[str, Any], self.scope)
        if self.url.endswith(b"?"):
            scope[EMPTY_QUERY] = True
        if self.cycle is not None and self.cycle.scope is self.scope:   # (not an upgrade)
            scope[ABORT] = _Abort(self.cycle)


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

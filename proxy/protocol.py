"""uvicorn's HTTP protocol, keeping what the ASGI scope loses of a request's target.

uvicorn splits the target at ``?`` and drops a query that is empty, so ``/v1/models?``
reaches an app as ``/v1/models`` (the scope's ``raw_path`` ends before the ``?``). The
proxy forwards a request as it was received (issue 16, B8): this protocol, which
``serve`` runs uvicorn with, marks a target that ended in ``?`` in the scope, under
``EMPTY_QUERY``, and the forwarder puts the ``?`` back.
"""

from __future__ import annotations

from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

EMPTY_QUERY = "shadowdiff.empty_query"


class TargetKeepingProtocol(HttpToolsProtocol):
    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        # The request's task has been created but not run: the scope can still be told.
        if self.url.endswith(b"?"):
            cast(dict[str, Any], self.scope)[EMPTY_QUERY] = True

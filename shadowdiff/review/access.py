"""The guard before every review route but sign-in and sign-out: who is asking, whether
they may, and the sign-in limit's answer to a client that guessed too often.

The guard finds the reviewer by a token in a header, a session cookie or (for the
shared token) the typed name, and leaves the identity in the request's scope for the
endpoint (``shadowdiff.review.state.identity``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from shadowdiff.review.cookies import typed_reviewer
from shadowdiff.review.ratelimit import Lockout
from shadowdiff.review.render import page, wants_html
from shadowdiff.review.state import IDENTITY, review_state

Endpoint = Callable[[Request], Awaitable[Response]]


def guarded(endpoint: Endpoint, admin: bool = False) -> Endpoint:
    """``endpoint`` for a signed-in reviewer (and with ``admin``, an admin) only."""

    async def guard(request: Request) -> Response:
        state = review_state(request)
        # a token in a header is a sign-in of its own: limited like the form's
        presented = _header_token(request)
        if presented and (lockout := state.limit.locked(client(request))):
            return locked_out(request, lockout)
        who = await run_in_threadpool(state.auth.identify, request.headers, request.cookies, typed_reviewer(request))
        if who is None:
            if presented:
                state.limit.failed(client(request))
            return _sign_in_first(request)
        request.scope[IDENTITY] = who
        if admin and not who.admin:
            # the exports name every reviewer's verdicts and the real sides
            message = "Only an admin may export or read every reviewer's verdicts."
            if wants_html(request):
                return page("message.html", request, status=403, message=message)
            return JSONResponse({"error": message}, status_code=403)
        return await endpoint(request)

    return guard


def locked_out(request: Request, lockout: Lockout) -> Response:
    """429 to a client the sign-in limit holds off: the sign-in form again, or JSON."""
    headers = {"retry-after": str(lockout.seconds)}
    if wants_html(request):
        response: Response = page("login.html", request, status=429, error=lockout.message())
        response.headers.update(headers)
        return response
    return JSONResponse({"error": lockout.message()}, status_code=429, headers=headers)


def client(request: Request) -> str | None:
    # (the client's address from X-Forwarded-For when the server trusts the proxy that sent it)
    return request.client.host if request.client else None


def _sign_in_first(request: Request) -> Response:
    if request.method == "GET" and wants_html(request):
        # back to this page once signed in (a report's link to a pair, say)
        there = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{review_state(request).prefix}/login?{urlencode({'next': there})}", status_code=303)
    return JSONResponse({"error": "a review token is required"}, status_code=401)


def _header_token(request: Request) -> bool:
    """Whether the request offers a review token in a header (not another scheme's
    Authorization, e.g. an ingress's Basic)."""
    scheme, _, _ = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" or "x-review-token" in request.headers

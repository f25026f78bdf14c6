"""The review UI's cookies: the session, and the name a shared-token holder typed.

Both are HttpOnly, under the app's prefix, Secure over HTTPS, and last as long as a
session (``shadowdiff.review.auth`` says what the session cookie holds).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote, unquote

from starlette.requests import Request
from starlette.responses import Response

from shadowdiff.review.auth import REVIEWER_COOKIE, SESSION_COOKIE, SESSION_SECONDS
from shadowdiff.review.state import review_state

# Lax, not Strict: a reviewer who follows a report's link to a pair (a top-level GET
# from another site, or from a file) arrives signed in. Nothing a GET does writes:
# every change is a POST, which Lax does not send cross-site, with a CSRF token and an
# Origin check besides.
SAME_SITE: Final = "lax"


def typed_reviewer(request: Request) -> str:
    """The name the reviewer cookie holds (empty when there is none)."""
    return unquote(request.cookies.get(REVIEWER_COOKIE, ""))


def set_session(response: Response, request: Request, session: str) -> None:
    _set(response, request, SESSION_COOKIE, session)


def set_reviewer(response: Response, request: Request, reviewer: str) -> None:
    # percent-encoded: a cookie holds bytes, and names are not all ASCII
    _set(response, request, REVIEWER_COOKIE, quote(reviewer[:255]))


def forget(response: Response, request: Request, *names: str) -> None:
    """Delete the cookies ``names`` (as they were set: a browser matches path and flags)."""
    for name in names:
        response.delete_cookie(name, path=review_state(request).prefix, httponly=True, samesite=SAME_SITE,
                               secure=request.url.scheme == "https")


def _set(response: Response, request: Request, name: str, value: str) -> None:
    response.set_cookie(name, value, max_age=SESSION_SECONDS, httponly=True, samesite=SAME_SITE,
                        path=review_state(request).prefix, secure=request.url.scheme == "https")

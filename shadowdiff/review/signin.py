"""Signing in to the review UI and out of it: the sign-in form, its post, and sign-out.

These routes are outside the guard (``shadowdiff.review.access``): nobody is signed in
yet, or a browser whose session a new token voided must still be able to forget it.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from shadowdiff.errors import InputError
from shadowdiff.review.access import client, locked_out
from shadowdiff.review.auth import REVIEWER_COOKIE, SESSION_COOKIE, Identity, same_origin
from shadowdiff.review.cookies import forget, set_reviewer, set_session
from shadowdiff.review.forms import own_origin, posted_form, refusal, text_field
from shadowdiff.review.render import page
from shadowdiff.review.state import review_state
from shadowdiff.store.reviewers import check_name


async def login_page(request: Request) -> Response:
    return page("login.html", request, next=after_login(request, request.query_params.get("next")))


async def sign_in(request: Request) -> Response:
    """The sign-in form's post: a session cookie and on to the page that asked, or the form again."""
    if lockout := review_state(request).limit.locked(client(request)):
        return locked_out(request, lockout)
    form = await request.form(max_files=0)
    opened = await _open(request, form)
    if isinstance(opened, Response):
        return opened
    who, session = opened
    response = RedirectResponse(after_login(request, text_field(form, "next")), status_code=303)
    set_session(response, request, session)
    if who.shared:
        set_reviewer(response, request, who.name)
    else:
        forget(response, request, REVIEWER_COOKIE)
    return response


async def sign_out(request: Request) -> Response:
    # A POST with the CSRF field, so that another site cannot sign a reviewer out;
    # not behind the token, so that a browser whose session a new token has voided
    # can still forget it. Signing out forgets the session in this browser; a
    # reviewer's sessions everywhere end when their token is reissued or revoked.
    try:
        await posted_form(request)
    except InputError as exc:
        return refusal(exc)
    response = RedirectResponse(f"{review_state(request).prefix}/login", status_code=303)
    forget(response, request, SESSION_COOKIE, REVIEWER_COOKIE)
    return response


def after_login(request: Request, target: str | None) -> str:
    """Where a sign-in goes: the page that asked for it when that is one of ours (a
    path under the prefix, never another site's address), else the queue."""
    prefix = review_state(request).prefix
    return target if target and _under(target, prefix) else f"{prefix}/"


async def _open(request: Request, form: FormData) -> tuple[Identity, str] | Response:
    """Who the form signs in and their session, or the form again saying why not."""
    origin = request.headers.get("origin")
    # (login has no CSRF token, as nobody is signed in yet; an opaque "null" origin -
    # a sandboxed frame - is refused too, so no page can sign a browser in as another)
    if origin and not same_origin(origin, own_origin(request)):
        return _login_again(request, form, 403, "this form did not come from the review UI")
    state = review_state(request)
    opened = await run_in_threadpool(state.auth.sign_in, text_field(form, "token"))
    if opened is None:
        state.limit.failed(client(request))
        return _login_again(request, form, 401, "wrong token")
    # (a success forgets no failure: else a reviewer could guess at another's token
    # nine times between sign-ins of their own, without limit)
    who, session = opened
    typed = text_field(form, "reviewer")
    if not who.shared:
        return who, session
    # single-reviewer mode: the name is typed, so it must not be a registered reviewer's
    try:
        name = check_name(typed)
    except InputError as exc:
        return _login_again(request, form, 400, f"{exc} (the shared token needs your name)")
    if await run_in_threadpool(state.reviewers.by_name, name) is not None:
        return _login_again(request, form, 400, f"{name!r} is a reviewer with a token of their own: sign in with it")
    return Identity(name, who.admin, True), session


def _login_again(request: Request, form: FormData, status: int, error: str) -> Response:
    """The sign-in form again, saying ``error``, still headed where it was."""
    return page("login.html", request, next=after_login(request, text_field(form, "next")), status=status,
                error=error)


def _under(target: str, prefix: str) -> bool:
    """Whether ``target`` is a plain path under ``prefix`` (and its query): no scheme or
    host, no control character (which a browser drops), and in its path, as written or
    percent-decoded once, nothing a browser would resolve elsewhere: a "." or ".."
    segment ("/review/..//evil.example" is "//evil.example"), "//" or a backslash (a "/"
    to a browser)."""
    if len(target) > 2000 or not target.startswith(f"{prefix}/"):
        return False
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or _has_control(target):
        return False
    return not any("//" in path or "\\" in path or _has_control(path) or {".", ".."} & set(path.split("/"))
                   for path in (parts.path, unquote(parts.path)))


def _has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)

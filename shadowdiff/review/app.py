"""The review UI: a queue ordered by priority, a blind side-by-side pair page, verdicts.

Served under ``/review`` by ``shadowdiff serve`` (next to the proxy, on the same
store) and by ``shadowdiff review STORE`` for replay stores. Pages are Jinja2
templates with autoescaping on: every prompt, answer, note and signal is model output
or user input, shown as text, never as markup. Database calls are synchronous and run
in Starlette's thread pool.

Until a reviewer has given a verdict on a pair, nothing on its page says which side
is which: the sides are letters (``shadowdiff.review.blind``), signal reasons are
rebuilt A first and the judge's in its letters (the page's), the queue shows the
judge's suggestion as the pair page does, and error texts (which name hosts) wait for
the reveal.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final
from urllib.parse import quote, unquote, urlencode, urlsplit

from jinja2 import ChoiceLoader, Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from shadowdiff.answers.invisible import add_filters
from shadowdiff.errors import InputError
from shadowdiff.report.diffview import sides_view
from shadowdiff.report.requestview import request_view
from shadowdiff.review.auth import REVIEWER_COOKIE, SESSION_COOKIE, SESSION_SECONDS, Auth, Identity, same_origin
from shadowdiff.review.blind import (
    QUEUE_KINDS,
    Blinding,
    blind,
    grade_view,
    judge_text,
    queue_kinds,
    score_view,
    shown_signals,
)
from shadowdiff.review.export import csv_export, jsonl_export
from shadowdiff.review.nostore import NoStore
from shadowdiff.review.ratelimit import Lockout, SignInLimit
from shadowdiff.store import Store
from shadowdiff.store.review import (
    MAX_NOTE,
    MAX_SEARCH,
    PROMPT_PREVIEW,
    Filters,
    Review,
    ReviewQueue,
    VerdictGiven,
    check_text,
)
from shadowdiff.store.reviewers import MAX_NAME, Reviewers, check_name
from shadowdiff.triage.signals import ONE_SIDED_KINDS
from shadowdiff.vocabulary import Side, Verdict

VERDICT_HELP = {
    Verdict.EQUIVALENT: "the same answer",
    Verdict.WORDING: "worded differently, same content",
    Verdict.MINOR: "one side is slightly worse (formatting, a repeated word, a cut): say which",
    Verdict.AMBIGUOUS: "equally defensible readings",
    Verdict.FACTUAL: "a fact or number one side gets wrong: say which",
    Verdict.IMPROVEMENT: "one side is clearly better, though no fact is wrong: say which",
}
# what the side asked with a directional verdict is, in the reviewer's words
SIDE_QUESTION = {Verdict.FACTUAL: "wrong", Verdict.MINOR: "worse", Verdict.IMPROVEMENT: "better"}
# What a redirect asks a page to say, by a code in its URL (``?error=`` on a pair page,
# ``?message=`` on the queue): never text from the URL, which any site can write into a
# link that a signed-in reviewer follows ("side A is the baseline here"); an unknown
# code says nothing. A saved verdict is announced by its id (``_saved_message``).
ERRORS: Final = {
    **{f"side-{v}": f"a {v} verdict says which side is {q}: A or B" for v, q in SIDE_QUESTION.items()},
    "verdict": f"choose a verdict: one of {', '.join(v.value for v in Verdict)}",
    "name": f"a verdict needs your name: at most {MAX_NAME} characters, none of them control or invisible "
            "characters (NUL, line breaks, bidi overrides, zero-width spaces)",
    "registered": "that name is a reviewer's with a token of their own: sign in with it, or give another",
    "note-long": f"the note is longer than {MAX_NOTE:,} characters: shorten it",
    "note-nul": "the note contains a NUL byte (\\0), which the store cannot hold",
    "refused": "the verdict was refused: nothing was saved",
}
MESSAGES: Final = {
    "nothing-left": "Nothing left to review.",
    "nothing-needed": "Nothing left that needs a verdict (equivalent and failed pairs are handed out when "
                      "the outcome filter asks for them).",
}
_MAX_ID = 2**31 - 1        # ids and offsets beyond the database's INTEGER are simply not there
# query parameters that belong to one view of a page (its offset, a message shown once),
# not to the filters that links, "next" and the redirects after a post carry along
_ONE_VIEW = ("offset", "message", "error", "saved")
SNIPPET = 120              # characters of a prompt the queue shows on its one line
_EXPORT_COLUMNS = ["id", "pair_id", "run_id", "key", "category", "outcome", "similarity", "suggested",
                   "judge_verdict", "reviewer", "verdict", "wrong_side", "note", "created_at", "after_reveal"]

Handler = Callable[[Request], Awaitable[Response]]

log = logging.getLogger("shadowdiff.review")


# Lax, not Strict: a reviewer who follows a report's link to a pair (a top-level GET
# from another site, or from a file) arrives signed in. Nothing a GET does writes:
# every change is a POST, which Lax does not send cross-site, with a CSRF token and an
# Origin check besides.
SAME_SITE: Final = "lax"


@functools.cache
def _environment() -> Environment:
    """The review's own pages, and the answer view it shares with report.html: compiled once
    a process, however many apps it builds. Shared by them all: nothing may change it once
    built; what differs per app or request (prefix, nonce, reviewer) goes in at render time."""
    loader = ChoiceLoader([PackageLoader("shadowdiff.review", "templates"),
                           PackageLoader("shadowdiff.report", "templates")])
    env = Environment(loader=loader, autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["side_words"] = side_words
    add_filters(env)
    return env


def build_review_app(store: Store, token: str, prefix: str = "/review", claim_ttl: float = 600.0,
                     sign_in_limit: SignInLimit | None = None) -> Starlette:
    """The review UI for ``store``, mounted at ``prefix``; ``token`` (the shared, admin
    token) opens it, as do the reviewers' own tokens (``shadowdiff reviewers``)."""
    reviewers = Reviewers(store)
    limit = sign_in_limit or SignInLimit()
    auth = Auth(token, reviewers, store.secret("session_key"))
    blinding = Blinding(store.secret("blind_key"))
    queue = ReviewQueue(store, claim_ttl=claim_ttl)
    env = _environment()

    def page(name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        who: Identity | None = request.scope.get("shadowdiff.identity")
        html = env.get_template(name).render(prefix=prefix, csrf=auth.csrf(request.cookies), verdicts=VERDICT_HELP,
                                             sides_asked=SIDE_QUESTION, nonce=nonce, who=who,
                                             reviewer=who.name if who else _reviewer(request),
                                             signed_in=who is not None, **context)
        response = HTMLResponse(html, status_code=status)
        # The pages embed model output. Escaping keeps it text; the policy is the second
        # wall: only the script carrying this response's nonce runs, nothing frames us.
        response.headers["content-security-policy"] = (
            f"default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        response.headers["x-content-type-options"] = "nosniff"
        # same-origin, not no-referrer: with no-referrer the browser sends "Origin: null"
        # on our own form posts, and the origin check could not tell them apart
        response.headers["referrer-policy"] = "same-origin"
        return response

    def set_reviewer(response: Response, request: Request, reviewer: str) -> None:
        # percent-encoded: a cookie holds bytes, and names are not all ASCII
        response.set_cookie(REVIEWER_COOKIE, quote(reviewer[:255]), max_age=SESSION_SECONDS, httponly=True,
                            samesite=SAME_SITE, path=prefix, secure=request.url.scheme == "https")

    def wants_html(request: Request) -> bool:
        return "text/html" in request.headers.get("accept", "")

    def locked_out(request: Request, lockout: Lockout) -> Response:
        headers = {"retry-after": str(lockout.seconds)}
        if wants_html(request):
            response: Response = page("login.html", request, status=429, error=lockout.message())
            response.headers.update(headers)
            return response
        return JSONResponse({"error": lockout.message()}, status_code=429, headers=headers)

    def guarded(handler: Handler, admin: bool = False) -> Handler:
        async def wrapper(request: Request) -> Response:
            # a token in a header is a sign-in of its own: limited like the form's
            presented = _header_token(request)
            if presented and (lockout := limit.locked(_client(request))):
                return locked_out(request, lockout)
            who = await run_in_threadpool(auth.identify, request.headers, request.cookies, _reviewer(request))
            if who is None:
                if presented:
                    limit.failed(_client(request))
                if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                    # back to this page once signed in (a report's link to a pair, say)
                    there = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    return RedirectResponse(f"{prefix}/login?{urlencode({'next': there})}", status_code=303)
                return JSONResponse({"error": "a review token is required"}, status_code=401)
            request.scope["shadowdiff.identity"] = who
            if admin and not who.admin:
                # the exports name every reviewer's verdicts and the real sides
                message = "Only an admin may export or read every reviewer's verdicts."
                if "text/html" in request.headers.get("accept", ""):
                    return page("message.html", request, status=403, message=message)
                return JSONResponse({"error": message}, status_code=403)
            return await handler(request)

        return wrapper

    def own_origin(request: Request) -> str:
        return f"{request.url.scheme}://{request.headers.get('host', '')}"

    async def form_of(request: Request) -> FormData:
        """The posted form, if it came from the UI itself (``InputError`` otherwise)."""
        form = await request.form(max_files=0)
        csrf = form.get("csrf")
        if not auth.csrf_ok(csrf if isinstance(csrf, str) else None, request.headers, request.cookies,
                            own_origin(request)):
            raise _Forbidden("this form did not come from the review UI (CSRF check failed)")
        return form

    def after_login(target: str | None) -> str:
        """Where a sign-in goes: the page that asked for it when that is one of ours (a
        path under the prefix, never another site's address), else the queue."""
        return target if target and _under(target, prefix) else f"{prefix}/"

    async def login(request: Request) -> Response:
        return page("login.html", request, next=after_login(request.query_params.get("next")))

    async def login_post(request: Request) -> Response:
        client = _client(request)
        if lockout := limit.locked(client):
            return locked_out(request, lockout)
        form = await request.form(max_files=0)

        def refused(status: int, error: str) -> Response:   # the form again, still headed where it was
            return page("login.html", request, next=after_login(_text(form, "next")), status=status, error=error)

        origin = request.headers.get("origin")
        # (login has no CSRF token, as nobody is signed in yet; an opaque "null" origin -
        # a sandboxed frame - is refused too, so no page can sign a browser in as another)
        if origin and not same_origin(origin, own_origin(request)):
            return refused(403, error="this form did not come from the review UI")
        opened = await run_in_threadpool(auth.sign_in, _text(form, "token"))
        if opened is None:
            limit.failed(client)
            return refused(401, error="wrong token")
        # (a success forgets no failure: else a reviewer could guess at another's token
        # nine times between sign-ins of their own, without limit)
        who, session = opened
        typed = _text(form, "reviewer")
        if who.shared:
            # single-reviewer mode: the name is typed, so it must not be a registered reviewer's
            try:
                name = check_name(typed)
            except InputError as exc:
                return refused(400, error=f"{exc} (the shared token needs your name)")
            if await run_in_threadpool(reviewers.by_name, name) is not None:
                return refused(400, error=f"{name!r} is a reviewer with a token of their own: sign in with it")
            who = Identity(name, who.admin, True)
        response = RedirectResponse(after_login(_text(form, "next")), status_code=303)
        response.set_cookie(SESSION_COOKIE, session, max_age=SESSION_SECONDS, httponly=True,
                            samesite=SAME_SITE, path=prefix, secure=request.url.scheme == "https")
        if who.shared:
            set_reviewer(response, request, who.name)
        else:
            response.delete_cookie(REVIEWER_COOKIE, path=prefix, httponly=True, samesite=SAME_SITE,
                                   secure=request.url.scheme == "https")
        return response

    async def logout_post(request: Request) -> Response:
        # A POST with the CSRF field, so that another site cannot sign a reviewer out;
        # not behind the token, so that a browser whose session a new token has voided
        # can still forget it. Signing out forgets the session in this browser; a
        # reviewer's sessions everywhere end when their token is reissued or revoked.
        try:
            await form_of(request)
        except InputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=403 if isinstance(exc, _Forbidden) else 400)
        response = RedirectResponse(f"{prefix}/login", status_code=303)
        for name in (SESSION_COOKIE, REVIEWER_COOKIE):
            response.delete_cookie(name, path=prefix, httponly=True, samesite=SAME_SITE,
                                   secure=request.url.scheme == "https")
        return response

    async def writing_as(who: Identity, typed: str) -> str:
        """The name a verdict or a claim is written under: an issued identity's is the
        server's; only the shared token's holder types one, and never a registered one."""
        if not who.shared:
            return who.name
        try:
            name = check_name(typed)
        except InputError as exc:
            raise _Refused("name", str(exc)) from None
        if await run_in_threadpool(reviewers.by_name, name) is not None:
            raise _Refused("registered", f"{name!r} is a reviewer with a token of their own")
        return name

    def identity(request: Request) -> Identity:
        who: Identity = request.scope["shadowdiff.identity"]
        return who

    def filters(request: Request) -> Filters:
        q = request.query_params
        who = identity(request)
        if q.get("signal") in ONE_SIDED_KINDS:
            raise InputError(f"the queue does not filter by {q['signal']}: it is one side's figure, shown on a pair's "
                             "page after your verdict; the report lists those pairs (choose another signal)")
        return Filters(run_id=q.get("run") or None, outcome=q.get("outcome") or None,
                       suggested=q.get("suggested") or None, signal=q.get("signal") or None,
                       verdict=q.get("verdict") or None, search=q.get("q") or None,
                       unreviewed=q.get("unreviewed") == "1",
                       mine=q.get("mine") == "1", second=q.get("second") == "1",
                       # a reviewer reads their own verdicts only; an admin, everyone's
                       viewer=who.name or None, all_verdicts=who.admin)

    def filter_query(request: Request, **more: str) -> str:
        """The request's filters as a query string, with ``more``: ``_ONE_VIEW`` left out, and
        the filter form's empty fields (any), so that links stay short."""
        return urlencode({**{k: v for k, v in request.query_params.items() if v and k not in _ONE_VIEW}, **more})

    def to_page(path: str, request: Request, **more: str) -> RedirectResponse:
        """303 to ``path`` with the request's filters (and ``more``): a search or filter
        outlives a verdict or a claim, so next/previous still walk what it selects."""
        query = filter_query(request, **more)
        return RedirectResponse(f"{prefix}{path}{'?' if query else ''}{query}", status_code=303)

    def index(request: Request) -> Response:
        f = filters(request)
        offset = _bounded_int(request.query_params.get("offset", "0"))
        rows = queue.page(f, offset=offset, limit=50)
        for row in rows:
            row["signal_kinds"] = queue_kinds(row["signals"])
            # the judge's word as on the pair page: the raw one beside it would give the side away
            verdict, worse = row.pop("judge_verdict"), row.pop("judge_wrong_side")
            row["judge"] = judge_text(verdict, worse, blinding.a_is_baseline(row["id"])) if verdict else ""
            row["snippet"], row["prompt"] = _snippet(row["prompt"])
        return page("queue.html", request, rows=rows, signal_kinds=QUEUE_KINDS, counts=queue.counts(f),
                    runs=store.runs(), f=f, offset=offset, query=filter_query(request), max_search=MAX_SEARCH,
                    message=MESSAGES.get(request.query_params.get("message", "")))

    def pair_page(request: Request) -> Response:
        return pair_response(request, int(request.path_params["pair_id"]))

    def pair_response(request: Request, pair_id: int, status: int = 200, refused: str | None = None) -> Response:
        """The pair page; ``refused``: why a post was refused, said on it (with ``status``)."""
        pair = queue.pair(pair_id) if pair_id <= _MAX_ID else None
        if pair is None:
            return page("message.html", request, status=404, message=f"No pair {pair_id}.")
        a_is_baseline = blinding.a_is_baseline(pair_id)
        base, cand = pair.answers.get(Side.BASELINE), pair.answers.get(Side.CANDIDATE)
        a, b = (base, cand) if a_is_baseline else (cand, base)
        # marked in the page's order: the diff breaks ties one way, which must not point at the baseline
        view = sides_view(a, b)
        sides = [("A", a), ("B", b)]
        who = identity(request)
        reviews = queue.reviews(pair_id)
        saved = _saved_message(request.query_params.get("saved"), reviews, who.name, pair["key"])
        # revealed once this reviewer has judged the pair, and never by a query parameter;
        # then they see their own verdicts, and an admin everyone's, and no form: their
        # first verdict is final (another, given knowing the sides, is refused)
        revealed = bool(who.name) and any(r.reviewer == who.name for r in reviews)
        reviews = [r for r in reviews if who.admin or r.reviewer == who.name]
        before, after = queue.neighbours(pair_id, filters(request))
        # one side's figures (the margin, the token agreement, a cascade) wait for the reveal
        signals = shown_signals(pair["signals"], a_is_baseline, revealed)
        return page("pair.html", request, pair=pair, sides=sides, view=view, asked=request_view(pair["request"]),
                    signals=signals, reviews=reviews,
                    revealed=revealed, a_is_baseline=a_is_baseline, before=before, after=after,
                    judge=_judge_view(pair.row, blinding, pair_id, revealed), query=filter_query(request),
                    grade=grade_view(pair["grade"], a_is_baseline),
                    agreement=score_view(pair["score"], pair["noise_score"]) if revealed else None,
                    error=refused or ERRORS.get(request.query_params.get("error", "")), saved=saved,
                    status=status)

    async def verdict_post(request: Request) -> Response:
        pair_id = int(request.path_params["pair_id"])
        try:
            form = await form_of(request)
            who = identity(request)
            reviewer = await writing_as(who, _text(form, "reviewer") or who.name)
            note = _checked_note(_text(form, "note"))
            verdict = _text(form, "verdict")
            # "wrong" is the field's name from before every directional verdict had a side
            letter = (_text(form, "side") or _text(form, "wrong")).strip().upper()
            against = _side_against(verdict, letter, blinding, pair_id)
            if pair_id > _MAX_ID:
                raise InputError(f"no pair {pair_id}")
            # the session's own name too: a shared-token holder whose page revealed the pair
            # under one name must not judge it again by typing another into the form
            review = await run_in_threadpool(queue.add_review, pair_id, reviewer, verdict, against, note,
                                             [who.name] if who.name else [])
        except VerdictGiven as exc:
            # 409, not the 303 back to the page of other refusals: a script must not read it as saved
            if wants_html(request):
                return await run_in_threadpool(pair_response, request, pair_id, 409, str(exc))
            return JSONResponse({"error": str(exc)}, status_code=409)
        except InputError as exc:
            status = 403 if isinstance(exc, _Forbidden) else 404 if str(exc).startswith("no pair") else 400
            if status == 400 and "text/html" in request.headers.get("accept", ""):
                # the reason by its code (ERRORS): the page never shows the URL's own text
                return to_page(f"/pairs/{pair_id}", request, error=exc.code if isinstance(exc, _Refused) else "refused")
            return JSONResponse({"error": str(exc)}, status_code=status)
        # the page says it was saved: by the verdict's id, which the page looks up (a link
        # cannot make it claim a verdict that is not there, nor carry text of its own)
        response = to_page(f"/pairs/{pair_id}", request, saved=str(review.id))
        if who.shared and "text/html" in request.headers.get("accept", ""):
            set_reviewer(response, request, reviewer)
        return response

    async def next_post(request: Request) -> Response:
        try:
            form = await form_of(request)
        except InputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=403 if isinstance(exc, _Forbidden) else 400)
        who = identity(request)
        try:
            # (a claim shows as "with NAME" and comes back to NAME first: never a registered one's)
            reviewer = await writing_as(who, who.name or _text(form, "reviewer") or "anonymous")
        except InputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        pair_id = await run_in_threadpool(queue.claim_next, reviewer, filters(request))
        if pair_id is None:
            return to_page("/", request, message="nothing-left" if filters(request).outcome else "nothing-needed")
        return to_page(f"/pairs/{pair_id}", request)

    # whole before their first byte is sent: a database error is the 503 below (review.export)
    def export_csv(request: Request) -> Response:
        return csv_export(queue.export(request.query_params.get("run") or None), _EXPORT_COLUMNS)

    def export_jsonl(request: Request) -> Response:
        return jsonl_export(queue.export(request.query_params.get("run") or None))

    def in_thread(handler: Callable[[Request], Response]) -> Handler:
        async def wrapper(request: Request) -> Response:
            return await run_in_threadpool(handler, request)

        return wrapper

    async def to_index(request: Request) -> Response:
        return RedirectResponse(f"{prefix}/", status_code=307)

    routes = [
        Route(f"{prefix}/login", login, methods=["GET"]),
        Route(f"{prefix}/login", login_post, methods=["POST"]),
        Route(f"{prefix}/logout", logout_post, methods=["POST"]),
        Route(f"{prefix}/", guarded(in_thread(index)), methods=["GET"]),
        Route(f"{prefix}", to_index),
        Route(f"{prefix}/pairs/{{pair_id:int}}", guarded(in_thread(pair_page)), methods=["GET"]),
        Route(f"{prefix}/pairs/{{pair_id:int}}/verdict", guarded(verdict_post), methods=["POST"]),
        Route(f"{prefix}/next", guarded(next_post), methods=["POST"]),
        Route(f"{prefix}/export.csv", guarded(in_thread(export_csv), admin=True), methods=["GET"]),
        Route(f"{prefix}/export.jsonl", guarded(in_thread(export_jsonl), admin=True), methods=["GET"]),
    ]
    async def store_unavailable(request: Request, exc: Exception) -> Response:
        # the store slow or down (a lock, a restart): a short answer and one line, not a
        # 500 with a hundred lines of traceback per page load
        log.warning("review UI: the store did not answer %s (%s)", request.url.path, type(exc).__name__)
        return PlainTextResponse("The store is not answering (slow or down); try again in a moment.",
                                 status_code=503, headers={"Retry-After": "5"})

    async def input_refused(request: Request, exc: Exception) -> Response:
        # what the store refuses (a NUL byte, a name or filter too long): the reviewer's to fix
        status = 403 if isinstance(exc, _Forbidden) else 400
        if wants_html(request):
            return page("message.html", request, status=status, message=str(exc))
        return JSONResponse({"error": str(exc)}, status_code=status)

    return Starlette(routes=routes, middleware=[Middleware(NoStore)],
                     exception_handlers={OperationalError: store_unavailable, PoolTimeout: store_unavailable,
                                         InputError: input_refused})


class _Forbidden(InputError):
    """A form that did not come from the UI."""


class _Refused(InputError):
    """A verdict refused for a reason the pair page names by ``code`` (a key of ``ERRORS``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _checked_note(note: str) -> str:
    """``note`` if the store can hold it, else ``_Refused`` with the store's reason."""
    try:
        check_text("the note", note, MAX_NOTE)
    except InputError as exc:
        raise _Refused("note-nul" if "\x00" in note else "note-long", str(exc)) from None
    return note


def _reviewer(request: Request) -> str:
    return unquote(request.cookies.get(REVIEWER_COOKIE, ""))


def _client(request: Request) -> str | None:
    # (the client's address from X-Forwarded-For when the server trusts the proxy that sent it)
    return request.client.host if request.client else None


def _header_token(request: Request) -> bool:
    """Whether the request offers a review token in a header (not another scheme's
    Authorization, e.g. an ingress's Basic)."""
    scheme, _, _ = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" or "x-review-token" in request.headers


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{name} must be text, not a file")
    return value


def side_words(review: Any) -> str:
    """A verdict's side in words, on the real sides: "candidate wrong", "baseline better"."""
    against = Side(review.wrong_side)
    if review.verdict is Verdict.IMPROVEMENT:
        return f"{(Side.CANDIDATE if against is Side.BASELINE else Side.BASELINE).value} better"
    return f"{against.value} {'wrong' if review.verdict is Verdict.FACTUAL else 'worse'}"


def _side_against(verdict: str, letter: str, blinding: Blinding, pair_id: int) -> str | None:
    """The side (baseline or candidate) a verdict goes against, from the letter the
    reviewer chose: the wrong or worse side, or for ``improvement`` the one not chosen
    as better. ``InputError``, in the reviewer's terms, when a directional verdict has none."""
    try:
        checked = Verdict(verdict)
    except ValueError:
        raise _Refused("verdict", f"unknown verdict {verdict!r}; one of {', '.join(v.value for v in Verdict)}") \
            from None
    if not checked.directional:
        return None    # a side left checked from an earlier choice means nothing here
    if letter not in ("A", "B"):
        # said in the page's letters: the store's message would name the hidden sides
        raise _Refused(f"side-{checked.value}", ERRORS[f"side-{checked.value}"])
    chosen = blinding.side(letter, pair_id)
    if checked is Verdict.IMPROVEMENT:
        return (Side.CANDIDATE if chosen is Side.BASELINE else Side.BASELINE).value
    return chosen.value


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


def _bounded_int(text: str | None) -> int:
    text = text or "0"
    return min(int(text), _MAX_ID) if text.isascii() and text.isdigit() else 0


def _snippet(prompt: str) -> tuple[str, str]:
    """A prompt's first ``SNIPPET`` characters on one line (whitespace runs as one space),
    and the start the queue read (``PROMPT_PREVIEW`` characters) for its tooltip; each
    ends in "…" where the prompt goes on."""
    line = " ".join(prompt.split())
    start = prompt[:PROMPT_PREVIEW] + ("…" if len(prompt) > PROMPT_PREVIEW else "")
    return (line[:SNIPPET].rstrip() + "…" if len(line) > SNIPPET else line), start


def _saved_message(saved: str | None, reviews: list[Review], reviewer: str, key: str) -> Markup | None:
    """"Verdict saved for pair KEY: VERDICT" for the verdict ``saved`` names (its id, put
    there by the redirect after the post) if it is ``reviewer``'s on this pair, else nothing."""
    if not (saved and saved.isascii() and saved.isdigit()):
        return None
    for review in reviews:
        if review.id == int(saved) and review.reviewer == reviewer:
            side = f" ({side_words(review)})" if review.wrong_side else ""
            # the key is the log's: isolated, no bidi character in it reorders the message
            return Markup("Verdict saved for pair <bdi>{}</bdi>: {}{}.").format(key, review.verdict.value, side)
    return None


def _judge_view(row: dict[str, Any], blinding: Blinding, pair_id: int, revealed: bool) -> dict[str, Any] | None:
    """The judge's suggestion as the reviewer may see it (``judge_text``).

    The judge saw the answers as A and B in this page's order (``shadowdiff.review.judge``), so
    its reason is shown in its own letters. Reasons stored by earlier builds named the
    sides, and their letters followed another order, computable from the pair's key:
    they wait for the reveal (``shadowdiff judge --redo`` asks again).
    """
    verdict = row["judge_verdict"]
    if not verdict:
        return None
    a_is_baseline = blinding.a_is_baseline(pair_id)
    reason = row["judge_reason"] or ""
    if not row.get("judge_blind") and reason:
        reason = (f"{reason} (given before the judge saw the answers in this page's order: its letters may be "
                  "the other way round)") if revealed else ("(the reason is shown after your verdict: it was given "
                                                            "before the judge saw the answers in this page's order)")
    return {"text": judge_text(verdict, row["judge_wrong_side"], a_is_baseline, revealed), "reason": reason}


__all__ = ["Verdict", "blind", "build_review_app"]

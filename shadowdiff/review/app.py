"""The review UI: a queue ordered by priority, a blind side-by-side pair page, verdicts.

Served under ``/review`` by ``shadowdiff serve`` (next to the proxy, on the same
store) and by ``shadowdiff review STORE`` for replay stores. ``build_review_app`` puts
the parts together: the state the endpoints share (``shadowdiff.review.state``), the
routes to them - the pages (``.pages``), sign-in (``.signin``), verdicts, claims and
exports (``.api``), behind the guard (``.access``) - the no-store middleware and the
answers to a store that does not answer or input it refuses. Database calls are
synchronous and run in Starlette's thread pool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from shadowdiff.errors import InputError
from shadowdiff.review import api, pages, signin
from shadowdiff.review.access import Endpoint, guarded
from shadowdiff.review.auth import Auth
from shadowdiff.review.blind import Blinding, blind
from shadowdiff.review.forms import refusal, status_of
from shadowdiff.review.nostore import NoStore
from shadowdiff.review.ratelimit import SignInLimit
from shadowdiff.review.render import page, templates, wants_html
from shadowdiff.review.state import ReviewState, review_state
from shadowdiff.store import Store
from shadowdiff.store.review import ReviewQueue
from shadowdiff.store.reviewers import Reviewers
from shadowdiff.vocabulary import Verdict

log = logging.getLogger("shadowdiff.review")


def build_review_app(store: Store, token: str, prefix: str = "/review", claim_ttl: float = 600.0,
                     sign_in_limit: SignInLimit | None = None) -> Starlette:
    """The review UI for ``store``, mounted at ``prefix``; ``token`` (the shared, admin
    token) opens it, as do the reviewers' own tokens (``shadowdiff reviewers``)."""
    reviewers = Reviewers(store)
    state = ReviewState(store=store, prefix=prefix, reviewers=reviewers,
                        auth=Auth(token, reviewers, store.secret("session_key")),
                        limit=sign_in_limit or SignInLimit(), blinding=Blinding(store.secret("blind_key")),
                        queue=ReviewQueue(store, claim_ttl=claim_ttl), templates=templates())
    routes = [
        Route(f"{prefix}/login", signin.login_page, methods=["GET"]),
        Route(f"{prefix}/login", signin.sign_in, methods=["POST"]),
        Route(f"{prefix}/logout", signin.sign_out, methods=["POST"]),
        Route(f"{prefix}/", guarded(in_thread(pages.queue_page)), methods=["GET"]),
        Route(f"{prefix}", to_index),
        # (the address `shadowdiff review` prints is the host's root: the UI is under its prefix)
        *([Route("/", to_index, methods=["GET"])] if prefix else []),
        Route(f"{prefix}/pairs/{{pair_id:int}}", guarded(in_thread(pages.pair_page)), methods=["GET"]),
        Route(f"{prefix}/pairs/{{pair_id:int}}/verdict", guarded(api.give_verdict), methods=["POST"]),
        Route(f"{prefix}/next", guarded(api.claim_next), methods=["POST"]),
        Route(f"{prefix}/export.csv", guarded(in_thread(api.export_csv), admin=True), methods=["GET"]),
        Route(f"{prefix}/export.jsonl", guarded(in_thread(api.export_jsonl), admin=True), methods=["GET"]),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(NoStore)],
                    exception_handlers={OperationalError: store_unavailable, PoolTimeout: store_unavailable,
                                        InputError: input_refused})
    app.state.review = state
    return app


def in_thread(endpoint: Callable[[Request], Response]) -> Endpoint:
    """``endpoint``, which reads the database, run in the thread pool (off the event loop)."""

    async def threaded(request: Request) -> Response:
        return await run_in_threadpool(endpoint, request)

    return threaded


async def to_index(request: Request) -> Response:
    return RedirectResponse(f"{review_state(request).prefix}/", status_code=307)


async def store_unavailable(request: Request, exc: Exception) -> Response:
    # the store slow or down (a lock, a restart): a short answer and one line, not a
    # 500 with a hundred lines of traceback per page load
    log.warning("review UI: the store did not answer %s (%s)", request.url.path, type(exc).__name__)
    return PlainTextResponse("The store is not answering (slow or down); try again in a moment.",
                             status_code=503, headers={"Retry-After": "5"})


async def input_refused(request: Request, exc: Exception) -> Response:
    # what the store refuses (a NUL byte, a name or filter too long): the reviewer's to fix
    if wants_html(request):
        return page("message.html", request, status=status_of(exc), message=str(exc))
    return refusal(exc)


__all__ = ["Verdict", "blind", "build_review_app"]

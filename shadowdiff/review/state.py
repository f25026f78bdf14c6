"""What the review UI's endpoints share: one ``ReviewState`` per app, and who is asking.

``build_review_app`` makes the state once and keeps it on ``app.state``; the endpoints
(``shadowdiff.review.pages``, ``.signin``, ``.api``) are module-level functions that
read it from the request (``review_state``), as they read the reviewer the sign-in
guard (``shadowdiff.review.access``) found (``identity``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from jinja2 import Environment
from starlette.requests import Request

from shadowdiff.review.auth import Auth, Identity
from shadowdiff.review.blind import Blinding
from shadowdiff.review.ratelimit import SignInLimit
from shadowdiff.store import Store
from shadowdiff.store.review import ReviewQueue
from shadowdiff.store.reviewers import Reviewers

# where the guard leaves the identity in the request's scope, for the endpoint and its page
IDENTITY: Final = "shadowdiff.identity"


@dataclass(frozen=True)
class ReviewState:
    """One review app's store and what is built on it, and the path it is served under."""

    store: Store
    prefix: str              # the URL path every route, link and cookie is under ("/review")
    reviewers: Reviewers
    auth: Auth
    limit: SignInLimit       # failed sign-ins, by client and overall
    blinding: Blinding       # which side is A on each pair's page
    queue: ReviewQueue
    templates: Environment   # shared by every app: nothing may change it (``render.templates``)


def review_state(request: Request) -> ReviewState:
    """The state of the app serving ``request``."""
    state: ReviewState = request.app.state.review
    return state


def identity(request: Request) -> Identity:
    """Who is asking, on a route behind the guard."""
    who: Identity = request.scope[IDENTITY]
    return who


def signed_in(request: Request) -> Identity | None:
    """Who is asking, or None where the guard has not (yet) said: the sign-in page, a refusal."""
    who: Identity | None = request.scope.get(IDENTITY)
    return who

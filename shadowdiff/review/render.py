"""The review UI's pages as HTML: its templates, what every page is told, and the headers
every page carries.

Templates autoescape: every prompt, answer, note and signal is model output or user
input, shown as text, never as markup; the content security policy is the second wall.
"""

from __future__ import annotations

import functools
import secrets
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from shadowdiff.answers.invisible import add_filters
from shadowdiff.review.cookies import typed_reviewer
from shadowdiff.review.state import review_state, signed_in
from shadowdiff.vocabulary import Outcome, Side, Verdict

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


@functools.cache
def templates() -> Environment:
    """The review's own pages, and the answer view it shares with report.html: compiled once
    a process, however many apps it builds. Shared by them all: nothing may change it once
    built; what differs per app or request (prefix, nonce, reviewer) goes in at render time."""
    loader = ChoiceLoader([PackageLoader("shadowdiff.review", "templates"),
                           PackageLoader("shadowdiff.report", "templates")])
    env = Environment(loader=loader, autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["side_words"] = side_words
    add_filters(env)
    env.globals["Outcome"] = Outcome   # the templates compare outcomes as members, as the code does
    return env


def page(name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` as the answer to ``request``, with ``context`` and what every
    page is told (the prefix, the form's CSRF token, the rubric, who is asking)."""
    state = review_state(request)
    nonce = secrets.token_urlsafe(16)
    who = signed_in(request)
    html = state.templates.get_template(name).render(
        prefix=state.prefix, csrf=state.auth.csrf(request.cookies), verdicts=VERDICT_HELP,
        sides_asked=SIDE_QUESTION, nonce=nonce, who=who, reviewer=who.name if who else typed_reviewer(request),
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


def wants_html(request: Request) -> bool:
    """Whether the caller is a browser (a page in answer), not a script (JSON)."""
    return "text/html" in request.headers.get("accept", "")


def side_words(review: Any) -> str:
    """A verdict's side in words, on the real sides: "candidate wrong", "baseline better"."""
    against = Side(review.wrong_side)
    if review.verdict is Verdict.IMPROVEMENT:
        return f"{(Side.CANDIDATE if against is Side.BASELINE else Side.BASELINE).value} better"
    return f"{against.value} {'wrong' if review.verdict is Verdict.FACTUAL else 'worse'}"

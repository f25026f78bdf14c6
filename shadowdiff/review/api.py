"""What the review UI writes and hands out: a verdict, a claim on the next pair, and
every verdict as CSV or JSON lines.

A browser's post is answered with a redirect (303) back to a page, a script's with
JSON; a refusal a page can explain goes back to it by code (``forms.ERRORS``).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from shadowdiff.errors import InputError
from shadowdiff.review.auth import Identity
from shadowdiff.review.cookies import set_reviewer
from shadowdiff.review.export import csv_export, jsonl_export
from shadowdiff.review.forms import (
    Forbidden,
    Refused,
    checked_note,
    posted_form,
    refusal,
    side_against,
    text_field,
    writing_as,
)
from shadowdiff.review.pages import pair_response
from shadowdiff.review.query import MAX_ID, filters, to_page
from shadowdiff.review.render import wants_html
from shadowdiff.review.state import identity, review_state
from shadowdiff.store.review import Review, VerdictGiven

EXPORT_COLUMNS = ["id", "pair_id", "run_id", "key", "category", "outcome", "similarity", "suggested",
                  "judge_verdict", "reviewer", "verdict", "wrong_side", "note", "created_at", "after_reveal"]


async def give_verdict(request: Request) -> Response:
    """A reviewer's verdict on a pair, from its page's form (or a script)."""
    pair_id = int(request.path_params["pair_id"])
    who = identity(request)
    try:
        reviewer, review = await _add_verdict(request, who, pair_id)
    except VerdictGiven as exc:
        # 409, not the 303 back to the page of other refusals: a script must not read it as saved
        if wants_html(request):
            return await run_in_threadpool(pair_response, request, pair_id, 409, str(exc))
        return JSONResponse({"error": str(exc)}, status_code=409)
    except InputError as exc:
        return _verdict_refused(request, pair_id, exc)
    # the page says it was saved: by the verdict's id, which the page looks up (a link
    # cannot make it claim a verdict that is not there, nor carry text of its own)
    response = to_page(f"/pairs/{pair_id}", request, saved=str(review.id))
    if who.shared and wants_html(request):
        set_reviewer(response, request, reviewer)
    return response


async def claim_next(request: Request) -> Response:
    """The next pair for this reviewer under the request's filters, claimed for a while."""
    who = identity(request)
    try:
        form = await posted_form(request)
        # (a claim shows as "with NAME" and comes back to NAME first: never a registered one's)
        reviewer = await writing_as(request, who, who.name or text_field(form, "reviewer") or "anonymous")
    except InputError as exc:
        return refusal(exc)
    pair_id = await run_in_threadpool(review_state(request).queue.claim_next, reviewer, filters(request))
    if pair_id is None:
        return to_page("/", request, message="nothing-left" if filters(request).outcome else "nothing-needed")
    return to_page(f"/pairs/{pair_id}", request)


# whole before their first byte is sent: a database error is the 503 below (review.export)
def export_csv(request: Request) -> Response:
    return csv_export(review_state(request).queue.export(request.query_params.get("run") or None), EXPORT_COLUMNS)


def export_jsonl(request: Request) -> Response:
    return jsonl_export(review_state(request).queue.export(request.query_params.get("run") or None))


async def _add_verdict(request: Request, who: Identity, pair_id: int) -> tuple[str, Review]:
    """The name the verdict is written under and the verdict, as stored."""
    form = await posted_form(request)
    reviewer = await writing_as(request, who, text_field(form, "reviewer") or who.name)
    note = checked_note(text_field(form, "note"))
    verdict = text_field(form, "verdict")
    # "wrong" is the field's name from before every directional verdict had a side
    letter = (text_field(form, "side") or text_field(form, "wrong")).strip().upper()
    against = side_against(verdict, letter, review_state(request).blinding, pair_id)
    if pair_id > MAX_ID:
        raise InputError(f"no pair {pair_id}")
    # the session's own name too: a shared-token holder whose page revealed the pair
    # under one name must not judge it again by typing another into the form
    review = await run_in_threadpool(review_state(request).queue.add_review, pair_id, reviewer, verdict, against,
                                     note, [who.name] if who.name else [])
    return reviewer, review


def _verdict_refused(request: Request, pair_id: int, exc: InputError) -> Response:
    status = 403 if isinstance(exc, Forbidden) else 404 if str(exc).startswith("no pair") else 400
    if status == 400 and wants_html(request):
        # the reason by its code (ERRORS): the page never shows the URL's own text
        return to_page(f"/pairs/{pair_id}", request, error=exc.code if isinstance(exc, Refused) else "refused")
    return JSONResponse({"error": str(exc)}, status_code=status)

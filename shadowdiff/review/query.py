"""What a review page's query asks for: the queue's filters, the query its links carry
along, and the redirects that keep it.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse

from shadowdiff.errors import InputError
from shadowdiff.review.state import identity, review_state
from shadowdiff.store.review import Filters
from shadowdiff.triage.signals import ONE_SIDED_KINDS

MAX_ID = 2**31 - 1         # ids and offsets beyond the database's INTEGER are simply not there
# query parameters that belong to one view of a page (its offset, a message shown once),
# not to the filters that links, "next" and the redirects after a post carry along
_ONE_VIEW = ("offset", "message", "error", "saved")


def filters(request: Request) -> Filters:
    """The queue's filters the request asks for, seen as the reviewer asking may see them."""
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
    return RedirectResponse(f"{review_state(request).prefix}{path}{'?' if query else ''}{query}", status_code=303)


def bounded_int(text: str | None) -> int:
    """``text`` as a non-negative number no larger than an id can be; 0 if it is not one."""
    text = text or "0"
    return min(int(text), MAX_ID) if text.isascii() and text.isdigit() else 0

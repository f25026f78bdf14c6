"""The review UI's pages: the queue, ordered by priority, and a pair's blind side by side.

Until a reviewer has given a verdict on a pair, nothing on these pages says which side
is which: the sides are letters (``shadowdiff.review.blind``), signal reasons are
rebuilt A first and the judge's in its letters (the page's), the queue shows the
judge's suggestion as the pair page does, and error texts (which name hosts) wait for
the reveal. The endpoints are synchronous (database calls): the app runs them in
Starlette's thread pool.
"""

from __future__ import annotations

from typing import Any, Final

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from shadowdiff.report.diffview import sides_view
from shadowdiff.report.requestview import request_view
from shadowdiff.review.auth import Identity
from shadowdiff.review.blind import (
    QUEUE_KINDS,
    Blinding,
    grade_view,
    judge_text,
    queue_kinds,
    score_view,
    shown_signals,
)
from shadowdiff.review.forms import ERRORS
from shadowdiff.review.query import MAX_ID, bounded_int, filter_query, filters
from shadowdiff.review.render import page, side_words
from shadowdiff.review.state import identity, review_state
from shadowdiff.store.review import MAX_SEARCH, PROMPT_PREVIEW, Review
from shadowdiff.vocabulary import Side

# What the queue says, by the code a redirect puts in its ``?message=`` (``forms.ERRORS``
# says why a code, never text from the URL)
MESSAGES: Final = {
    "nothing-left": "Nothing left to review.",
    "nothing-needed": "Nothing left that needs a verdict (equivalent and failed pairs are handed out when "
                      "the outcome filter asks for them).",
}
SNIPPET = 120              # characters of a prompt the queue shows on its one line


def queue_page(request: Request) -> Response:
    """The queue: a page of pairs under the request's filters, most in need of a verdict first."""
    state = review_state(request)
    f = filters(request)
    offset = bounded_int(request.query_params.get("offset", "0"))
    rows = state.queue.page(f, offset=offset, limit=50)
    for row in rows:
        row["signal_kinds"] = queue_kinds(row["signals"])
        # the judge's word as on the pair page: the raw one beside it would give the side away
        verdict, worse = row.pop("judge_verdict"), row.pop("judge_wrong_side")
        row["judge"] = judge_text(verdict, worse, state.blinding.a_is_baseline(row["id"])) if verdict else ""
        row["snippet"], row["prompt"] = _snippet(row["prompt"])
    return page("queue.html", request, rows=rows, signal_kinds=QUEUE_KINDS, counts=state.queue.counts(f),
                runs=state.store.runs(), f=f, offset=offset, query=filter_query(request), max_search=MAX_SEARCH,
                message=MESSAGES.get(request.query_params.get("message", "")))


def pair_page(request: Request) -> Response:
    return pair_response(request, int(request.path_params["pair_id"]))


def pair_response(request: Request, pair_id: int, status: int = 200, refused: str | None = None) -> Response:
    """The pair page; ``refused``: why a post was refused, said on it (with ``status``)."""
    state = review_state(request)
    pair = state.queue.pair(pair_id) if pair_id <= MAX_ID else None
    if pair is None:
        return page("message.html", request, status=404, message=f"No pair {pair_id}.")
    a_is_baseline = state.blinding.a_is_baseline(pair_id)
    base, cand = pair.answers.get(Side.BASELINE), pair.answers.get(Side.CANDIDATE)
    a, b = (base, cand) if a_is_baseline else (cand, base)
    # marked in the page's order: the diff breaks ties one way, which must not point at the baseline
    view = sides_view(a, b)
    sides = [("A", a), ("B", b)]
    who = identity(request)
    reviews = state.queue.reviews(pair_id)
    saved = saved_message(request.query_params.get("saved"), reviews, who.name, pair["key"])
    revealed, reviews = _seen(reviews, who)
    before, after = state.queue.neighbours(pair_id, filters(request))
    # one side's figures (the margin, the token agreement, a cascade) wait for the reveal
    signals = shown_signals(pair["signals"], a_is_baseline, revealed)
    return page("pair.html", request, pair=pair, sides=sides, view=view, asked=request_view(pair["request"]),
                signals=signals, reviews=reviews,
                revealed=revealed, a_is_baseline=a_is_baseline, before=before, after=after,
                judge=_judge_view(pair.row, state.blinding, pair_id, revealed), query=filter_query(request),
                grade=grade_view(pair["grade"], a_is_baseline),
                agreement=score_view(pair["score"], pair["noise_score"]) if revealed else None,
                error=refused or ERRORS.get(request.query_params.get("error", "")), saved=saved,
                status=status)


def saved_message(saved: str | None, reviews: list[Review], reviewer: str, key: str) -> Markup | None:
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


def _seen(reviews: list[Review], who: Identity) -> tuple[bool, list[Review]]:
    """Whether the pair is revealed to ``who``, and the verdicts on it they may read.

    Revealed once this reviewer has judged the pair, and never by a query parameter;
    then they see their own verdicts, and an admin everyone's, and no form: their
    first verdict is final (another, given knowing the sides, is refused)."""
    revealed = bool(who.name) and any(r.reviewer == who.name for r in reviews)
    return revealed, [r for r in reviews if who.admin or r.reviewer == who.name]


def _snippet(prompt: str) -> tuple[str, str]:
    """A prompt's first ``SNIPPET`` characters on one line (whitespace runs as one space),
    and the start the queue read (``PROMPT_PREVIEW`` characters) for its tooltip; each
    ends in "…" where the prompt goes on."""
    line = " ".join(prompt.split())
    start = prompt[:PROMPT_PREVIEW] + ("…" if len(prompt) > PROMPT_PREVIEW else "")
    return (line[:SNIPPET].rstrip() + "…" if len(line) > SNIPPET else line), start


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

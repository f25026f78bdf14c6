"""The review UI: a queue ordered by priority, a blind side-by-side pair page, verdicts.

Served under ``/review`` by ``shadowdiff serve`` (next to the proxy, on the same
store) and by ``shadowdiff review STORE`` for replay stores. Pages are Jinja2
templates with autoescaping on: every prompt, answer, note and signal is model output
or user input, shown as text, never as markup. Database calls are synchronous and run
in Starlette's thread pool.
"""

from __future__ import annotations

import csv
import io
import json
import re
import secrets
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from proxy.diffview import word_diff
from proxy.records import Side, Verdict
from proxy.review.auth import REVIEWER_COOKIE, SESSION_COOKIE, Auth
from proxy.store import Store
from proxy.store.review import Filters, ReviewQueue
from shadowdiff.errors import InputError

VERDICT_HELP = {
    "equivalent": "the same answer",
    "wording": "worded differently, same content",
    "minor": "a minor regression: formatting, a repeated word, a cut",
    "ambiguous": "equally defensible readings",
    "factual": "a fact or number one side gets wrong: say which",
    "improvement": "the candidate is better",
}
_SIDE_WORDS = re.compile(r"\b(?:the\s+)?(baseline|candidate)('s)?\b", re.IGNORECASE)


def blind(text: str, a_is_baseline: bool) -> str:
    """Replace the side names in a signal's reason with the letters the reviewer sees."""
    def letter(m: re.Match[str]) -> str:
        is_baseline = m.group(1).lower() == "baseline"
        return ("A" if is_baseline == a_is_baseline else "B") + (m.group(2) or "")

    return _SIDE_WORDS.sub(letter, text)


def build_review_app(store: Store, token: str, prefix: str = "/review", claim_ttl: float = 600.0) -> Starlette:
    """The review UI for ``store``, mounted at ``prefix``; ``token`` opens it."""
    auth = Auth(token)
    queue = ReviewQueue(store, claim_ttl=claim_ttl)
    env = Environment(loader=PackageLoader("proxy.review", "templates"), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)

    def page(name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        html = env.get_template(name).render(prefix=prefix, csrf=auth.csrf, verdicts=VERDICT_HELP, nonce=nonce,
                                             reviewer=request.cookies.get(REVIEWER_COOKIE, ""), **context)
        response = HTMLResponse(html, status_code=status)
        # The pages embed model output. Escaping keeps it text; the policy is the second
        # wall: only the script carrying this response's nonce runs, nothing frames us.
        response.headers["content-security-policy"] = (
            f"default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        response.headers["x-content-type-options"] = "nosniff"
        # same-origin, not no-referrer: with no-referrer the browser sends "Origin: null"
        # on our own form posts, and the origin check below could not tell them apart
        response.headers["referrer-policy"] = "same-origin"
        return response

    def guarded(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def wrapper(request: Request) -> Response:
            if not auth.authenticated(request.headers, request.cookies):
                if "text/html" in request.headers.get("accept", ""):
                    return RedirectResponse(f"{prefix}/login", status_code=303)
                return JSONResponse({"error": "a review token is required"}, status_code=401)
            return handler(request)

        return wrapper

    def login(request: Request) -> Response:
        return page("login.html", request)

    async def login_post(request: Request) -> Response:
        form = await request.form()
        reviewer = str(form.get("reviewer", "")).strip()[:255]
        if not auth.token_ok(str(form.get("token", ""))) or not reviewer:
            return page("login.html", request, status=401, error="wrong token, or no name")
        response = RedirectResponse(f"{prefix}/", status_code=303)
        for name, value in ((SESSION_COOKIE, auth.session), (REVIEWER_COOKIE, reviewer)):
            response.set_cookie(name, value, httponly=True, samesite="strict", path=prefix,
                                secure=request.url.scheme == "https")
        return response

    def filters(request: Request) -> Filters:
        q = request.query_params
        return Filters(run_id=q.get("run") or None, outcome=q.get("outcome") or None,
                       suggested=q.get("suggested") or None, signal=q.get("signal") or None,
                       verdict=q.get("verdict") or None, unreviewed=q.get("unreviewed") == "1")

    def index(request: Request) -> Response:
        f = filters(request)
        offset_text = request.query_params.get("offset", "0") or "0"
        offset = max(int(offset_text), 0) if offset_text.isdigit() else 0
        rows = queue.page(f, offset=offset, limit=50)
        for row in rows:
            row["signal_kinds"] = sorted({s["kind"] for s in row["signals"] or [] if s["kind"] != "divergence"})
        counts = queue.counts(f)
        runs = store.runs()
        return page("queue.html", request, rows=rows, counts=counts, runs=runs, f=f, offset=offset,
                    query=urlencode({k: v for k, v in request.query_params.items() if k != "offset"}),
                    message=request.query_params.get("message"))

    def pair_page(request: Request) -> Response:
        pair_id = int(request.path_params["pair_id"])
        pair = queue.pair(pair_id)
        if pair is None:
            return page("message.html", request, status=404, message=f"No pair {pair_id}.")
        a_is_baseline = auth.blind_a_is_baseline(pair_id)
        base, cand = pair.answers.get(Side.BASELINE), pair.answers.get(Side.CANDIDATE)
        left, right = word_diff(base.text if base else "", cand.text if cand else "")
        sides = [("A", base, left), ("B", cand, right)] if a_is_baseline else [("A", cand, right), ("B", base, left)]
        reviewer = request.cookies.get(REVIEWER_COOKIE, "")
        reviews = queue.reviews(pair_id)
        revealed = any(r.reviewer == reviewer for r in reviews) or request.query_params.get("reveal") == "1"
        f = filters(request)
        before, after = queue.neighbours(pair_id, f)
        signals = [{"kind": s["kind"], "reason": blind(s["reason"], a_is_baseline)}
                   for s in pair["signals"] or []]
        judge = None
        if pair["judge_verdict"]:
            wrong = pair["judge_wrong_side"]
            judge = {"verdict": pair["judge_verdict"], "reason": blind(pair["judge_reason"] or "", a_is_baseline),
                     "wrong": None if not wrong else ("A" if (wrong == "baseline") == a_is_baseline else "B")}
        return page("pair.html", request, pair=pair, sides=sides, signals=signals, reviews=reviews,
                    revealed=revealed, a_is_baseline=a_is_baseline, before=before, after=after, judge=judge,
                    query=urlencode({k: v for k, v in request.query_params.items() if k != "reveal"}),
                    error=request.query_params.get("error"))

    async def verdict_post(request: Request) -> Response:
        pair_id = int(request.path_params["pair_id"])
        form = await request.form()
        if not auth.csrf_ok(form.get("csrf") if isinstance(form.get("csrf"), str) else None,  # type: ignore[arg-type]
                            request.headers, request.headers.get("host", "")):
            return JSONResponse({"error": "this form did not come from the review UI (CSRF check failed)"},
                                status_code=403)
        reviewer = str(form.get("reviewer") or request.cookies.get(REVIEWER_COOKIE, "")).strip()
        letter = str(form.get("wrong", "")).upper()
        a_is_baseline = auth.blind_a_is_baseline(pair_id)
        wrong = None
        if letter in ("A", "B"):
            wrong = (Side.BASELINE if (letter == "A") == a_is_baseline else Side.CANDIDATE).value
        try:
            if form.get("verdict") == Verdict.FACTUAL.value and wrong is None:
                # said in the reviewer's terms: the store's message names the hidden sides
                raise InputError("a factual verdict says which side is wrong: A or B")
            await _in_thread(queue.add_review, pair_id, reviewer, str(form.get("verdict", "")), wrong,
                             str(form.get("note", "")))
        except InputError as exc:
            if "text/html" in request.headers.get("accept", ""):
                return RedirectResponse(f"{prefix}/pairs/{pair_id}?{urlencode({'error': str(exc)})}",
                                        status_code=303)
            return JSONResponse({"error": str(exc)}, status_code=404 if "no pair" in str(exc) else 400)
        response = RedirectResponse(f"{prefix}/pairs/{pair_id}?reveal=1", status_code=303)
        response.set_cookie(REVIEWER_COOKIE, reviewer[:255], httponly=True, samesite="strict", path=prefix)
        return response

    async def next_post(request: Request) -> Response:
        form = await request.form()
        if not auth.csrf_ok(form.get("csrf") if isinstance(form.get("csrf"), str) else None,  # type: ignore[arg-type]
                            request.headers, request.headers.get("host", "")):
            return JSONResponse({"error": "CSRF check failed"}, status_code=403)
        reviewer = request.cookies.get(REVIEWER_COOKIE) or str(form.get("reviewer", "")) or "anonymous"
        pair_id = await _in_thread(queue.claim_next, reviewer, filters(request))
        if pair_id is None:
            return RedirectResponse(f"{prefix}/?{urlencode({'message': 'Nothing left to review.'})}",
                                    status_code=303)
        return RedirectResponse(f"{prefix}/pairs/{pair_id}", status_code=303)

    def export_csv(request: Request) -> Response:
        rows = queue.export(request.query_params.get("run") or None)

        def lines() -> Iterator[str]:
            buffer = io.StringIO()
            writer = csv.DictWriter(buffer, _EXPORT_COLUMNS)
            writer.writeheader()
            for row in rows:
                writer.writerow(row)
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
            yield buffer.getvalue()

        return StreamingResponse(lines(), media_type="text/csv; charset=utf-8",
                                 headers={"content-disposition": "attachment; filename=verdicts.csv"})

    def export_jsonl(request: Request) -> Response:
        rows = queue.export(request.query_params.get("run") or None)
        return StreamingResponse((json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                 media_type="application/x-ndjson",
                                 headers={"content-disposition": "attachment; filename=verdicts.jsonl"})

    routes = [
        Route(f"{prefix}/login", login, methods=["GET"]),
        Route(f"{prefix}/login", login_post, methods=["POST"]),
        Route(f"{prefix}/", guarded(index), methods=["GET"]),
        Route(f"{prefix}", lambda request: RedirectResponse(f"{prefix}/", status_code=307)),
        Route(f"{prefix}/pairs/{{pair_id:int}}", guarded(pair_page), methods=["GET"]),
        Route(f"{prefix}/pairs/{{pair_id:int}}/verdict", _guarded_async(auth, verdict_post), methods=["POST"]),
        Route(f"{prefix}/next", _guarded_async(auth, next_post), methods=["POST"]),
        Route(f"{prefix}/export.csv", guarded(export_csv), methods=["GET"]),
        Route(f"{prefix}/export.jsonl", guarded(export_jsonl), methods=["GET"]),
    ]
    return Starlette(routes=routes)


_EXPORT_COLUMNS = ["id", "pair_id", "run_id", "key", "category", "outcome", "similarity", "suggested",
                   "judge_verdict", "reviewer", "verdict", "wrong_side", "note", "created_at"]


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)


def _guarded_async(auth: Auth, handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    async def wrapper(request: Request) -> Response:
        if not auth.authenticated(request.headers, request.cookies):
            return JSONResponse({"error": "a review token is required"}, status_code=401)
        response: Response = await handler(request)
        return response

    return wrapper


__all__ = ["Verdict", "blind", "build_review_app"]

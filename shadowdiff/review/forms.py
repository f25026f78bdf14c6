"""Reading the review UI's posted forms: the CSRF check, text fields, and a verdict's
parts checked in the reviewer's terms, with the refusals a page can name by code.
"""

from __future__ import annotations

from typing import Final

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse

from shadowdiff.errors import InputError
from shadowdiff.review.auth import Identity
from shadowdiff.review.blind import Blinding
from shadowdiff.review.render import SIDE_QUESTION
from shadowdiff.review.state import review_state
from shadowdiff.store.review import MAX_NOTE, check_text
from shadowdiff.store.reviewers import MAX_NAME, check_name
from shadowdiff.vocabulary import Side, Verdict

# What a redirect asks a page to say, by a code in its URL (``?error=`` on a pair page,
# ``?message=`` on the queue): never text from the URL, which any site can write into a
# link that a signed-in reviewer follows ("side A is the baseline here"); an unknown
# code says nothing. A saved verdict is announced by its id (``pages.saved_message``).
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


class Forbidden(InputError):
    """A form that did not come from the UI."""


class Refused(InputError):
    """A verdict refused for a reason the pair page names by ``code`` (a key of ``ERRORS``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def status_of(exc: Exception) -> int:
    """The status a refused form gets: 403 for one from elsewhere, else 400 (the reviewer's to fix)."""
    return 403 if isinstance(exc, Forbidden) else 400


def refusal(exc: Exception) -> JSONResponse:
    """A refused form's or query's reason, to a script."""
    return JSONResponse({"error": str(exc)}, status_code=status_of(exc))


def own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', '')}"


async def posted_form(request: Request) -> FormData:
    """The posted form, if it came from the UI itself (``Forbidden`` otherwise)."""
    form = await request.form(max_files=0)
    csrf = form.get("csrf")
    if not review_state(request).auth.csrf_ok(csrf if isinstance(csrf, str) else None, request.headers,
                                              request.cookies, own_origin(request)):
        raise Forbidden("this form did not come from the review UI (CSRF check failed)")
    return form


def text_field(form: FormData, name: str) -> str:
    """The form's field ``name`` ("" when absent); ``InputError`` for a file."""
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{name} must be text, not a file")
    return value


async def writing_as(request: Request, who: Identity, typed: str) -> str:
    """The name a verdict or a claim is written under: an issued identity's is the
    server's; only the shared token's holder types one, and never a registered one."""
    if not who.shared:
        return who.name
    try:
        name = check_name(typed)
    except InputError as exc:
        raise Refused("name", str(exc)) from None
    if await run_in_threadpool(review_state(request).reviewers.by_name, name) is not None:
        raise Refused("registered", f"{name!r} is a reviewer with a token of their own")
    return name


def checked_note(note: str) -> str:
    """``note`` if the store can hold it, else ``Refused`` with the store's reason."""
    try:
        check_text("the note", note, MAX_NOTE)
    except InputError as exc:
        raise Refused("note-nul" if "\x00" in note else "note-long", str(exc)) from None
    return note


def side_against(verdict: str, letter: str, blinding: Blinding, pair_id: int) -> str | None:
    """The side (baseline or candidate) a verdict goes against, from the letter the
    reviewer chose: the wrong or worse side, or for ``improvement`` the one not chosen
    as better. ``InputError``, in the reviewer's terms, when a directional verdict has none."""
    try:
        checked = Verdict(verdict)
    except ValueError:
        raise Refused("verdict", f"unknown verdict {verdict!r}; one of {', '.join(v.value for v in Verdict)}") \
            from None
    if not checked.directional:
        return None    # a side left checked from an earlier choice means nothing here
    if letter not in ("A", "B"):
        # said in the page's letters: the store's message would name the hidden sides
        raise Refused(f"side-{checked.value}", ERRORS[f"side-{checked.value}"])
    chosen = blinding.side(letter, pair_id)
    if checked is Verdict.IMPROVEMENT:
        return (Side.CANDIDATE if chosen is Side.BASELINE else Side.BASELINE).value
    return chosen.value

"""Who may see the review UI, as whom, and protection of its forms.

Two kinds of credential open it:

- **A reviewer's own token** (``shadowdiff reviewers add STORE NAME``): it names its
  reviewer, so the name on a verdict is the server's, and the reveal and "my reviews"
  are that reviewer's alone. A reviewer made with ``--admin`` may also read everyone's
  verdicts and export them.
- **The shared token** (``--review-token``): the admin's credential, and the whole of
  single-reviewer mode. Whoever holds it types a name, which is why it is for one
  person (or an admin): with it, anyone can write as anyone not registered.

Scripts send a token as ``Authorization: Bearer`` or ``X-Review-Token``; people type it
once into the sign-in form, which sets a session cookie. The cookie never holds a
token: it names the reviewer (by id) and carries an HMAC, under a key the store made
for itself, over the digest of their current token, so reissuing or revoking a token
ends its sessions. Cookies are HttpOnly and SameSite=Lax, Secure over HTTPS. Lax, not
Strict: a pair's link in report.html, pairs.csv or a chat is a navigation from
another site, which Strict would send to the sign-in form however recently its reader
signed in; Lax sends the cookie with such a GET (which changes nothing) and never with
another site's POST. Forms carry a CSRF token (an HMAC of the session) as well, and
state-changing requests must also come from the UI's own origin (scheme, host and
port) when the browser says where they come from.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from shadowdiff.errors import InputError
from shadowdiff.store.reviewers import Reviewers, check_name, digest

SESSION_SECONDS = 7 * 24 * 3600          # a reviewer's session lasts a week, on the server too
SESSION_COOKIE = "shadowdiff_review"
REVIEWER_COOKIE = "shadowdiff_reviewer"     # the typed name, in single-reviewer mode only
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Identity:
    """Who is asking: a name (empty for a script with the shared token that gave none),
    whether they may read others' verdicts, and whether the name was typed (shared
    token) rather than issued."""

    name: str
    admin: bool
    shared: bool


class Auth:
    def __init__(self, token: str, reviewers: Reviewers, session_key: str) -> None:
        if len(token) < 8:
            raise ValueError("the review token must be at least 8 characters")
        self._token = token.encode()
        self._key = session_key.encode()
        self.reviewers = reviewers
        self._shared_session = "s." + self._mac("shared", hashlib.sha256(self._token).hexdigest())

    def _mac(self, *parts: str) -> str:
        return hmac.new(self._key, ":".join(parts).encode(), hashlib.sha256).hexdigest()

    # -- credentials -------------------------------------------------------------------

    def shared_token_ok(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate.encode("utf-8", "surrogatepass"),
                                                             self._token)

    def sign_in(self, token: str) -> tuple[Identity, str] | None:
        """The identity a typed token opens and the session cookie's value, or None.
        (A database read: call it off the event loop.) A shared-token identity has no
        name yet: the form gives it."""
        if self.shared_token_ok(token):
            return Identity("", True, True), self._shared_session
        reviewer = self.reviewers.by_token(token)
        if reviewer is None:
            return None
        issued = str(int(time.time()))
        mac = self._mac("reviewer", str(reviewer.id), issued, reviewer.token_digest)
        return Identity(reviewer.name, reviewer.admin, False), f"r.{reviewer.id}.{issued}.{mac}"

    def identify(self, headers: Mapping[str, str], cookies: Mapping[str, str], typed_name: str = "") -> Identity | None:
        """Who sent this request (a database read: call it off the event loop), or None.

        ``typed_name`` is the name a shared-token holder gave (the reviewer cookie)."""
        token = self.header_token(headers)
        if token is not None:
            if self.shared_token_ok(token):
                return Identity(self._typed(typed_name), True, True)
            reviewer = self.reviewers.by_token(token)
            return Identity(reviewer.name, reviewer.admin, False) if reviewer is not None else None
        session = cookies.get(SESSION_COOKIE, "")
        if hmac.compare_digest(session.encode("utf-8", "surrogatepass"), self._shared_session.encode()):
            return Identity(self._typed(typed_name), True, True)
        parts = session.split(".")
        if len(parts) != 4:
            return None
        kind, reviewer_id, issued, mac = parts
        if kind != "r" or not _canonical_number(reviewer_id) or not _canonical_number(issued):
            return None
        if not 0 <= time.time() - int(issued) <= SESSION_SECONDS:
            return None   # expired (or from the future): sign in again
        reviewer = self.reviewers.by_id(int(reviewer_id))
        if reviewer is None or not reviewer.active:
            return None
        expected = self._mac("reviewer", str(reviewer.id), issued, reviewer.token_digest)
        if not hmac.compare_digest(mac.encode("utf-8", "surrogatepass"), expected.encode()):
            return None
        return Identity(reviewer.name, reviewer.admin, False)

    def _typed(self, name: str) -> str:
        """The name a shared-token holder typed, if they may use it: a valid name that
        no registered reviewer holds (the cookie that carries it is theirs to edit, so it
        is checked on every request, not only at sign-in); else none."""
        try:
            name = check_name(name)
        except InputError:
            return ""
        return "" if self.reviewers.by_name(name) is not None else name

    @staticmethod
    def header_token(headers: Mapping[str, str]) -> str | None:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and value:
            return value.strip()
        return headers.get("x-review-token") or None

    # -- forms ---------------------------------------------------------------------------

    def csrf(self, cookies: Mapping[str, str]) -> str:
        """The CSRF token for the session in ``cookies`` (one per session)."""
        return self._mac("csrf", cookies.get(SESSION_COOKIE, ""))

    def csrf_ok(self, form_value: str | None, headers: Mapping[str, str], cookies: Mapping[str, str],
                own_origin: str) -> bool:
        """A form post from the UI itself: the session's CSRF token, and no foreign origin.

        ``own_origin`` is the UI's ``scheme://host[:port]``. ("null" is what browsers
        send when they will not say: the token decides.)"""
        if self.header_token(headers) is not None:
            return True  # no ambient credentials: nothing to forge
        origin = headers.get("origin")
        if origin and origin != "null" and not same_origin(origin, own_origin):
            return False
        return form_value is not None and hmac.compare_digest(
            form_value.encode("utf-8", "surrogatepass"), self.csrf(cookies).encode())


def _canonical_number(text: str) -> bool:
    """A decimal number as ``str(int(...))`` writes it: one spelling per value."""
    return 0 < len(text) <= 12 and text.isascii() and text.isdigit() and str(int(text)) == text


def same_origin(a: str, b: str) -> bool:
    """Whether two origins are one: scheme, host and port (default ports filled in)."""
    def parts(origin: str) -> tuple[str, str, int | None] | None:
        try:
            u = urlsplit(origin)
            port = u.port
        except ValueError:
            return None
        scheme = u.scheme.lower()
        return scheme, (u.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)

    x, y = parts(a), parts(b)
    return x is not None and x == y and bool(x[1])


__all__ = ["REVIEWER_COOKIE", "SESSION_COOKIE", "Auth", "Identity", "digest", "same_origin"]

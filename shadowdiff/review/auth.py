"""Who may see the review UI, and protection of its forms.

One shared token (``--review-token``) opens it: sent as ``Authorization: Bearer`` or
``X-Review-Token`` by scripts, or typed once into the login form by people, which
sets a session cookie. The cookie holds a value derived from the token (HMAC), never
the token, and is HttpOnly and SameSite=Strict. Forms carry a CSRF token (another
HMAC) and state-changing requests must also come from the UI's own origin when the
browser says where they come from. No token configured: the UI is off.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

SESSION_COOKIE = "shadowdiff_review"
REVIEWER_COOKIE = "shadowdiff_reviewer"


class Auth:
    def __init__(self, token: str) -> None:
        if len(token) < 8:
            raise ValueError("the review token must be at least 8 characters")
        self._key = token.encode()
        self.session = self._mac("session")
        self.csrf = self._mac("csrf")

    def _mac(self, purpose: str) -> str:
        return hmac.new(self._key, purpose.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate.encode(), self._key)

    def authenticated(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        """By header (scripts) or by session cookie (browsers)."""
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.token_ok(value):
            return True
        if self.token_ok(headers.get("x-review-token")):
            return True
        return hmac.compare_digest(cookies.get(SESSION_COOKIE, "").encode(), self.session.encode())

    def by_header(self, headers: Mapping[str, str]) -> bool:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return (scheme.lower() == "bearer" and self.token_ok(value)) or self.token_ok(headers.get("x-review-token"))

    def csrf_ok(self, form_value: str | None, headers: Mapping[str, str], host: str) -> bool:
        """A form post from the UI itself: the right CSRF token, and no foreign origin.

        ("null" is what browsers send when they will not say: the token decides.)
        """
        if self.by_header(headers):
            return True  # no ambient credentials: nothing to forge
        origin = headers.get("origin")
        if origin and origin != "null" and origin.split("://", 1)[-1] != host:
            return False
        return form_value is not None and hmac.compare_digest(form_value.encode(), self.csrf.encode())

"""A server's address as shadowdiff takes it: its base URL, ``http://host:8000`` (or with
``/v1``, as OpenAI clients take it), never a route of it.

Two slips are common and cost a whole run if they are caught by the answers: an address
without its scheme (``127.0.0.1:8000``: Python reads ``127.0.0.1`` as the scheme), and the
URL of one route (``http://host:8000/v1/chat/completions``, copied from a curl line), to
which shadowdiff would add its own routes: ``/v1/models`` there may not fail, while every
request of the run would. Both are refused before anything is sent, saying what to give.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from shadowdiff.answers.redact import public_url
from shadowdiff.errors import ConfigError

# the OpenAI routes shadowdiff adds to a base URL itself
_ROUTE = re.compile(r"/(?:v1/)?(?:chat/completions|completions|models|responses|embeddings|tokenize|version)/*$",
                    re.IGNORECASE)


def check(flag: str, url: str) -> None:
    """``ConfigError`` for ``url`` given to ``flag`` unless it is an http(s) base URL (the
    message shows it without its ``user:password@``)."""
    text = public_url(url.strip())
    url = text
    if "://" not in text:
        raise ConfigError(f"{flag} {url!r} has no scheme: give http://{text} (or https://)")
    try:
        parts = urlsplit(text)
        port = parts.port   # (one that is not a number, or out of range, raises here)
    except ValueError as exc:
        raise ConfigError(f"{flag} {url!r} is not a URL ({exc})") from None
    if port == 0:
        raise ConfigError(f"{flag} {url!r}: port 0 is no server's")
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{flag} {url!r}: shadowdiff speaks http:// and https://, not {parts.scheme}://")
    if not parts.hostname:
        raise ConfigError(f"{flag} {url!r} names no host")
    if parts.query or parts.fragment or any(ch.isspace() for ch in text):
        raise ConfigError(f"{flag} {url!r}: a base URL has no query, fragment or spaces: give "
                          f"{parts.scheme}://{parts.netloc}{parts.path}")
    route = _ROUTE.search(parts.path)
    if route:
        base = text[: len(parts.scheme) + 3 + len(parts.netloc) + route.start()]
        raise ConfigError(f"{flag} {url!r} is the URL of one route ({route.group().rstrip('/')}): give the "
                          f"server's base URL, {base} - shadowdiff adds /v1/chat/completions and the other routes "
                          "itself")

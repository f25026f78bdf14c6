"""A request body with its model renamed (``--shadow-model``, ``--primary-model``, the replica's)."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# orjson reads an integer past 64 bits as a float (123456789012345678901234567890 comes
# back as 1.2345678901234568e+29): a body with a number this long is rewritten with the
# standard library, which keeps every integer as written. Digits inside strings match
# too; they only cost the slower path.
_LONG_NUMBER = re.compile(rb"\d{20}")


def with_model(body: bytes, request: dict[str, Any], model: str) -> bytes | None:
    """``body`` (parsed: ``request``) with its ``model`` replaced and every other field as
    it was; None when it cannot be written back (nested deeper than JSON writers go)."""
    if _LONG_NUMBER.search(body) is None:
        try:
            return orjson.dumps({**request, "model": model})
        except orjson.JSONEncodeError:   # nested deeper than orjson writes (it reads deeper)
            return None
    try:
        exact = json.loads(body)
        return json.dumps({**exact, "model": model}, ensure_ascii=False, separators=(",", ":")).encode()
    except (ValueError, RecursionError):
        return None

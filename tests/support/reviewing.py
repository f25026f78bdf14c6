"""What the review UI's HTTP tests share: the token, a signed-in client, a form's CSRF field, the pairs' ids."""

from __future__ import annotations

import re

import httpx

from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue

TOKEN = "review-token-for-tests"


def signed_in(base: str, name: str = "ana") -> httpx.Client:
    client = httpx.Client(base_url=base)
    response = client.post("/login", data={"token": TOKEN, "reviewer": name})
    assert response.status_code == 303, response.text
    return client


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert match, "no CSRF field in the form"
    return match.group(1)


def pair_ids(store: Store, run: str) -> dict[str, int]:
    return {row["key"]: row["id"] for row in ReviewQueue(store).page(Filters(run_id=run))}

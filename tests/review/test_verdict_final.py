"""A reviewer's first verdict on a pair is final, over real HTTP on SQLite and PostgreSQL:
after it the page reveals which side is the candidate, so another verdict from them
(by the form, a script, or a shared-token name typed anew) is refused with a 409 and
never decides the run."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from shadowdiff.review.app import build_review_app
from shadowdiff.review.blind import Blinding
from shadowdiff.store import Store
from shadowdiff.store.review import ReviewQueue
from shadowdiff.store.reviewers import Reviewers
from shadowdiff.verdict.acceptance import acceptance
from shadowdiff.vocabulary import Decision, Side
from tests.support.reviewing import TOKEN, csrf_of, pair_ids, signed_in
from tests.support.servers import serve_app

UI = tuple[str, Store, str]


@pytest.fixture
def ui(store: Store) -> Iterator[UI]:
    from tests.support.factories import fill

    run = fill(store)
    with serve_app(build_review_app(store, TOKEN)) as url:
        yield url + "/review", store, run


def reviewer(base: str, store: Store, name: str) -> httpx.Client:
    _, token = Reviewers(store).add(name)
    client = httpx.Client(base_url=base, headers={"accept": "text/html"})
    assert client.post("/login", data={"token": token}).status_code == 303
    return client


def post(client: httpx.Client, pair_id: int, verdict: str, letter: str | None = None, **extra: str) -> httpx.Response:
    csrf = csrf_of(client.get(f"/pairs/{pair_id}").text)
    return client.post(f"/pairs/{pair_id}/verdict",
                       data={"csrf": csrf, "verdict": verdict, **({"side": letter} if letter else {}), **extra})


def candidate_letter(store: Store, pair_id: int) -> str:
    return Blinding(store.secret("blind_key")).letter(Side.CANDIDATE, pair_id)


def decision(store: Store, run: str) -> Decision:
    return acceptance(store, run, min_reviewed=0).decision


def test_a_throwaway_verdict_then_factual_against_the_candidate_is_refused(ui: UI) -> None:
    base, store, run = ui
    pid = pair_ids(store, run)["k2"]
    ana = reviewer(base, store, "ana")
    assert post(ana, pid, "equivalent").status_code == 303
    page = ana.get(f"/pairs/{pid}").text
    # the reveal, and no form to give another verdict with
    assert 'id="revealed"' in page and 'id="final"' in page
    assert 'id="verdict-form"' not in page and 'name="verdict"' not in page
    # the attack: now knowing which letter is the candidate, a factual verdict against it
    refused = post(ana, pid, "factual", candidate_letter(store, pid))
    assert refused.status_code == 409
    assert "already given pair" in refused.text and "final" in refused.text
    assert 'id="error"' in refused.text and 'id="verdict-form"' not in refused.text
    assert [(r.reviewer, r.verdict.value) for r in ReviewQueue(store).reviews(pid)] == [("ana", "equivalent")]
    assert decision(store, run) is not Decision.FAIL


def test_a_throwaway_verdict_then_a_lenient_one_is_refused(ui: UI) -> None:
    base, store, run = ui
    pid = pair_ids(store, run)["k2"]
    bob = reviewer(base, store, "bob")
    assert post(bob, pid, "factual", candidate_letter(store, pid)).status_code == 303
    assert decision(store, run) is Decision.FAIL
    refused = post(bob, pid, "equivalent")
    assert refused.status_code == 409
    assert [r.verdict.value for r in ReviewQueue(store).reviews(pid)] == ["factual"]
    assert decision(store, run) is Decision.FAIL


def test_a_script_gets_a_409_in_json(ui: UI) -> None:
    base, store, run = ui
    pid = pair_ids(store, run)["k2"]
    _, token = Reviewers(store).add("cleo")
    api = httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"})
    assert api.post(f"/pairs/{pid}/verdict", data={"verdict": "wording"}).status_code == 303
    again = api.post(f"/pairs/{pid}/verdict", data={"verdict": "factual", "side": candidate_letter(store, pid)})
    assert again.status_code == 409
    assert again.headers["content-type"].startswith("application/json")
    assert "already given pair" in again.json()["error"]
    assert [r.verdict.value for r in ReviewQueue(store).reviews(pid)] == ["wording"]
    assert decision(store, run) is not Decision.FAIL


def test_a_shared_token_session_cannot_judge_again_under_a_new_name(ui: UI) -> None:
    base, store, run = ui
    pid = pair_ids(store, run)["k2"]
    ana = signed_in(base, "ana")
    assert post(ana, pid, "equivalent").status_code == 303
    assert 'id="revealed"' in ana.get(f"/pairs/{pid}").text
    # the page it saw revealed the sides under "ana": a name typed into a form changes nothing
    refused = post(ana, pid, "factual", candidate_letter(store, pid), reviewer="zed")
    assert refused.status_code == 409
    assert [r.reviewer for r in ReviewQueue(store).reviews(pid)] == ["ana"]
    # another person, who has not seen the pair, still gives a blind second review
    other = signed_in(base, "zed")
    assert 'id="revealed"' not in other.get(f"/pairs/{pid}").text
    assert post(other, pid, "factual", candidate_letter(store, pid)).status_code == 303
    assert [r.reviewer for r in ReviewQueue(store).reviews(pid)] == ["ana", "zed"]

"""Reviewer identities over real HTTP, on SQLite and PostgreSQL: tokens the server
issues, the reveal and "my reviews" tied to them, admin-only exports, a side for every
directional verdict, second blind reviews, and the origin check."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from shadowdiff.review.app import build_review_app
from shadowdiff.review.auth import same_origin
from shadowdiff.review.blind import Blinding
from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.store.reviewers import Reviewers
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.factories import fill
from tests.support.reviewing import TOKEN, csrf_of, pair_ids, signed_in
from tests.support.servers import serve_app

UI = tuple[str, Store, str]


@pytest.fixture
def ui(store: Store) -> Iterator[UI]:
    run = fill(store)
    with serve_app(build_review_app(store, TOKEN)) as url:
        yield url + "/review", store, run


def as_reviewer(base: str, store: Store, name: str, admin: bool = False) -> httpx.Client:
    _, token = Reviewers(store).add(name, admin=admin)
    client = httpx.Client(base_url=base, headers={"accept": "text/html"})
    response = client.post("/login", data={"token": token, "reviewer": "someone else"})
    assert response.status_code == 303, response.text
    return client


def judge(client: httpx.Client, pair_id: int, verdict: str, side: str | None = None, note: str = "",
          **extra: str) -> httpx.Response:
    html = client.get(f"/pairs/{pair_id}").text
    data = {"csrf": csrf_of(html), "verdict": verdict, "note": note, **extra}
    if side:
        data["side"] = side
    return client.post(f"/pairs/{pair_id}/verdict", data=data)


def test_an_issued_token_names_its_reviewer_whatever_is_typed(ui: UI) -> None:
    base, store, run = ui
    cleo = as_reviewer(base, store, "cleo")
    assert "reviewing as <bdi>cleo</bdi>" in cleo.get("/").text
    pid = pair_ids(store, run)["k1"]
    page = cleo.get(f"/pairs/{pid}").text
    assert 'name="reviewer"' not in page                  # no name to type: the server's
    assert judge(cleo, pid, "wording", reviewer="mallory").status_code == 303
    assert [r.reviewer for r in ReviewQueue(store).reviews(pid)] == ["cleo"]
    # scripts: the same token as a header
    _, token = Reviewers(store).add("dan")
    api = httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"})
    assert api.post(f"/pairs/{pid}/verdict", data={"verdict": "wording", "reviewer": "cleo"}).status_code == 303
    assert [r.reviewer for r in ReviewQueue(store).reviews(pid)] == ["cleo", "dan"]


def test_one_reviewer_cannot_see_anothers_reveal_verdicts_or_export(ui: UI) -> None:
    base, store, run = ui
    ana, bob = as_reviewer(base, store, "ana"), as_reviewer(base, store, "bob")
    pid = pair_ids(store, run)["k2"]
    wrong = Blinding(store.secret("blind_key")).letter(Side.CANDIDATE, pid)
    assert judge(ana, pid, "factual", wrong, note="ana-says-43-is-wrong").status_code == 303
    assert 'id="revealed"' in ana.get(f"/pairs/{pid}").text
    page = bob.get(f"/pairs/{pid}").text
    assert 'id="revealed"' not in page and "ana-says" not in page      # before bob's own verdict: blind
    queue = bob.get("/?verdict=factual").text
    assert f"/pairs/{pid}" not in queue                                   # ana's verdict filters nothing for bob
    assert "1 factual" not in bob.get("/").text
    for path in ("/export.csv", "/export.jsonl"):
        assert bob.get(path).status_code == 403
        assert "export" not in re.sub(r"<form.*?</form>", "", bob.get("/").text.split("<main>")[0], flags=re.S)
    assert judge(bob, pid, "wording").status_code == 303
    page = bob.get(f"/pairs/{pid}").text
    assert 'id="revealed"' in page and "<bdi>bob</bdi>: <strong>wording" in page
    assert "ana-says" not in page and "ana:" not in page                 # his reveal shows his verdicts only
    assert "≠" not in bob.get("/").text                                    # nor whether others disagree
    # "my reviews": the pairs bob judged, with his verdict
    mine = bob.get("/?mine=1").text
    assert f"/pairs/{pid}" in mine and "wording" in mine and mine.count("/pairs/") == 1


def test_an_admin_reads_every_verdict_and_exports(ui: UI) -> None:
    base, store, run = ui
    ana, boss = as_reviewer(base, store, "ana"), as_reviewer(base, store, "boss", admin=True)
    pid = pair_ids(store, run)["k2"]
    assert judge(ana, pid, "minor", "A", note="ana-note").status_code == 303
    assert "ana-note" in boss.get("/export.csv").text
    assert "reviewing as <bdi>boss</bdi> (admin)" in boss.get("/").text
    assert "≠" not in boss.get("/").text
    assert judge(boss, pid, "equivalent").status_code == 303
    page = boss.get(f"/pairs/{pid}").text
    assert "ana-note" in page and "<bdi>boss</bdi>: <strong>equivalent" in page
    assert "≠" in boss.get("/").text                                       # two verdicts that differ


def test_the_shared_token_is_one_reviewer_who_may_not_take_a_registered_name(ui: UI) -> None:
    base, store, run = ui
    Reviewers(store).add("cleo")
    client = httpx.Client(base_url=base)
    refused = client.post("/login", data={"token": TOKEN, "reviewer": "cleo"})
    assert refused.status_code == 400 and "token of their own" in refused.text
    assert client.post("/login", data={"token": TOKEN, "reviewer": ""}).status_code == 400
    admin = signed_in(base, "ana")
    assert admin.get("/export.csv").status_code == 200                     # the shared token is the admin's
    pid = pair_ids(store, run)["k1"]
    taken = judge(admin, pid, "wording", reviewer="cleo")
    assert taken.status_code == 400 and "token of their own" in taken.json()["error"]


def test_revoked_and_reissued_tokens_open_nothing(ui: UI) -> None:
    base, store, _ = ui
    reviewers = Reviewers(store)
    _, token = reviewers.add("eve")
    client = httpx.Client(base_url=base)
    assert client.post("/login", data={"token": token}).status_code == 303
    assert client.get("/").status_code == 200
    reviewers.revoke("eve")
    assert client.get("/").status_code == 401
    assert httpx.get(base + "/", headers={"authorization": f"Bearer {token}"}).status_code == 401
    assert httpx.post(base + "/login", data={"token": token}).status_code == 401
    _, fresh = reviewers.reissue("eve")
    assert client.get("/").status_code == 401                               # the old session stays ended
    assert httpx.get(base + "/", headers={"x-review-token": fresh}).status_code == 200
    assert httpx.get(base + "/", headers={"x-review-token": token}).status_code == 401


@pytest.mark.parametrize(("verdict", "letter_side", "stored"), [
    ("factual", "candidate", "candidate"), ("minor", "baseline", "baseline"),
    ("improvement", "candidate", "baseline"),       # the candidate better: the verdict goes against the baseline
    ("improvement", "baseline", "candidate")])
def test_every_directional_verdict_has_a_side(ui: UI, verdict: str, letter_side: str, stored: str) -> None:
    base, store, run = ui
    client = as_reviewer(base, store, "ana")
    pid = pair_ids(store, run)["k4"]
    letter = Blinding(store.secret("blind_key")).letter(Side(letter_side), pid)
    api = httpx.Client(base_url=base, cookies=client.cookies)
    html = api.get(f"/pairs/{pid}").text
    no_side = api.post(f"/pairs/{pid}/verdict", data={"csrf": csrf_of(html), "verdict": verdict})
    assert no_side.status_code == 400 and "A or B" in no_side.json()["error"]
    assert "baseline" not in no_side.text and "candidate" not in no_side.text     # in the page's terms
    assert ReviewQueue(store).reviews(pid) == []
    assert judge(client, pid, verdict, letter).status_code == 303
    (review,) = ReviewQueue(store).reviews(pid)
    assert review.wrong_side == Side(stored)
    words = {"factual": f"{letter_side} wrong", "minor": f"{letter_side} worse",
             "improvement": f"{letter_side} better"}[verdict]
    assert words in client.get(f"/pairs/{pid}").text


def test_a_side_left_checked_means_nothing_for_an_undirected_verdict(ui: UI) -> None:
    base, store, run = ui
    client = as_reviewer(base, store, "ana")
    pid = pair_ids(store, run)["k1"]
    assert judge(client, pid, "wording", "A").status_code == 303
    (review,) = ReviewQueue(store).reviews(pid)
    assert review.wrong_side is None


def test_a_second_blind_review_goes_to_someone_else(ui: UI) -> None:
    base, store, run = ui
    ana, bob = as_reviewer(base, store, "ana"), as_reviewer(base, store, "bob")
    first = ReviewQueue(store).page(Filters(run_id=run, unreviewed=True))[0]["id"]
    assert judge(ana, first, "wording").status_code == 303

    def claim(client: httpx.Client, query: str) -> str:
        html = client.get(f"/?{query}").text
        response = client.post(f"/next?{query}", data={"csrf": csrf_of(html)})
        assert response.status_code == 303
        return response.headers["location"]

    assert claim(bob, "second=1").endswith(f"/pairs/{first}?second=1")    # judged by ana, not by bob
    assert claim(ana, "second=1").endswith("message=nothing-needed")   # never her own pair again
    assert judge(bob, first, "minor", "A").status_code == 303
    assert claim(as_reviewer(base, store, "cy"), "second=1").endswith("message=nothing-needed")   # two reviews: done
    assert not claim(bob, "").endswith(f"/pairs/{first}")                  # the plain queue: unreviewed pairs


def test_the_origin_check_compares_scheme_host_and_port(ui: UI) -> None:
    base, store, run = ui
    client = as_reviewer(base, store, "ana")
    pid = pair_ids(store, run)["k1"]
    html = client.get(f"/pairs/{pid}").text
    own = base.removesuffix("/review")
    host, port = own.removeprefix("http://").split(":")
    for origin in (own.replace("http://", "https://"), f"http://{host}:{int(port) + 1}", "http://evil.example"):
        response = client.post(f"/pairs/{pid}/verdict", headers={"origin": origin},
                               data={"csrf": csrf_of(html), "verdict": "wording"})
        assert response.status_code == 403, origin
    assert ReviewQueue(store).reviews(pid) == []
    ok = client.post(f"/pairs/{pid}/verdict", headers={"origin": own}, data={"csrf": csrf_of(html),
                                                                              "verdict": "wording"})
    assert ok.status_code == 303
    assert same_origin("https://a.example", "https://A.example:443")
    assert not same_origin("https://a.example", "http://a.example:443")
    assert not same_origin("http://[bad", "http://a.example")


def test_the_reviewers_command(store: Store) -> None:
    location = store.engine.url.render_as_string(hide_password=False) if store.dialect == "postgresql" \
        else str(store.engine.url.database)

    def reviewers(*args: str) -> cli.Ran:
        return cli.shadowdiff("reviewers", *args)

    added = reviewers("add", location, "Zoë Ng", "--admin")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert token.startswith("sdr_") and "Zoë Ng (admin)" in added.stderr
    assert Reviewers(store).by_token(token).name == "Zoë Ng"            # type: ignore[union-attr]
    again = reviewers("add", location, "Zoë Ng")
    assert again.returncode != 0 and "already a reviewer" in again.stderr
    assert reviewers("add", location, "x" * 300).returncode != 0
    listed = reviewers("list", location)
    assert "Zoë Ng\tadmin\tactive" in listed.stdout and token not in listed.stdout
    assert reviewers("revoke", location, "Zoë Ng").returncode == 0
    assert Reviewers(store).by_token(token) is None
    assert "revoked" in reviewers("list", location).stdout
    new = reviewers("token", location, "Zoë Ng")
    assert new.returncode == 0 and Reviewers(store).by_token(new.stdout.strip()) is not None
    assert reviewers("revoke", location, "nobody").returncode != 0


def test_the_shared_token_never_takes_a_registered_name_from_its_cookie(ui: UI) -> None:
    """The name cookie of single-reviewer mode is the browser's to edit: a registered
    reviewer's name in it names nobody, so it neither writes as them nor opens their reveal."""
    base, store, run = ui
    _, token = Reviewers(store).add("Ana Lima")
    ana = httpx.Client(base_url=base)
    assert ana.post("/login", data={"token": token}).status_code == 303
    pid = pair_ids(store, run)["k2"]
    assert judge(ana, pid, "wording").status_code == 303
    shared = signed_in(base, "mallory")
    shared.cookies.set("shadowdiff_reviewer", "Ana%20Lima", path="/review")
    page = shared.get(f"/pairs/{pid}").text
    assert 'id="revealed"' not in page and "reviewing as <bdi>Ana" not in page
    forged = shared.post(f"/pairs/{pid}/verdict", data={"csrf": csrf_of(page), "verdict": "factual", "side": "A"})
    assert forged.status_code == 400
    script = httpx.post(f"{base}/pairs/{pid}/verdict", data={"verdict": "wording"},
                        headers={"authorization": f"Bearer {TOKEN}", "cookie": "shadowdiff_reviewer=Ana%20Lima"})
    assert script.status_code == 400
    named = httpx.post(f"{base}/pairs/{pid}/verdict", data={"verdict": "wording", "reviewer": "Ana Lima"},
                       headers={"authorization": f"Bearer {TOKEN}"})
    assert named.status_code == 400 and "token of their own" in named.json()["error"]
    assert [r.reviewer for r in ReviewQueue(store).reviews(pid)] == ["Ana Lima"]


def test_sessions_expire_and_have_one_spelling(ui: UI, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    base, store, _ = ui
    _, token = Reviewers(store).add("dan")
    client = httpx.Client(base_url=base)
    assert client.post("/login", data={"token": token}).status_code == 303
    session = client.cookies["shadowdiff_review"]
    _, reviewer_id, issued, mac = session.split(".")
    for forged in (f"r.0{reviewer_id}.{issued}.{mac}", f"r.{reviewer_id}.0{issued}.{mac}",
                   f"{session}.extra", f"r.{reviewer_id}.{int(issued) + 1}.{mac}"):
        assert httpx.get(base + "/", cookies={"shadowdiff_review": forged}).status_code == 401, forged
    assert httpx.get(base + "/", cookies={"shadowdiff_review": session}).status_code == 200
    week = 7 * 24 * 3600
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + week + 60)   # the server's clock, a week on
    assert httpx.get(base + "/", cookies={"shadowdiff_review": session}).status_code == 401


def test_sign_in_from_an_opaque_origin_is_refused(ui: UI) -> None:
    """A sandboxed frame posts with Origin: null; signing a browser in as someone else from
    there is refused (the UI's own form sends its real origin)."""
    base, store, _ = ui
    _, token = Reviewers(store).add("eve")
    refused = httpx.post(base + "/login", data={"token": token}, headers={"origin": "null"})
    assert refused.status_code == 403 and "shadowdiff_review=" not in str(refused.headers.get_list("set-cookie"))
    own = base.removesuffix("/review")
    assert httpx.post(base + "/login", data={"token": token}, headers={"origin": own}).status_code == 303


@pytest.mark.parametrize("name", ["ad\u202emin", "ana\u200b", "bob\x7f", "x\u2066y"])
def test_names_that_could_pass_for_another_are_refused(store: Store, name: str) -> None:
    from shadowdiff.errors import InputError

    with pytest.raises(InputError, match="invisible"):
        Reviewers(store).add(name)


@pytest.mark.parametrize("pattern", ["%only the baseline says%", '%"baseline_only": ["4%', "numbers%", "_umbers"])
def test_the_signal_filter_takes_a_kind_and_nothing_that_could_look_up_a_side(ui: UI, pattern: str) -> None:
    """The filter matches the stored signals as text, which hold the real sides: a pattern
    in it would tell a reviewer which letter is the baseline (a second hostile review
    did, for any pair). Only a signal kind is taken."""
    base, store, _ = ui
    client = as_reviewer(base, store, "ana")
    html = client.get("/").text
    for response in (client.get("/", params={"signal": pattern}),
                     client.post("/next", params={"signal": pattern}, data={"csrf": csrf_of(html)})):
        assert response.status_code == 400 and "must be one of" in response.text
    assert "/pairs/" in client.get("/", params={"signal": "numbers"}).text


def test_the_shared_token_claims_under_no_registered_name(ui: UI) -> None:
    base, store, run = ui
    Reviewers(store).add("Ana")
    claimed = httpx.post(base + "/next", data={"reviewer": "Ana"}, headers={"x-review-token": TOKEN})
    assert claimed.status_code == 400 and "token of their own" in claimed.json()["error"]
    assert {r["claimed_by"] for r in ReviewQueue(store).page(Filters(run_id=run))} == {None}
    assert httpx.post(base + "/next", data={"reviewer": "Mo"}, headers={"x-review-token": TOKEN}).status_code == 303


def test_names_have_one_spelling(store: Store) -> None:
    from shadowdiff.errors import InputError

    reviewers = Reviewers(store)
    assert reviewers.add("  Ａna   Lima ")[0].name == "Ana Lima"       # full-width letters, runs of spaces
    with pytest.raises(InputError, match="already a reviewer"):
        reviewers.add("Ana Lima")

"""The review UI's smaller holes closed, over real HTTP on SQLite and PostgreSQL:
sign-in rate limit, Cache-Control on every answer, input the store cannot hold refused
with a 400, exports whole or an error, and "next" handing out only what needs a verdict."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from shadowdiff.answers.compare import error_comparison
from shadowdiff.answers.records import Answer
from shadowdiff.errors import InputError
from shadowdiff.review.app import build_review_app
from shadowdiff.review.ratelimit import SignInLimit
from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.vocabulary import Side
from tests.support.factories import fill, pair
from tests.support.reviewing import TOKEN, csrf_of, signed_in
from tests.support.servers import serve_app

HTML = {"accept": "text/html"}
SCRIPT = {"x-review-token": TOKEN}

Served = tuple[str, Store, str]


def _with_unneeded_pairs(store: Store) -> str:
    """fill's pairs (k2 near, k4 and k1 divergent, k5 equivalent), a failed one (k6) and a
    divergent one that is not comparable (k7)."""
    run = fill(store)
    failed = pair("k6", "An answer.", "")
    failed = replace(failed, comparison=error_comparison(), answers={
        Side.BASELINE: Answer(Side.BASELINE, "m", "An answer."),
        Side.CANDIDATE: Answer(Side.CANDIDATE, "m", "", None, error="connection failed")})
    store.add_pairs(run, [failed, replace(pair("k7", "Cats are mammals.", "Rain falls down."), comparable=False)])
    return run


@contextlib.contextmanager
def serving(store: Store, **options: Any) -> Iterator[str]:
    limit = options.pop("limit", None)
    with serve_app(build_review_app(store, TOKEN, sign_in_limit=limit), **options) as url:
        yield url + "/review"


@pytest.fixture
def served(store: Store) -> Iterator[Served]:
    run = _with_unneeded_pairs(store)
    with serving(store) as base:
        yield base, store, run


def ids(store: Store, run: str) -> dict[str, int]:
    return {row["key"]: row["id"] for row in ReviewQueue(store).page(Filters(run_id=run))}


# -- 3: Cache-Control: no-store on every answer -----------------------------------------

def test_every_answer_says_no_store(served: Served) -> None:
    base, store, run = served
    pid = ids(store, run)["k2"]
    anonymous = httpx.Client(base_url=base)
    client = signed_in(base)
    csrf = csrf_of(client.get("/").text)
    answers = {
        "login page": anonymous.get("/login"),
        "wrong token": anonymous.post("/login", data={"token": "wrong-token-x", "reviewer": "ana"}),
        "sign-in": httpx.post(base + "/login", data={"token": TOKEN, "reviewer": "ana"}),
        "401": anonymous.get("/export.csv"),
        "redirect to sign-in": anonymous.get("/", headers=HTML),
        "queue": client.get("/"),
        "to the queue": client.get(base),
        "pair": client.get(f"/pairs/{pid}"),
        "no pair": client.get("/pairs/999999"),
        "bad filter": client.get("/", params={"run": "a\x00"}),
        "unknown page": client.get("/nothing-here"),
        "wrong method": client.get("/next"),
        "verdict": client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "wording"}),
        "bad verdict": client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "great"},
                                   headers=HTML),
        "csrf refused": client.post("/next", data={"csrf": "forged"}),
        "next": client.post("/next", data={"csrf": csrf}),
        "csv": client.get("/export.csv"),
        "jsonl": client.get("/export.jsonl"),
        "sign-out": client.post("/logout", data={"csrf": csrf}),
    }
    statuses = {name: response.status_code for name, response in answers.items()}
    assert statuses == {"login page": 200, "wrong token": 401, "sign-in": 303, "401": 401,
                        "redirect to sign-in": 303, "queue": 200, "to the queue": 307, "pair": 200,
                        "no pair": 404, "bad filter": 400, "unknown page": 404, "wrong method": 405,
                        "verdict": 303, "bad verdict": 303, "csrf refused": 403, "next": 303, "csv": 200,
                        "jsonl": 200, "sign-out": 303}
    missing = {name for name, response in answers.items() if response.headers.get("cache-control") != "no-store"}
    assert missing == set()
    locked = SignInLimit(per_client=1)
    with serving(store, limit=locked) as other:
        httpx.post(other + "/login", data={"token": "wrong-token-x", "reviewer": "ana"})
        refused = httpx.post(other + "/login", data={"token": TOKEN, "reviewer": "ana"})
        assert refused.status_code == 429 and refused.headers["cache-control"] == "no-store"


def test_the_store_down_answer_says_no_store(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    base, _, _ = served
    client = signed_in(base)

    def down(*_args: Any, **_kwargs: Any) -> Any:
        raise OperationalError("SELECT", {}, Exception("the test's store is down"))

    monkeypatch.setattr(ReviewQueue, "page", down)
    response = client.get("/")
    assert response.status_code == 503 and response.headers["cache-control"] == "no-store"


# -- 4: input the store cannot hold: 400 with a message ---------------------------------

@pytest.mark.parametrize("name", ["run", "outcome", "suggested", "signal", "verdict"])
def test_a_nul_byte_or_overlong_filter_is_a_400(served: Served, name: str) -> None:
    base, _, _ = served
    client = signed_in(base)
    csrf = csrf_of(client.get("/").text)
    for value, said in (("a\x00b", "NUL byte"), ("x" * 256, "longer than 255 characters")):
        page = client.get("/", params={name: value}, headers=HTML)
        assert page.status_code == 400 and f"the {name} filter" in page.text and said in page.text
        assert page.headers["content-type"].startswith("text/html")
        script = httpx.get(base + "/", params={name: value}, headers=SCRIPT)
        assert script.status_code == 400
        assert said in script.json()["error"] and f"the {name} filter" in script.json()["error"]
        claim = client.post("/next", params={name: value}, data={"csrf": csrf}, headers=HTML)
        assert claim.status_code == 400 and said in claim.text
    exported = httpx.get(base + "/export.jsonl", params={"run": "a\x00"}, headers=SCRIPT)
    assert exported.status_code == 400 and "NUL byte" in exported.json()["error"]
    # the offset is a number or nothing: anything else is ignored, as before
    assert client.get("/", params={"offset": "1\x00"}).status_code == 200


def test_names_and_notes_the_store_cannot_hold_are_a_400(served: Served) -> None:
    base, store, run = served
    pid = ids(store, run)["k2"]
    long_name = "é" * 256
    for name, said in ((long_name, "at most 255 characters"), ("ana\x00", "control or invisible characters (NUL")):
        refused = httpx.post(base + "/login", data={"token": TOKEN, "reviewer": name})
        assert refused.status_code == 400 and said in refused.text and "shadowdiff_review=" not in str(
            refused.headers.get_list("set-cookie"))
    client = signed_in(base)
    csrf = csrf_of(client.get(f"/pairs/{pid}").text)
    for form, said in (({"reviewer": long_name}, "at most 255"), ({"note": "a\x00b"}, "NUL byte"),
                       ({"note": "n" * 10_001}, "longer than 10,000")):
        script = httpx.post(base + f"/pairs/{pid}/verdict", data={"verdict": "wording", "reviewer": "ana", **form},
                             headers=SCRIPT)
        assert script.status_code == 400 and said in script.json()["error"]
        page = client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "wording", **form},
                           headers=HTML)
        assert page.status_code == 303
        assert said in client.get(client.base_url.join(page.headers["location"])).text
    # a name from a cookie (percent-encoded, so it can say anything) is checked as well:
    # one the store could not hold names nobody (the claim is anonymous, never a 500)
    for bad in ("x" * 300, "a\x00b"):
        client.cookies.set("shadowdiff_reviewer", quote(bad), path="/review")
        assert "reviewing as" not in client.get("/").text
        claimed = client.post("/next", data={"csrf": csrf}, headers=HTML)
        assert claimed.status_code == 303
        claimants = {r["claimed_by"] for r in ReviewQueue(store).page(Filters(run_id=run))} - {None}
        assert claimants == {"anonymous"}
        refused = client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "wording"}, headers=SCRIPT)
        assert refused.status_code == 400 and "needs a name" in refused.json()["error"]
    assert ReviewQueue(store).reviews(pid) == []
    with pytest.raises(InputError, match="control or invisible characters"):
        ReviewQueue(store).claim_next("a\x00")


# -- 5: an export is whole or an error -----------------------------------------------------

def test_an_export_that_fails_part_way_is_a_503_not_a_cut_file(served: Served,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    base, store, run = served
    queue = ReviewQueue(store)
    for key in ("k2", "k4", "k1"):
        queue.add_review(ids(store, run)[key], "ana", "wording")
    real = sa.engine.Result.__iter__

    def failing_after_two(self: Any) -> Iterator[Any]:
        # the database goes away after two rows of the reviews' read
        for n, row in enumerate(real(self)):
            if n == 2 and "reviewer" in row._fields:
                raise OperationalError("SELECT", {}, Exception("connection lost"))
            yield row

    client = signed_in(base)
    whole = {path: client.get(path).text for path in ("/export.csv", "/export.jsonl")}
    assert whole["/export.csv"].count("\n") == 4 and whole["/export.jsonl"].count("\n") == 3
    monkeypatch.setattr(sa.engine.Result, "__iter__", failing_after_two)
    for path in ("/export.csv", "/export.jsonl"):
        response = client.get(path)
        assert response.status_code == 503, (path, response.text)
        assert "not answering" in response.text and "k2" not in response.text
    monkeypatch.undo()
    assert {path: client.get(path).text for path in whole} == whole
    # spilled to disk past its memory bound, the same file, and its length said
    monkeypatch.setattr("shadowdiff.review.export.IN_MEMORY", 64)
    for path, text in whole.items():
        response = client.get(path)
        assert response.text == text and int(response.headers["content-length"]) == len(text.encode())


def test_an_export_over_a_locked_postgresql_store_is_a_503(tmp_path: Any) -> None:
    from tests.support.fixtures import postgres_database
    from tests.support.storefaults import PgLock, injected

    with postgres_database() as url:
        writer = Store.open(url)
        run = fill(writer)
        ReviewQueue(writer).add_review(ids(writer, run)["k2"], "ana", "wording")
        reads = Store.open(url, timeout=1.0)
        try:
            with serving(reads) as base, injected(PgLock(url)):
                response = httpx.get(base + "/export.csv", headers=SCRIPT, timeout=30)
                assert response.status_code == 503 and "k2" not in response.text
        finally:
            reads.close()
            writer.close()


# -- 6: "next" hands out what needs a verdict ---------------------------------------------

def test_next_hands_out_only_pairs_that_need_a_verdict_unless_asked(served: Served) -> None:
    base, store, run = served
    client = signed_in(base)
    csrf = csrf_of(client.get("/").text)
    by_id = {pid: key for key, pid in ids(store, run).items()}
    handed = []
    while True:
        response = client.post("/next", data={"csrf": csrf})
        assert response.status_code == 303
        location = response.headers["location"]
        if "/pairs/" not in location:
            break
        pid = int(location.rsplit("/", 1)[1])
        handed.append(by_id[pid])
        assert client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "wording"}).status_code == 303
    assert handed == ["k2", "k4", "k1"]        # by priority; never k5 (equivalent), k6 (failed), k7 (not comparable)
    assert "Nothing left that needs a verdict" in client.get(client.base_url.join(location)).text
    for outcome, key in (("equivalent", "k5"), ("error", "k6")):
        asked = client.post("/next", params={"outcome": outcome}, data={"csrf": csrf})
        # (the claimed pair's page keeps the filter: its next/previous walk the same selection)
        assert asked.headers["location"].endswith(f"?outcome={outcome}")
        assert by_id[int(asked.headers["location"].rsplit("/", 1)[1].split("?")[0])] == key
    divergent = client.post("/next", params={"outcome": "divergent"}, data={"csrf": csrf})
    assert by_id[int(divergent.headers["location"].rsplit("/", 1)[1].split("?")[0])] == "k7"  # asked: any divergent


# -- 2: the sign-in rate limit ---------------------------------------------------------------

def test_ten_wrong_tokens_lock_the_address_out_the_right_one_included(served: Served) -> None:
    base, _, _ = served
    for _ in range(10):
        wrong = httpx.post(base + "/login", data={"token": "wrong-token-x", "reviewer": "ana"})
        assert wrong.status_code == 401
    locked = httpx.post(base + "/login", data={"token": TOKEN, "reviewer": "ana"}, headers=HTML)
    assert locked.status_code == 429 and not locked.headers.get_list("set-cookie")
    assert 290 <= int(locked.headers["retry-after"]) <= 300
    assert "Too many failed sign-ins from your address" in locked.text and "5 minutes" in locked.text
    assert "the right token included" in locked.text
    # scripts are locked out of the header token alike, and told so in JSON
    script = httpx.get(base + "/export.jsonl", headers=SCRIPT)
    assert script.status_code == 429 and "Too many failed sign-ins" in script.json()["error"]
    assert int(script.headers["retry-after"]) > 0


def test_wrong_header_tokens_count_and_sessions_go_on(served: Served) -> None:
    base, _, _ = served
    client = signed_in(base)             # signed in before the guessing starts
    for _ in range(10):
        assert httpx.get(base + "/", headers={"authorization": "Bearer wrong-token-x"}).status_code == 401
    assert httpx.get(base + "/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 429
    assert httpx.post(base + "/login", data={"token": TOKEN, "reviewer": "bo"}).status_code == 429
    assert client.get("/").status_code == 200      # an open session is not a guess
    # another scheme's Authorization (an ingress's Basic) is not a review token: not counted
    fresh = SignInLimit()
    with serving(served[1], limit=fresh) as other:
        for _ in range(12):
            httpx.get(other + "/", headers={"authorization": "Basic YTpi"})
        assert fresh.locked("127.0.0.1") is None


def test_a_lockout_lifts_after_the_window_and_success_forgets_nothing(store: Store) -> None:
    """A right token between wrong ones does not wipe them: else a reviewer with a token
    of their own could guess at another's nine times between each sign-in of theirs."""
    fill(store)
    now = [1000.0]
    limit = SignInLimit(per_client=3, window=60.0, clock=lambda: now[0])
    with serving(store, limit=limit) as base:
        def sign_in(token: str) -> int:
            return httpx.post(base + "/login", data={"token": token, "reviewer": "ana"}).status_code

        assert [sign_in("wrong-token-x") for _ in range(2)] == [401, 401]
        assert sign_in(TOKEN) == 303                     # two mistakes, then the right token: let in...
        assert [sign_in("wrong-token-x") for _ in range(2)] == [401, 429]   # ...but the mistakes still count
        assert sign_in(TOKEN) == 429
        now[0] += 59.0
        assert sign_in(TOKEN) == 429
        now[0] += 1.5
        assert sign_in(TOKEN) == 303


def test_many_addresses_together_are_limited_too(store: Store) -> None:
    """Behind a trusted proxy each client counts by its own address (X-Forwarded-For); a
    guess spread over many addresses meets the overall limit."""
    fill(store)
    limit = SignInLimit(per_client=3, overall=20)
    with serving(store, limit=limit, proxy_headers=True, forwarded_allow_ips="127.0.0.1") as base:
        def sign_in(token: str, address: str) -> httpx.Response:
            return httpx.post(base + "/login", data={"token": token, "reviewer": "ana"},
                              headers={"x-forwarded-for": address})

        for _ in range(3):
            assert sign_in("wrong-token-x", "10.0.0.1").status_code == 401
        assert sign_in(TOKEN, "10.0.0.1").status_code == 429
        assert sign_in(TOKEN, "10.0.0.2").status_code == 303     # another address: its own count
        for n in range(17):
            assert sign_in("wrong-token-x", f"10.0.1.{n}").status_code == 401
        everyone = sign_in(TOKEN, "10.0.0.3")
        assert everyone.status_code == 429 and "from all addresses together" in everyone.text


def test_the_table_of_addresses_is_bounded() -> None:
    limit = SignInLimit(per_client=2, overall=10**9, max_clients=100)
    for n in range(10_000):
        limit.failed(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}")
    assert len(limit._clients) == 100
    limit.failed("2001:db8::1")
    limit.failed("2001:db8::2")                 # the same /64: one machine
    assert limit.locked("2001:db8::ffff") is not None and limit.locked("2001:db8:0:1::1") is None

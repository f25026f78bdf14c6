"""The review UI over real HTTP: the token, CSRF, escaping, blind sides, verdicts, export, search."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest
from markupsafe import escape

from shadowdiff.answers.compare import compare_answers, error_comparison
from shadowdiff.answers.records import Answer
from shadowdiff.review.app import build_review_app
from shadowdiff.review.blind import Blinding, blind
from shadowdiff.review.forms import ERRORS
from shadowdiff.review.pages import MESSAGES
from shadowdiff.store import Store, schema
from shadowdiff.store.review import ReviewQueue
from shadowdiff.store.reviewers import Reviewers
from shadowdiff.vocabulary import Side
from tests.support import cli
from tests.support.answercells import cells, text_of
from tests.support.factories import fill, pair
from tests.support.reviewing import TOKEN, csrf_of, pair_ids, signed_in
from tests.support.servers import free_port, serve_app, wait_ready

XSS = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    store = Store.open(tmp_path)
    yield store
    store.close()


@pytest.fixture
def ui(sqlite_store: Store) -> Iterator[tuple[str, Store, str]]:
    run = fill(sqlite_store)
    sqlite_store.add_pairs(run, [pair("k9", f"The answer is {XSS} and 7.", f"The answer is {XSS} and 8.")])
    with serve_app(build_review_app(sqlite_store, TOKEN)) as url:
        yield url + "/review", sqlite_store, run


def _all(run: str) -> Any:
    from shadowdiff.store.review import Filters

    return Filters(run_id=run)


def test_no_token_no_data(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    pid = pair_ids(store, run)["k2"]
    for path in ["/", f"/pairs/{pid}", "/export.csv", "/export.jsonl"]:
        response = httpx.get(base + path)
        assert response.status_code == 401, path
        assert "42 dollars" not in response.text and "k2" not in response.text
    # a browser is sent to the login form instead
    response = httpx.get(base + "/", headers={"accept": "text/html"})
    assert response.status_code == 303 and response.headers["location"] == "/review/login?next=%2Freview%2F"
    for path in [f"/pairs/{pid}/verdict", "/next"]:
        assert httpx.post(base + path, data={"verdict": "wording"}).status_code == 401
    assert httpx.get(base + "/", headers={"authorization": "Bearer wrong-token-xx"}).status_code == 401
    assert httpx.get(base + "/", cookies={"shadowdiff_review": "forged"}).status_code == 401
    assert ReviewQueue(store).reviews(pid) == []


def test_login_sets_a_lax_httponly_cookie_that_is_not_the_token(ui: tuple[str, Store, str]) -> None:
    base, _, _ = ui
    bad = httpx.post(base + "/login", data={"token": "nope-nope-nope", "reviewer": "ana"})
    assert bad.status_code == 401 and "wrong token" in bad.text
    good = httpx.post(base + "/login", data={"token": TOKEN, "reviewer": "ana"})
    cookies = good.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("shadowdiff_review="))
    # lax: a link from a report to a pair arrives signed in; writes are POSTs (not sent cross-site by lax)
    assert "HttpOnly" in session and "SameSite=lax" in session and "Path=/review" in session
    assert TOKEN not in session
    named = next(c for c in cookies if c.startswith("shadowdiff_reviewer="))     # the typed name's cookie
    assert "HttpOnly" in named and "SameSite=lax" in named and "Path=/review" in named


def test_sign_in_returns_to_the_page_that_asked_for_it_and_nowhere_else(ui: tuple[str, Store, str]) -> None:
    base, _, _ = ui
    asked = httpx.get(base + "/pairs/2?outcome=near", headers={"accept": "text/html"})
    assert asked.status_code == 303
    login = asked.headers["location"]
    assert login == "/review/login?next=%2Freview%2Fpairs%2F2%3Foutcome%3Dnear"
    form = httpx.get(base.removesuffix("/review") + login).text
    assert 'name="next" value="/review/pairs/2?outcome=near"' in form
    signed = httpx.post(base + "/login",
                        data={"token": TOKEN, "reviewer": "ana", "next": "/review/pairs/2?outcome=near"})
    assert signed.status_code == 303 and signed.headers["location"] == "/review/pairs/2?outcome=near"
    # a wrong token keeps the way back in the form
    wrong = httpx.post(base + "/login", data={"token": "nope-nope-nope", "reviewer": "ana", "next": "/review/pairs/2"})
    assert wrong.status_code == 401 and 'name="next" value="/review/pairs/2"' in wrong.text
    # never another site, nor a page outside the review UI: nor a path the browser resolves
    # out of it ("/review/..//evil.example" is "//evil.example"), written plainly or
    # percent-encoded once
    for elsewhere in ("https://evil.example/review/", "//evil.example/review/", "/review\\@evil.example",
                      "/admin", "javascript:alert(1)", "/review/" + "x" * 3000,
                      "/review/..//evil.example", "/review/../admin", "/review/./pairs/2", "/review/pairs/..",
                      "/review//evil.example", "/review/pairs//2", "/review/pairs/2\\x", "/review/\tpairs/2",
                      "/review/pairs/2\n", "/review/pairs/2?q=\r", "/review/pairs/\x7f",
                      "/review/%2e%2e//evil.example", "/review/.%2E/admin", "/review/%2E/pairs/2",
                      "/review/%2f%2fevil.example", "/review/%2F/evil.example", "/review/%5cevil.example",
                      "/review/pairs/2%00", "/review/%09pairs/2", "/review/pairs/%7F"):
        away = httpx.post(base + "/login", data={"token": TOKEN, "reviewer": "ana", "next": elsewhere})
        assert away.headers["location"] == "/review/", elsewhere
        assert f'value="{elsewhere}"' not in httpx.get(base + "/login", params={"next": elsewhere}).text
    # what is not a dot segment, a double slash nor a control character still returns
    for fine in ("/review/pairs/2?q=a//b", "/review/pairs/2?q=..", "/review/?q=%2e%2e", "/review/.x/..y"):
        back = httpx.post(base + "/login", data={"token": TOKEN, "reviewer": "ana", "next": fine})
        assert back.headers["location"] == fine


def test_queue_is_ordered_by_priority_and_filters(ui: tuple[str, Store, str]) -> None:
    base, _, _ = ui
    client = signed_in(base)
    page = client.get("/").text
    keys = re.findall(r'/pairs/\d+\?[^"]*">(k\d)</a>', page)
    assert keys.index("k2") < keys.index("k1") and keys.index("k4") < keys.index("k5")
    assert "0 of 4 pairs that need a verdict are reviewed" in page and "5 changed and 0 failed pairs in all" in page
    numbers = client.get("/", params={"signal": "numbers"}).text
    assert set(re.findall(r'">(k\d)</a>', numbers)) == {"k2", "k9"}
    assert client.get("/", params={"offset": "-3x"}).status_code == 200  # bad input: ignored, not a 500


def test_scripts_use_the_token_as_a_header(ui: tuple[str, Store, str]) -> None:
    base, _, _ = ui
    for headers in ({"authorization": f"Bearer {TOKEN}"}, {"x-review-token": TOKEN}):
        assert httpx.get(base + "/export.jsonl", headers=headers).status_code == 200


def test_answers_and_prompts_are_escaped(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base)
    response = client.get(f"/pairs/{pair_ids(store, run)['k9']}")
    assert response.status_code == 200
    assert "<script>document" not in response.text and "<img src=x" not in response.text
    assert "&lt;script&gt;document.title" in response.text
    policy = response.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert nonce and script_src.strip() == f"script-src 'nonce-{nonce.group(1)}'"
    assert response.text.count(f'nonce="{nonce.group(1)}"') == 1  # only the page's own script


def test_the_pair_page_shows_the_whole_answer(ui: tuple[str, Store, str]) -> None:
    """Reasoning collapsed, tool calls in a table, each marked alike on both sides (blind),
    and a hostile tool name escaped."""
    base, store, run = ui

    def call(unit: str) -> list[dict[str, Any]]:
        return [{"id": "x", "type": "function",
                 "function": {"name": "<b>get_weather</b>", "arguments": f'{{"unit": "{unit}"}}'}}]

    changed = pair("k8", "", "")
    changed.answers[Side.BASELINE] = replace(changed.answers[Side.BASELINE], reasoning="17 * 23 = 391",
                                             tool_calls=call("celsius"))
    changed.answers[Side.CANDIDATE] = replace(changed.answers[Side.CANDIDATE], reasoning="17 * 23 = 381",
                                              tool_calls=call("fahrenheit"))
    store.add_pairs(run, [replace(changed, comparison=compare_answers(*changed.answers.values()))])
    page = signed_in(base).get(f"/pairs/{pair_ids(store, run)['k8']}").text
    [summary] = re.findall(r'<details class="reasoning"><summary>(.*?)</summary>', page, re.S)
    assert "differs" in summary and "13 | 13 characters" in summary
    reasoning = cells(page, "reasoning", "l") + cells(page, "reasoning", "r")
    assert sorted(reasoning) == ["17 * 23 = <mark>381</mark>", "17 * 23 = <mark>391</mark>"]
    calls = [cells(page, "calls", side) for side in "lr"]
    assert all(side[0] == "&lt;b&gt;get_weather&lt;/b&gt;" for side in calls)   # the name, then the arguments
    assert {unescape(calls[0][1] or ""), unescape(calls[1][1] or "")} == {
        '{"unit": "<mark>celsius</mark>"}', '{"unit": "<mark>fahrenheit</mark>"}'}
    assert "<del>" not in page and "<ins>" not in page   # which side deleted would give the baseline away
    assert '<table class="diff text">' not in page      # no empty text beside the tool calls


def test_the_pair_page_shows_the_conversation_and_the_offered_tools(ui: tuple[str, Store, str]) -> None:
    """A reviewer judging a tool call needs the tools it could call and the results the
    answer continues from; hostile text in them stays text."""
    base, store, run = ui
    request = {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21, "note": "<script>x()</script>"}'}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather <now>",
                                                    "parameters": {"type": "object", "properties": {
                                                        "unit": {"enum": ["celsius", "fahrenheit"]}}}}}],
        "tool_choice": "auto"}
    store.add_pairs(run, [replace(pair("k30", "It is 21 C.", "It is 21 F."), request=request)])
    page = signed_in(base).get(f"/pairs/{pair_ids(store, run)['k30']}").text
    [view] = re.findall(r'<details class="request">.*?</details>', page, re.S)
    assert "3 messages, 1 tools offered (tool_choice <bdi>auto</bdi>)" in view
    assert "<strong>tool (c1)</strong>" in view and "&#34;temp&#34;: 21" in view and "<script>" not in view
    assert "<code>get_weather</code>" in view and "The weather &lt;now&gt;" in view and "fahrenheit" in view


def test_the_marks_do_not_point_at_the_baseline(ui: tuple[str, Store, str]) -> None:
    """Two words that swap places: the diff keeps one of them, and which one must not
    follow the sides' order (the baseline's first word, once), nor the page's: each
    text is marked the same whether it is shown as A or as B."""
    base, store, run = ui
    store.add_pairs(run, [pair(f"k{20 + i}", "alpha beta", "beta alpha") for i in range(12)])
    client, kept = signed_in(base), set()
    ids = pair_ids(store, run)
    for i in range(12):
        page = client.get(f"/pairs/{ids[f'k{20 + i}']}").text
        for letter in "AB":
            side = text_of(page, "lr"["AB".index(letter)])
            kept.add((re.sub(r"</?mark>", "", side), side))
    assert {text for text, _ in kept} == {"alpha beta", "beta alpha"}
    assert len(kept) == 2   # each text has one marking, on A and on B alike


def test_sides_are_blind_random_and_stable(ui: tuple[str, Store, str], sqlite_store: Store) -> None:
    base, store, run = ui
    client = signed_in(base)
    pid = pair_ids(store, run)["k2"]
    first = client.get(f"/pairs/{pid}").text
    assert _without_nonce(first) == _without_nonce(client.get(f"/pairs/{pid}").text)
    assert 'id="revealed"' not in first
    # neither the headings nor the explained signals say which side is which
    sides = re.findall(r'<th class="([lr])">\s*<h2 id="side-([AB])">([^<]*)</h2>', first)
    assert sides == [("l", "A", "A"), ("r", "B", "B")]
    signals = first.split('id="signals"')[1].split("</ul>")[0]
    assert not re.search(r"baseline|candidate", signals, re.IGNORECASE)
    blinding = Blinding(store.secret("blind_key"))
    orders = {blinding.a_is_baseline(i) for i in range(1, 40)}
    assert orders == {True, False}
    expected = "42" if blinding.a_is_baseline(pid) else "43"
    assert expected in text_of(first, "l")
    # no query parameter reveals the sides
    assert 'id="revealed"' not in client.get(f"/pairs/{pid}", params={"reveal": "1"}).text


def _without_nonce(html: str) -> str:
    return re.sub(r'nonce="[^"]+"', "", html)


def follow(client: httpx.Client, response: httpx.Response) -> httpx.Response:
    return client.get(client.base_url.join(response.headers["location"]))


def test_a_verdict_is_recorded_against_the_right_side_and_revealed(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base)
    pid = pair_ids(store, run)["k2"]
    html = client.get(f"/pairs/{pid}").text
    wrong_letter = Blinding(store.secret("blind_key")).letter(Side.CANDIDATE, pid)
    response = client.post(f"/pairs/{pid}/verdict", data={
        "csrf": csrf_of(html), "verdict": "factual", "wrong": wrong_letter, "note": "43 is wrong",
        "reviewer": "ana"})
    assert response.status_code == 303
    [review] = ReviewQueue(store).reviews(pid)
    assert (review.reviewer, review.verdict.value, review.wrong_side, review.note) == \
        ("ana", "factual", Side.CANDIDATE, "43 is wrong")
    after = follow(client, response).text
    assert 'id="revealed"' in after and "factual" in after


def test_forms_refuse_cross_site_requests(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base)
    pid = pair_ids(store, run)["k1"]
    csrf = csrf_of(client.get(f"/pairs/{pid}").text)
    no_token = client.post(f"/pairs/{pid}/verdict", data={"verdict": "wording", "reviewer": "ana"})
    assert no_token.status_code == 403
    forged = client.post(f"/pairs/{pid}/verdict", data={"csrf": "0" * 64, "verdict": "wording", "reviewer": "ana"})
    assert forged.status_code == 403
    foreign = client.post(f"/pairs/{pid}/verdict", headers={"origin": "https://evil.example"},
                          data={"csrf": csrf, "verdict": "wording", "reviewer": "ana"})
    assert foreign.status_code == 403
    assert client.post("/next", data={}).status_code == 403
    assert ReviewQueue(store).reviews(pid) == []


def test_sign_out_forgets_the_session_and_the_name(ui: tuple[str, Store, str]) -> None:
    base, _, _ = ui
    client = signed_in(base, "ana")
    page = client.get("/").text
    assert "reviewing as <bdi>ana</bdi>" in page and 'action="/review/logout"' in page
    csrf = csrf_of(page)
    # another site cannot sign a reviewer out
    assert client.post("/logout", data={}).status_code == 403
    assert client.post("/logout", headers={"origin": "https://evil.example"}, data={"csrf": csrf}).status_code == 403
    assert client.get("/").status_code == 200
    response = client.post("/logout", data={"csrf": csrf})
    assert response.status_code == 303 and response.headers["location"] == "/review/login"
    assert_cookies_cleared(response)
    assert not client.cookies
    assert client.get("/").status_code == 401
    assert "reviewing as" not in client.get("/login").text


def test_a_voided_session_can_still_sign_out(ui: tuple[str, Store, str]) -> None:
    """After a reviewer's token is reissued, their old session opens nothing, shows no
    name as signed in, and can still be cleared from a page open before."""
    base, store, _ = ui
    _, token = Reviewers(store).add("cleo")
    client = httpx.Client(base_url=base)
    assert client.post("/login", data={"token": token}).status_code == 303
    csrf = csrf_of(client.get("/").text)
    Reviewers(store).reissue("cleo")
    assert client.get("/").status_code == 401
    login = client.get("/login").text
    assert "reviewing as" not in login and 'id="signout"' not in login
    response = client.post("/logout", data={"csrf": csrf})
    assert response.status_code == 303
    assert_cookies_cleared(response)
    stranger = httpx.Client(base_url=base, cookies={"shadowdiff_review": "r.1.forged"})
    assert stranger.post("/logout", data={"csrf": csrf}).status_code == 403   # another session's CSRF token


def assert_cookies_cleared(response: httpx.Response) -> None:
    cleared = response.headers.get_list("set-cookie")
    for name in ("shadowdiff_review=", "shadowdiff_reviewer="):
        cookie = next(c for c in cleared if c.startswith(name))
        assert "Max-Age=0" in cookie and "Path=/review" in cookie


def test_bad_verdicts_get_clear_errors_and_store_nothing(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base)
    pid = pair_ids(store, run)["k1"]
    csrf = csrf_of(client.get(f"/pairs/{pid}").text)
    cases = [
        ({"verdict": "great"}, 400, "unknown verdict"),
        ({"verdict": "factual"}, 400, "which side is wrong: A or B"),
        ({"verdict": "wording", "reviewer": " "}, 400, "reviewer"),
        ({"verdict": "wording", "note": "x" * 10_001}, 400, "10,000"),
    ]
    for data, status, message in cases:
        response = client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "reviewer": "ana", **data})
        assert response.status_code == status and message in response.json()["error"], data
    missing = client.post("/pairs/999999/verdict", data={"csrf": csrf, "verdict": "wording", "reviewer": "ana"})
    assert missing.status_code == 404
    assert client.get("/pairs/999999").status_code == 404
    assert client.get("/pairs/abc").status_code == 404
    # a browser is sent back to the pair with the reason shown
    html = client.post(f"/pairs/{pid}/verdict", headers={"accept": "text/html"},
                       data={"csrf": csrf, "verdict": "factual", "reviewer": "ana"})
    assert html.status_code == 303
    assert "which side is wrong: A or B" in follow(client, html).text
    assert ReviewQueue(store).reviews(pid) == []


def test_second_verdicts_are_kept_and_disagreement_shows(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    pid = pair_ids(store, run)["k4"]
    for name, verdict in (("ana", "wording"), ("bob", "ambiguous")):
        client = signed_in(base, name)
        csrf = csrf_of(client.get(f"/pairs/{pid}").text)
        assert client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": verdict}).status_code == 303
    assert [(r.reviewer, r.verdict.value) for r in ReviewQueue(store).reviews(pid)] == \
        [("ana", "wording"), ("bob", "ambiguous")]
    assert 'title="reviewers disagree"' in client.get("/").text


def test_next_claims_distinct_pairs_for_two_reviewers(ui: tuple[str, Store, str]) -> None:
    base, _, _ = ui
    ana, bob = signed_in(base, "ana"), signed_in(base, "bob")
    got = []
    for client in (ana, bob):
        response = client.post("/next", data={"csrf": csrf_of(client.get("/").text)})
        assert response.status_code == 303
        got.append(response.headers["location"])
    assert got[0] != got[1] and all("/pairs/" in g for g in got)


def test_export_csv_and_jsonl_hold_every_verdict(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    queue = ReviewQueue(store)
    ids = pair_ids(store, run)
    queue.add_review(ids["k1"], "ana", "wording", note='comma, "quote"\nnewline')
    queue.add_review(ids["k2"], "bob", "factual", "candidate")
    client = signed_in(base)
    rows = list(csv.DictReader(io.StringIO(client.get("/export.csv").text)))
    assert [(r["key"], r["reviewer"], r["verdict"], r["wrong_side"]) for r in rows] == \
        [("k1", "ana", "wording", ""), ("k2", "bob", "factual", "candidate")]
    assert rows[0]["note"] == 'comma, "quote"\nnewline'
    lines = [json.loads(line) for line in client.get("/export.jsonl").text.splitlines()]
    assert [(r["key"], r["verdict"]) for r in lines] == [("k1", "wording"), ("k2", "factual")]
    assert client.get("/export.jsonl", params={"run": "no-such-run"}).text == ""


def test_blind_rewrites_side_names_in_reasons() -> None:
    assert blind("the baseline's 42 became 43 in the candidate", True) == "A's 42 became 43 in B"
    assert blind("Baseline stops early", False) == "B stops early"


def test_serve_mounts_the_ui_under_review(start_simulator: Any, start_proxy: Any, tmp_path: Path) -> None:
    from shadowdiff.simulator import profiles
    from tests.support.proxying import chat, wait_for

    fp8 = "Qwen/Qwen3-8B-FP8"
    primary = start_simulator()
    shadow = start_simulator(served_model_names=(fp8,), profile=profiles.builtin("fp8-heavy"))
    url, _ = start_proxy(primary=primary, shadow=shadow, shadow_model=fp8, review_token=TOKEN,
                         store=str(tmp_path / "s"))
    assert httpx.get(url + "/review/").status_code == 401
    for i in range(12):
        assert httpx.post(url + "/v1/chat/completions", json=chat(f"Explain topic {i} with figures.")).is_success
    client = signed_in(url + "/review")
    # the mirrored pairs that changed reach the queue as the writer stores them
    wait_for(lambda: "/review/pairs/" in client.get("/").text)
    first = re.search(r'href="/review/pairs/(\d+)', client.get("/").text)
    assert first
    page = client.get(f"/pairs/{first.group(1)}")
    assert page.status_code == 200 and "Explain topic" in page.text
    verdict = client.post(f"/pairs/{first.group(1)}/verdict", data={"csrf": csrf_of(page.text), "verdict": "minor",
                                                                     "side": "A"})
    assert verdict.status_code == 303
    assert "1 minor" in client.get("/").text
    assert httpx.get(url + "/v1/models").status_code == 200           # the proxy still proxies
    # without a token the UI is off and /review belongs to the primary (vLLM: 404)
    plain, _ = start_proxy(primary=primary)
    assert httpx.get(plain + "/review/").status_code == 404


def test_short_tokens_are_refused() -> None:
    from shadowdiff.errors import ConfigError
    from shadowdiff.proxy.settings import ProxySettings

    with pytest.raises(ConfigError, match="at least 8"):
        ProxySettings(primary="http://127.0.0.1:1", review_token="short")


def test_review_command_serves_a_replay_store(sqlite_store: Store, tmp_path: Path) -> None:
    fill(sqlite_store)
    port = free_port()
    missing = cli.shadowdiff("review", str(tmp_path / "nothing"))
    assert missing.returncode == 3 and "no store at" in missing.stderr
    process = subprocess.Popen([sys.executable, "-m", "shadowdiff", "review", str(tmp_path), "--port", str(port)],
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        base = f"http://127.0.0.1:{port}/review"
        wait_ready(base + "/login", process)
        assert process.stderr is not None
        token = ""
        while not token:
            line = process.stderr.readline()
            token = line.split("token ", 1)[1].strip() if "sign in with the token" in line else ""
        client = httpx.Client(base_url=base)
        assert client.post("/login", data={"token": token, "reviewer": "ana"}).status_code == 303
        assert "k2" in client.get("/").text
    finally:
        process.terminate()
        process.wait(10)


def test_the_blind_order_belongs_to_the_store_not_the_token(tmp_path: Path) -> None:
    one, other = Store.open(tmp_path / "one"), Store.open(tmp_path / "other")
    try:
        fill(one)
        key = one.secret("blind_key")
        assert len(key) == 64 and key != other.secret("blind_key")
        with serve_app(build_review_app(one, TOKEN)) as a, serve_app(build_review_app(one, "another-token")) as b:
            pid = ReviewQueue(one).page(_all(one.latest_run().id))[0]["id"]  # type: ignore[union-attr]
            pages = []
            for url, token in ((a, TOKEN), (b, "another-token")):
                html = httpx.get(f"{url}/review/pairs/{pid}", headers={"x-review-token": token}).text
                pages.append(text_of(html, "l"))
            assert pages[0] == pages[1]                   # the same order whoever serves it
        one.close()
        assert Store.open(tmp_path / "one").secret("blind_key") == key   # and across restarts
    finally:
        other.close()


def test_nothing_on_the_page_names_a_side_before_the_verdict(sqlite_store: Store) -> None:
    from shadowdiff.answers.compare import compare
    from shadowdiff.answers.records import Answer, Pair
    from shadowdiff.triage.signals import triage_answers

    run = sqlite_store.create_run("serve", {})
    base = Answer(Side.BASELINE, "m", "Label: Positive", "stop")
    cand = Answer(Side.CANDIDATE, "m", "", None, error="connection failed: Cannot connect to host candidate-vllm:8001")
    comparison = compare(base.text, "Label: Negative")
    sqlite_store.add_pairs(run, [Pair("p1", 1, "/v1/chat/completions", "Classify.", {}, comparison,
                                      {Side.BASELINE: base, Side.CANDIDATE: cand},
                                      **triage_answers(base, Answer(Side.CANDIDATE, "m", "Label: Negative", "length"),
                                                       comparison, None))])
    pid = ReviewQueue(sqlite_store).page(_all(run))[0]["id"]
    ReviewQueue(sqlite_store).set_judge(pid, "improvement", "baseline",
                                        "the baseline is a little worse than the candidate")
    with sqlite_store.engine.begin() as c:    # as stored before 0010: the judge's order was not the page's
        c.execute(schema.pairs.update().where(schema.pairs.c.id == pid).values(judge_blind=None))
    with serve_app(build_review_app(sqlite_store, TOKEN)) as url:
        client = signed_in(url + "/review")
        html = client.get(f"/pairs/{pid}").text
        # (the style sheet's "align-items: baseline" and the rubric's help texts aside)
        before = re.sub(r"<style.*?</style>|<script.*?</script>|<form.*?</form>", "", html, flags=re.DOTALL)
        assert not re.search(r"baseline|candidate|improvement", before, re.IGNORECASE), before
        judge = before.split('id="judge"')[1].split("</p>")[0]
        assert "minor" in judge and "is a little worse than" not in judge and "after your verdict" in judge
        letter = Blinding(sqlite_store.secret("blind_key")).letter(Side.BASELINE, pid)
        assert f"({letter} worse)" in html
        csrf = csrf_of(html)
        assert client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "ambiguous"}).status_code == 303
        after = client.get(f"/pairs/{pid}").text
        assert "candidate-vllm:8001" in after and 'id="revealed"' in after and "improvement" in after


def test_odd_input_gets_4xx_not_500(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base)
    csrf = csrf_of(client.get("/").text)
    huge = "9" * 25
    assert client.get(f"/pairs/{huge}").status_code == 404
    assert client.post(f"/pairs/{huge}/verdict", data={"csrf": csrf, "verdict": "wording"}).status_code == 404
    for offset in (huge, "%C2%B2", "²", "-1", "abc"):
        assert client.get("/", params={"offset": offset}).status_code == 200
    pid = pair_ids(store, run)["k1"]
    upload = client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "wording"},
                         files={"note": ("note.txt", b"hello", "text/plain")})
    assert upload.status_code == 400
    assert client.post("/login", content=b"\xff\xfe", headers={"content-type": "application/x-www-form-urlencoded"}
                       ).status_code in (400, 401)
    assert ReviewQueue(store).reviews(pid) == []


def test_names_beyond_ascii_survive_the_cookie(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base, "Jörg 李")
    assert "reviewing as <bdi>Jörg 李</bdi>" in client.get("/").text
    pid = pair_ids(store, run)["k1"]
    csrf = csrf_of(client.get(f"/pairs/{pid}").text)
    assert client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "wording"}).status_code == 303
    assert [r.reviewer for r in ReviewQueue(store).reviews(pid)] == ["Jörg 李"]
    assert 'id="revealed"' in client.get(f"/pairs/{pid}").text     # her own verdict reveals the sides


def test_csv_cells_are_not_formulas(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    ReviewQueue(store).add_review(pair_ids(store, run)["k1"], "=HYPERLINK(\"http://x\")", "wording", note="+1 agreed")
    rows = list(csv.DictReader(io.StringIO(signed_in(base).get("/export.csv").text)))
    assert rows[0]["reviewer"].startswith("'=") and rows[0]["note"] == "'+1 agreed"


# -- the prompt search, the snippet, the pair page's nav, "verdict saved" ---------------

PROMPTS = {"k40": "What is the CAPITAL of France?", "k41": "What is 50% of 80?", "k42": "What is 50 of 80?",
           "k43": "Name a snake_case variable.", "k44": "Name a snakeXcase variable.",
           "k45": "Split the path a/b\\c on its separators."}


@pytest.fixture
def searchable(store: Store) -> Iterator[tuple[str, Store, str]]:
    """fill's pairs and six whose prompts a search tells apart, on SQLite and PostgreSQL."""
    run = fill(store)
    store.add_pairs(run, [replace(pair(key, f"{key} costs 1.", f"{key} costs 2."), prompt=text)
                          for key, text in PROMPTS.items()])
    with serve_app(build_review_app(store, TOKEN)) as url:
        yield url + "/review", store, run


def queue_keys(html: str) -> list[str]:
    return re.findall(r'/pairs/\d+\?[^"]*">(k\d+)</a>', html)


def test_the_queue_searches_prompts_case_insensitively_and_literally(searchable: tuple[str, Store, str]) -> None:
    base, _, _ = searchable
    client = signed_in(base)

    def found(q: str) -> set[str]:
        page = client.get("/", params={"q": q})
        assert page.status_code == 200, page.text
        return set(queue_keys(page.text))

    assert found("capital of") == found("Capital OF france") == {"k40"}
    # the reviewer's % and _ are characters: as wildcards "50%" would find k42, "snake_case" k44
    assert found("50%") == found("%") == {"k41"}
    assert found("snake_case") == found("e_c") == {"k43"}
    assert found("a/b\\c") == found("/") == found("\\") == {"k45"}     # the escape characters too
    assert found("what is") == {"k40", "k41", "k42"}
    assert len(found("")) == 10                                        # empty: no search
    nothing = client.get("/", params={"q": "zebra"}).text
    assert queue_keys(nothing) == [] and "No pair matches." in nothing and "0 shown by the filters" in nothing
    # the field keeps what was typed, escaped
    assert 'name="q" id="search" value="50%"' in client.get("/", params={"q": "50%"}).text
    assert 'value="&lt;b&gt;&#34;x"' in client.get("/", params={"q": '<b>"x'}).text


def test_the_search_is_kept_by_links_next_and_the_pair_page(searchable: tuple[str, Store, str]) -> None:
    base, store, run = searchable
    client = signed_in(base)
    ids = pair_ids(store, run)
    queue = client.get("/", params={"q": "what is", "outcome": ""}).text
    # (the form's empty fields, "any", are left out)
    assert set(re.findall(r'href="/review/pairs/\d+\?([^"]*)"', queue)) == {"q=what+is"}
    assert 'action="/review/next?q=what+is"' in queue
    # "next" claims within the search, and the claimed pair's page keeps it
    claimed = client.post("/next", params={"q": "what is"}, data={"csrf": csrf_of(queue)})
    location = claimed.headers["location"]
    assert location.endswith("?q=what+is")
    pid = int(location.rsplit("/", 1)[1].split("?")[0])
    assert pid in {ids["k40"], ids["k41"], ids["k42"]}
    # next and previous walk the pairs the search selects, in the queue's order
    order = queue_keys(queue)
    middle = client.get(f"/pairs/{ids[order[1]]}", params={"q": "what is"}).text
    assert f'id="prev" href="/review/pairs/{ids[order[0]]}?q=what+is"' in middle
    assert f'id="following" href="/review/pairs/{ids[order[2]]}?q=what+is"' in middle
    assert 'id="to-queue" href="/review/?q=what+is"' in middle
    assert f'action="/review/pairs/{ids[order[1]]}/verdict?q=what+is"' in middle
    last = client.get(f"/pairs/{ids[order[2]]}", params={"q": "what is"}).text
    assert 'id="following"' not in last


def test_a_search_too_long_or_with_a_nul_byte_is_a_400(searchable: tuple[str, Store, str]) -> None:
    base, _, _ = searchable
    client = signed_in(base)
    csrf = csrf_of(client.get("/").text)
    assert client.get("/", params={"q": "x" * 200}).status_code == 200
    for q, said in (("x" * 201, "the search is longer than 200 characters (201)"), ("a\x00b", "NUL byte")):
        page = client.get("/", params={"q": q}, headers={"accept": "text/html"})
        assert page.status_code == 400 and said in page.text and page.headers["content-type"].startswith("text/html")
        script = httpx.get(base + "/", params={"q": q}, headers={"x-review-token": TOKEN})
        assert script.status_code == 400 and said in script.json()["error"]
        assert client.post("/next", params={"q": q}, data={"csrf": csrf}).status_code == 400
    assert 'maxlength="200"' in client.get("/").text


def test_the_queue_shows_a_one_line_escaped_snippet_of_each_prompt(sqlite_store: Store) -> None:
    run = fill(sqlite_store)
    long = "Line one <b>bold</b> \"quoted\"\n\n  line two " + "word " * 300
    sqlite_store.add_pairs(run, [replace(pair("k50", "It is 1.", "It is 2."), prompt=long)])
    with serve_app(build_review_app(sqlite_store, TOKEN)) as url:
        page = signed_in(url + "/review").get("/").text
    row = page.split(">k50</a>")[1].split("</tr>")[0]
    found = re.search(r'<span class="snippet" title="([^"]*)">([^<]*)</span>', row)
    assert found, row
    title, snippet = found.groups()
    assert snippet.startswith("Line one &lt;b&gt;bold&lt;/b&gt; &#34;quoted&#34; line two word")
    assert unescape(snippet) == " ".join(long.split())[:120].rstrip() + "…" and "\n" not in snippet
    assert title.startswith("Line one &lt;b&gt;bold&lt;/b&gt; &#34;quoted&#34;\n\n  line two")
    assert unescape(title) == long[:1000] + "…"                      # the queue reads 1,000 characters
    short = page.split(">k2</a>")[1].split("</tr>")[0]
    assert '<span class="snippet" title="prompt k2">prompt k2</span>' in short


RLO, PDF = "\u202e", "\u202c"


def test_bidi_characters_reorder_nothing_on_the_pages(ui: tuple[str, Store, str]) -> None:
    """An RLO in an answer is a marker, never the character: "24" cannot show as "42".
    One in the log's text shown inline (a key, a category) is the same marker, in an
    isolate (<bdi>): nothing reverses the page's own words after it ("similarity … ·
    priority …"); in an attribute or the page's title it is its escape."""
    base, store, run = ui
    store.add_pairs(run, [replace(pair("k7", "total 42 units", f"total {RLO}24{PDF} units"),
                                  key=f"k7{RLO}", category=f"ops{RLO}")])
    client = signed_in(base, "eve")   # (a reviewer's name cannot hold one: check_name)
    queue = client.get("/").text
    pid = pair_ids(store, run)[f"k7{RLO}"]
    shown = '<span class="cf" title="right-to-left override">U+202E</span>'
    assert f'<bdi><a class="key" title="k7\\u202e" href="/review/pairs/{pid}?">k7{shown}</a></bdi>' in queue
    assert f"<td><bdi>ops{shown}</bdi></td>" in queue and "reviewing as <bdi>eve</bdi>" in queue
    page = client.get(f"/pairs/{pid}").text
    assert f"<h1><bdi>k7{shown}</bdi> " in page and f"category <bdi>ops{shown}</bdi> · similarity" in page
    marked = ('total <mark><span class="cf" title="right-to-left override">U+202E</span>24'
              '<span class="cf" title="pop directional formatting">U+202C</span></mark> units')
    assert {text_of(page, side) for side in "lr"} == {"total <mark>42</mark> units", marked}
    # nowhere on either page, the title included, is the character itself
    assert RLO not in page + queue and PDF not in page + queue


def nav_text(page: str) -> str:
    nav = re.search(r'<p id="pair-nav">(.*?)<span class="muted">', page, re.S)
    assert nav, "no nav on the page"
    return re.sub(r"<[^>]+>", "", nav.group(1)).strip()


def test_the_pair_nav_separates_its_links(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base)
    order = queue_keys(client.get("/").text)
    ids = pair_ids(store, run)
    assert nav_text(client.get(f"/pairs/{ids[order[0]]}").text) == "queue · next →"
    assert nav_text(client.get(f"/pairs/{ids[order[1]]}").text) == "← previous · queue · next →"
    assert nav_text(client.get(f"/pairs/{ids[order[-1]]}").text) == "← previous · queue"


def test_a_saved_verdict_is_confirmed_on_the_next_page(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    store.add_pairs(run, [replace(pair("k60", "It is 1.", "It is 2."), key="<i>k60</i>")])
    ids = pair_ids(store, run)
    client = signed_in(base)
    pid = ids["<i>k60</i>"]
    page = client.get(f"/pairs/{pid}", params={"q": "prompt"}).text
    assert 'id="saved"' not in page
    wrong = Blinding(store.secret("blind_key")).letter(Side.CANDIDATE, pid)
    posted = client.post(f"/pairs/{pid}/verdict", params={"q": "prompt", "saved": "1", "error": "x"},
                         data={"csrf": csrf_of(page), "verdict": "factual", "side": wrong})
    [review] = ReviewQueue(store).reviews(pid)
    assert posted.status_code == 303
    assert posted.headers["location"] == f"/review/pairs/{pid}?q=prompt&saved={review.id}"
    after = follow(client, posted).text
    assert ('<p class="message" id="saved" role="status" aria-live="polite">'
            "Verdict saved for pair <bdi>&lt;i&gt;k60&lt;/i&gt;</bdi>: factual (candidate wrong).</p>") in after
    assert "saved=" not in after.split('id="pair-nav"')[1].split("</p>")[0]   # the links do not carry it
    # only a verdict of this reviewer's on this pair is announced: a link cannot make one up
    other = ids["k1"]
    ReviewQueue(store).add_review(other, "bob", "wording")
    bobs = ReviewQueue(store).reviews(other)[0].id
    for pair_id, saved in ((pid, "999999"), (pid, "x"), (pid, "²"), (other, str(review.id)), (other, str(bobs))):
        assert 'id="saved"' not in client.get(f"/pairs/{pair_id}", params={"saved": saved}).text
    # a refused verdict goes back with its reason and the search, and says nothing was saved
    refused = client.post(f"/pairs/{pid}/verdict", params={"q": "prompt"}, headers={"accept": "text/html"},
                          data={"csrf": csrf_of(after), "verdict": "minor"})
    assert "q=prompt&error=" in refused.headers["location"] and "saved" not in refused.headers["location"]
    back = follow(client, refused).text
    assert 'role="alert">a minor verdict says which side is worse: A or B' in back and 'id="saved"' not in back


def test_the_queue_pages_both_ways(sqlite_store: Store) -> None:
    run = fill(sqlite_store)
    sqlite_store.add_pairs(run, [pair(f"k{100 + i}", f"It is {i}.", f"It is {i + 1}.") for i in range(60)])
    with serve_app(build_review_app(sqlite_store, TOKEN)) as url:
        client = signed_in(url + "/review")
        first = client.get("/", params={"q": "prompt"}).text
        second = client.get("/", params={"q": "prompt", "offset": "50"}).text
    assert 'id="earlier"' not in first and 'id="more" href="/review/?q=prompt&offset=50"' in first
    assert len(queue_keys(first)) == 50 and len(queue_keys(second)) == 14
    assert 'id="earlier" href="/review/?q=prompt&offset=0"' in second and 'id="more"' not in second


# -- a link cannot write on the pages (found by a hostile review) --------------------------
# The cookies are Lax: a link on another site opens a page signed in. Text from its URL
# shown as the page's own error or notice would speak for the UI to a blind reviewer.
CRAFTED = "Reviewers: side A is the baseline here — mark B factual"


def test_a_link_cannot_put_its_own_words_on_a_page(ui: tuple[str, Store, str]) -> None:
    base, store, run = ui
    client = signed_in(base)
    pid = pair_ids(store, run)["k1"]
    for path, param, shown in ((f"/pairs/{pid}", "error", 'id="error"'), ("/", "message", 'id="message"')):
        for value in (CRAFTED, "<b>x</b>", "side-factual ", "NOTHING-LEFT", "__class__", "get", "", "refused\n"):
            page = client.get(path, params={param: value})
            assert page.status_code == 200 and shown not in page.text, (path, value)
            assert "baseline here" not in page.text
    # a known code shows the UI's own words
    assert f'role="alert">{escape(ERRORS["side-factual"])}</p>' in client.get(
        f"/pairs/{pid}", params={"error": "side-factual"}).text
    assert f'aria-live="polite">{MESSAGES["nothing-left"]}</p>' in client.get(
        "/", params={"message": "nothing-left"}).text
    # nor does a refused filter repeat the link's text
    refused = client.get("/", params={"signal": CRAFTED}, headers={"accept": "text/html"})
    assert refused.status_code == 400 and "must be one of" in refused.text and "baseline here" not in refused.text


@pytest.mark.parametrize(("form", "code"), [
    ({"verdict": "factual"}, "side-factual"),
    ({"verdict": "minor", "side": "C"}, "side-minor"),
    ({"verdict": "improvement"}, "side-improvement"),
    ({"verdict": ""}, "verdict"),
    ({"verdict": CRAFTED}, "verdict"),
    ({"verdict": "wording", "reviewer": "ana\u200b"}, "name"),
    ({"verdict": "wording", "reviewer": "x" * 256}, "name"),
    ({"verdict": "wording", "reviewer": "Reg"}, "registered"),
    ({"verdict": "wording", "note": "n" * 10_001}, "note-long"),
    ({"verdict": "wording", "note": "a\x00b"}, "note-nul"),
])
def test_a_refused_verdict_says_why_by_its_code(ui: tuple[str, Store, str], form: dict[str, str], code: str) -> None:
    base, store, run = ui
    Reviewers(store).add("Reg")
    client = signed_in(base)                           # the shared token: the form names the reviewer
    pid = pair_ids(store, run)["k1"]
    csrf = csrf_of(client.get(f"/pairs/{pid}").text)
    posted = client.post(f"/pairs/{pid}/verdict", headers={"accept": "text/html"},
                         data={"csrf": csrf, "reviewer": "ana", **form})
    assert posted.status_code == 303 and posted.headers["location"] == f"/review/pairs/{pid}?error={code}"
    page = follow(client, posted).text
    assert f'<p class="error" id="error" role="alert">{escape(ERRORS[code])}</p>' in page
    assert ReviewQueue(store).reviews(pid) == []


def test_nothing_left_is_said_by_its_code(ui: tuple[str, Store, str]) -> None:
    base, _, _ = ui
    client = signed_in(base)
    csrf = csrf_of(client.get("/").text)
    for query, code in (("outcome=error", "nothing-left"), ("second=1", "nothing-needed")):
        posted = client.post(f"/next?{query}", data={"csrf": csrf})
        assert posted.headers["location"] == f"/review/?{query}&message={code}"
        page = follow(client, posted).text
        assert f'<p class="message" id="message" role="status" aria-live="polite">{MESSAGES[code]}</p>' in page


# -- the queue's order is the report's (found by a hostile review) -------------------------

def _order_pairs(store: Store) -> str:
    """Pairs tied in priority, whose outcomes, similarities and log order (seq) all
    disagree with the order they were stored in (their ids)."""
    failed = replace(pair("k85", "An answer.", ""), comparison=error_comparison(), answers={
        Side.BASELINE: Answer(Side.BASELINE, "m", "An answer."),
        Side.CANDIDATE: Answer(Side.CANDIDATE, "m", "", None, error="connection failed")})
    made = [
        (pair("k81", "The total is 42 dollars.", "The total is 43 dollars."), 20, 81),   # near .958
        (pair("k82", "Line one.\nLine two.", "Line one.\n\nLine two."), 20, 82),       # equivalent
        (pair("k83", "It is usually fine.", "It is typically fine."), 20, 83),          # divergent .80
        (pair("k84", "Cats are mammals.", "Rain falls down."), 20, 84),                 # divergent .36
        (failed, 20, 85),                                                              # error: first at 20
        (pair("k86", "Paris is the capital.", "Paris is the capital city."), 20, 87),   # divergent .894, seq 87
        (pair("k87", "One two three four five.", "One two three four six."), 20, 86),  # divergent .894, seq 86
        (pair("k88", "Good morning.", "Good morning!"), 50, 88),                        # near, the top priority
        (pair("k89", "Yes.", "No."), 5, 89),                                            # divergent, the lowest
    ]
    run = store.create_run("replay", {})
    store.add_pairs(run, [replace(p, priority=priority, seq=seq) for p, priority, seq in made])
    return run


def test_the_queue_next_and_the_pair_links_follow_the_reports_order(store: Store) -> None:
    run = _order_pairs(store)
    report = [(p["key"], p["id"]) for p in store.pairs_by_priority(run)]
    keys = [key for key, _ in report]
    assert keys == ["k88", "k85", "k84", "k83", "k87", "k86", "k81", "k82", "k89"]   # the data is what it says
    assert sorted(keys) != keys
    ids = dict(report)
    key_of = {pid: key for key, pid in report}
    with serve_app(build_review_app(store, TOKEN)) as url:
        client = signed_in(url + "/review")
        assert queue_keys(client.get("/").text) == keys
        # previous and next on each pair page walk the same order, both ways
        pages = {key: client.get(f"/pairs/{ids[key]}").text for key in keys}
        following = [re.search(r'id="following" href="/review/pairs/(\d+)', pages[k]) for k in keys]
        before = [re.search(r'id="prev" href="/review/pairs/(\d+)', pages[k]) for k in keys]
        assert [key_of[int(m.group(1))] if m else None for m in following] == [*keys[1:], None]
        assert [key_of[int(m.group(1))] if m else None for m in before] == [None, *keys[:-1]]
        # "next" hands out the pairs that need a verdict in that order too
        csrf = csrf_of(pages[keys[0]])
        handed = []
        while "/pairs/" in (location := client.post("/next", data={"csrf": csrf}).headers["location"]):
            pid = int(location.rsplit("/", 1)[1])
            handed.append(key_of[pid])
            assert client.post(f"/pairs/{pid}/verdict", data={"csrf": csrf, "verdict": "wording"}).status_code == 303
    assert handed == [k for k in keys if k not in ("k85", "k82")]     # not the failed nor the equivalent pair


def test_the_hosts_root_leads_to_the_review_ui(ui: tuple[str, Store, str]) -> None:
    """A browser pointed at the host and port alone (as one types an address) reaches the UI."""
    base, _, _ = ui
    root = httpx.get(base.removesuffix("/review") + "/")
    assert root.status_code == 307 and root.headers["location"] == "/review/"

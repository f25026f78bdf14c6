"""The review UI in real headless Chromium (Debian's ``chromium``, driven by Playwright).

Skipped when Playwright or Chromium is missing, except under CI (``tests/support/tools.py``). The pair
page's screenshot is saved under ``test-output/`` (or ``$SHADOWDIFF_TEST_OUTPUT``).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from shadowdiff.answers.records import Pair
from shadowdiff.report.write import write_reports
from shadowdiff.review.app import build_review_app
from shadowdiff.review.blind import Blinding
from shadowdiff.review.forms import ERRORS
from shadowdiff.store import Store, schema
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.triage.grading import Grader
from shadowdiff.verdict.flips import grade_pair
from tests.support.browsers import TOKEN, output_dir, sign_in
from tests.support.factories import fill, pair
from tests.support.servers import serve_app

XSS = ('<script>window.pwned = 1; document.title = "pwned"</script>'
       '<img src=x onerror="window.pwned = 2; document.title = \'pwned\'">')


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Store, str]]:
    store = Store.open(tmp_path)
    run = fill(store)
    store.add_pairs(run, [pair("k9", f"Result: {XSS} 7 apples.", f"Result: {XSS} 8 apples.")])
    with serve_app(build_review_app(store, TOKEN)) as url:
        yield url + "/review", store, run
    store.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1300, "height": 1000})
    opened = context.new_page()
    opened.set_default_timeout(10_000)
    yield opened
    context.close()


def test_the_queue_fits_its_window_whatever_the_key(browser: Any, site: tuple[str, Store, str]) -> None:
    """A 300-character key (or category, or judge's label), or one of 3,000 written into the
    store by hand, does not widen the queue past its window, down to 800 pixels: the key is
    cut with an ellipsis, whole in its tooltip."""
    base, store, run = site
    long_key = "key-" + "x" * 296
    store.add_pairs(run, [replace(pair("k80", "It is 1.", "It is 2."), key=long_key, category="c" * 300),
                          pair("k81", "It is 3.", "It is 4.")])
    with store.engine.begin() as c:   # past the column's 255 (SQLite keeps it whole)
        c.execute(schema.pairs.update().where(schema.pairs.c.key == "k81").values(key="K" * 3000))
    for window in (1440, 1280, 1024, 800):
        context = browser.new_context(viewport={"width": window, "height": 900})
        try:
            page = context.new_page()
            page.set_default_timeout(10_000)
            sign_in(page, base)
            page.goto(f"{base}/")
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= window, (window, width)
            link = page.locator("a.key", has_text="key-x")
            title = link.get_attribute("title")
            assert len(title) >= 255 and long_key.startswith(title)      # (the store keeps a key's first 255)
            box = link.bounding_box()
            assert box and box["x"] + box["width"] <= window
        finally:
            context.close()


def test_without_the_token_nothing_shows(page: Any, site: tuple[str, Store, str]) -> None:
    base, store, run = site
    pid = ReviewQueue(store).page(Filters(run_id=run))[0]["id"]
    page.goto(f"{base}/pairs/{pid}")
    assert urlsplit(page.url).path == "/review/login"
    assert "42 dollars" not in page.content()
    page.fill("input[name=token]", "not-the-token")
    page.fill("input[name=reviewer]", "mallory")
    page.click("button[type=submit]")
    assert "wrong token" in page.inner_text(".error")
    response = page.goto(f"{base}/export.csv")
    assert response.status == 303 or urlsplit(page.url).path == "/review/login" or response.status == 401


def test_walk_the_queue_with_the_keyboard_and_see_the_export(page: Any, site: tuple[str, Store, str]) -> None:
    base, store, _ = site
    sign_in(page, base)
    assert "0 of 4 pairs that need a verdict are reviewed" in page.inner_text("#progress")
    page.click("#next")                                  # claims the highest-priority pair
    page.wait_for_url("**/pairs/*")
    blinding = Blinding(store.secret("blind_key"))
    walked = []
    for step in range(3):
        pid = int(page.url.rsplit("/", 1)[1].split("?")[0])
        walked.append(pid)
        assert page.locator("#revealed").count() == 0   # blind until the verdict
        if step == 0:
            page.keyboard.press("5")                     # factual...
            page.keyboard.press("b")                     # ...B is wrong
        else:
            page.keyboard.press("2")                     # wording
        page.keyboard.press("Control+Enter")
        page.wait_for_selector("#revealed")
        a_is = "baseline" if blinding.a_is_baseline(pid) else "candidate"
        assert f"A is the {a_is}" in page.inner_text("#revealed")
        if page.locator("#following").count() == 0:
            break
        page.keyboard.press("j")
        page.wait_for_url(lambda url, pid=pid: f"/pairs/{pid}?" not in url and f"/pairs/{pid}" not in url)
    assert len(walked) == 3
    page.keyboard.press("k")                             # and back to the last one judged
    page.wait_for_url(f"**/pairs/{walked[-1]}?*")

    reviews = {pid: ReviewQueue(store).reviews(pid) for pid in walked}
    first = reviews[walked[0]][0]
    assert first.verdict.value == "factual"
    assert first.wrong_side is not None
    assert (first.wrong_side.value == "baseline") == (not blinding.a_is_baseline(walked[0]))  # B's side
    assert all(r[0].verdict.value == "wording" for pid, r in reviews.items() if pid != walked[0])

    page.goto(base + "/")
    with page.expect_download() as download:
        page.click("text=export CSV")
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert sorted((int(r["pair_id"]), r["verdict"], r["reviewer"]) for r in rows) == sorted(
        (pid, reviews[pid][0].verdict.value, "ana") for pid in walked)


def test_sign_out_then_the_queue_asks_for_the_token_again(page: Any, site: tuple[str, Store, str]) -> None:
    base, _, _ = site
    sign_in(page, base, "bea")
    assert "reviewing as bea" in page.inner_text("header")
    page.click("#signout")
    page.wait_for_url(base + "/login")
    assert page.context.cookies() == []
    page.goto(base + "/")
    assert urlsplit(page.url).path == "/review/login"
    assert "reviewing as" not in page.inner_text("header")


def test_a_link_from_another_site_opens_a_page_signed_in_but_cannot_write_on_it(
        page: Any, site: tuple[str, Store, str]) -> None:
    """Found by a hostile review: the cookies are Lax, so another site's link opens a pair
    signed in; its URL's text must not show as the UI's error or notice (it would speak to
    a blind reviewer). The UI's own reasons, chosen by a code, still show."""
    base, store, run = site
    sign_in(page, base)
    pid = next(r["id"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["key"] == "k1")
    crafted = quote("Reviewers: side A is the baseline here — mark B factual")
    for link, shown in ((f"{base}/pairs/{pid}?error={crafted}", "#error"), (f"{base}/?message={crafted}", "#message")):
        page.goto("about:blank")                         # a page of no origin of ours, holding the link
        page.set_content(f'<a id="away" href="{link}">a pair</a>')
        page.click("#away")
        page.wait_for_url(link)
        assert "reviewing as ana" in page.inner_text("header")      # the Lax cookie came along
        assert page.locator(shown).count() == 0 and "baseline here" not in page.inner_text("body")
    page.goto(f"{base}/pairs/{pid}")
    page.check("#verdict-factual")                       # factual, and no side chosen
    page.click("#submit")
    page.wait_for_url(f"**/pairs/{pid}?error=side-factual")
    assert page.inner_text("#error") == ERRORS["side-factual"]
    assert ReviewQueue(store).reviews(pid) == []


def test_an_xss_payload_in_an_answer_stays_text(page: Any, site: tuple[str, Store, str]) -> None:
    base, store, run = site
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, base)
    pid = next(r["id"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["key"] == "k9")
    page.goto(f"{base}/pairs/{pid}")
    page.wait_for_selector("table.diff.text td.l")
    assert page.evaluate("window.pwned") is None
    assert page.title() != "pwned" and not dialogs
    assert "<script>window.pwned = 1" in page.inner_text("table.diff.text td.l")
    assert page.locator(".sides script, .sides img").count() == 0
    page.screenshot(path=str(output_dir() / "review-pair-xss.png"), full_page=True)


def test_screenshot_of_the_pair_page(page: Any, site: tuple[str, Store, str]) -> None:
    """The queue and a pair page, pictured; neither logs an error nor asks anything of
    another origin (every request goes to the review UI itself)."""
    base, store, run = site
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    sign_in(page, base)
    page.screenshot(path=str(output_dir() / "review-queue.png"), full_page=True)
    pid = next(r["id"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["key"] == "k2")
    page.goto(f"{base}/pairs/{pid}")
    assert page.locator("td.l mark").count() >= 1 and page.locator("td.r mark").count() >= 1
    assert "numbers" in page.inner_text("#signals")
    path = output_dir() / "review-pair.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    assert errors == []
    origin = urlsplit(base)
    assert requests and all(urlsplit(url)[:2] == origin[:2] for url in requests), requests


def test_the_reference_answer_and_which_letter_is_right(page: Any, site: tuple[str, Store, str]) -> None:
    """A pair graded against its reference: the reference (a log's text: escaped) and, per
    letter, right or wrong with what the grader read; the queue marks it flipped, first."""
    base, store, run = site
    graded = grade_pair(pair("k10", "Adding them up, the answer is 42.", "Adding them up, the answer is 41."),
                        f"{XSS} so the answer is 42", Grader.NUMBER)
    store.add_pairs(run, [graded])
    sign_in(page, base)
    first = page.locator("table tr").nth(1)
    assert "k10" in first.inner_text() and "flip" in first.inner_text()
    pid = next(r["id"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["key"] == "k10")
    page.goto(f"{base}/pairs/{pid}")
    assert "<script>window.pwned = 1" in page.inner_text("#reference")
    assert page.locator("#reference script, #reference img").count() == 0 and page.evaluate("window.pwned") is None
    right, wrong = ("A", "B") if Blinding(store.secret("blind_key")).a_is_baseline(pid) else ("B", "A")
    shown = page.inner_text("#grade")
    assert f"{right} right (read as 42)" in shown and f"{wrong} wrong (read as 41)" in shown, shown
    assert f"{right} is right and {wrong} wrong" in page.inner_text("#signals")


def sign_in_as(page: Any, base: str, token: str) -> None:
    """Sign in with a reviewer's own token: no name to type."""
    page.goto(base + "/login")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")


def test_reviewers_with_their_own_tokens_review_blind_twice(browser: Any, site: tuple[str, Store, str]) -> None:
    """Two reviewers, each with a token the server issued: the second reviews the first's
    pair blind, sees neither her verdict nor her note, nor the export, and his reveal
    shows his own verdict only."""
    from shadowdiff.store.reviewers import Reviewers

    base, store, run = site
    _, ana_token = Reviewers(store).add("ana")
    _, bob_token = Reviewers(store).add("bob")
    pages = []
    for token in (ana_token, bob_token):
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        pages.append(context.new_page())
        pages[-1].set_default_timeout(10_000)
        sign_in_as(pages[-1], base, token)
    ana, bob = pages
    assert "reviewing as ana" in ana.inner_text("header")
    assert ana.locator("text=export CSV").count() == 0 and bob.locator("text=export CSV").count() == 0
    ana.click("#next")
    ana.wait_for_url("**/pairs/*")
    pid = int(ana.url.rsplit("/", 1)[1].split("?")[0])
    ana.keyboard.press("3")                              # minor...
    ana.keyboard.press("a")                              # ...A is worse
    ana.fill("textarea[name=note]", "ana-private-note")
    ana.keyboard.press("Control+Enter")
    ana.wait_for_selector("#revealed")
    (review,) = ReviewQueue(store).reviews(pid)
    assert (review.reviewer, review.verdict.value) == ("ana", "minor")
    assert review.wrong_side == Blinding(store.secret("blind_key")).side("A", pid)

    bob.check("#filter-second")
    bob.click("button:has-text('Filter')")
    bob.click("#next")
    bob.wait_for_url(f"**/pairs/{pid}*")                 # the pair ana judged, for a second review
    assert bob.locator("#revealed").count() == 0
    assert "ana-private-note" not in bob.content()
    bob.keyboard.press("2")                              # wording
    bob.keyboard.press("Control+Enter")
    bob.wait_for_selector("#revealed")
    assert "bob" in bob.inner_text("#reviews") and "ana" not in bob.inner_text("#reviews")
    assert "ana-private-note" not in bob.content()
    response = bob.request.get(base + "/export.csv")
    assert response.status == 403
    assert [r.reviewer for r in ReviewQueue(store).reviews(pid)] == ["ana", "bob"]

    # both agree on two more pairs; the report shows their agreement and the pair they differ on
    queue = ReviewQueue(store)
    others = [r["id"] for r in queue.page(Filters(run_id=run, unreviewed=True))][:2]
    for other in others:
        for name in ("ana", "bob"):
            queue.add_review(other, name, "wording")
    report = output_dir().resolve() / "agreement-report"
    write_reports(store, run, report)
    bob.goto((report / "report.html").as_uri())
    agreement = bob.inner_text("h3:has-text('Agreement') + p")
    assert "3 pairs reviewed twice" in agreement and "Cohen's kappa" in agreement
    differ = bob.inner_text("table.disagreements")
    assert "ana: minor" in differ and "bob: wording" in differ and "ana-private-note" in differ
    assert bob.locator("table.disagreements tr").count() == 2    # the header and the one pair
    bob.screenshot(path=str(output_dir() / "report-agreement.png"), full_page=True)
    for opened in pages:
        opened.context.close()


def test_search_the_prompts_then_review_and_see_the_verdict_saved(page: Any, site: tuple[str, Store, str]) -> None:
    """Type in the search box and the queue shows the matching pairs only, each
    with its prompt's snippet; "next" stays within the search, the nav reads with
    separators, and a verdict posted says it was saved."""
    from dataclasses import replace

    base, store, run = site
    store.add_pairs(run, [
        replace(pair("k40", "It costs 5.", "It costs 6."), prompt="What does 50% of the CAPITAL cost?\nShow work."),
        replace(pair("k41", "It costs 7.", "It costs 8."), prompt="What does 50 of the capital cost?"),
        replace(pair("k42", "It costs 1.", "It costs 2."), prompt="How much is the capital worth?")])
    sign_in(page, base)
    rows = page.locator("table tr")
    assert rows.count() == 1 + 8                        # fill's four changed pairs, k9 and the three above
    page.fill("#search", "capital")
    page.press("#search", "Enter")                       # the filter form's GET, no script needed
    page.wait_for_url("**/review/?q=capital*")
    keys = sorted(rows.nth(i).locator("td").nth(1).inner_text() for i in range(1, rows.count()))
    assert keys == ["k40", "k41", "k42"]
    assert page.input_value("#search") == "capital"
    snippet = page.locator("tr:has(a:text-is('k40')) .snippet")
    assert snippet.inner_text() == "What does 50% of the CAPITAL cost? Show work."   # one line
    assert snippet.get_attribute("title") == "What does 50% of the CAPITAL cost?\nShow work."
    assert snippet.is_visible()

    page.fill("#search", "50%")                          # % is a character, not a wildcard
    page.press("#search", "Enter")
    page.wait_for_url("**/review/?q=50%25*")
    assert [rows.nth(i).locator("td").nth(1).inner_text() for i in range(1, rows.count())] == ["k40"]

    page.fill("#search", "capital")
    page.press("#search", "Enter")
    page.wait_for_url("**/review/?q=capital*")
    page.click("#next")
    page.wait_for_url("**/pairs/*?q=capital*")
    pid = int(page.url.rsplit("/", 1)[1].split("?")[0])
    key = next(r["key"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["id"] == pid)
    assert key in {"k40", "k41", "k42"}
    nav = page.inner_text("#pair-nav").split("keys:")[0]
    assert "previousqueue" not in nav and "queuenext" not in nav
    assert nav.replace("\xa0", " ").strip().rstrip("·").strip() in {
        "queue · next →", "← previous · queue · next →", "← previous · queue"}, nav
    assert page.locator("#saved").count() == 0
    page.check("#verdict-wording")
    page.click("#submit")
    page.wait_for_selector("#saved")
    saved = page.locator("#saved")
    assert saved.inner_text() == f"Verdict saved for pair {key}: wording."
    assert saved.get_attribute("role") == "status" and saved.is_visible()
    assert page.locator("#revealed").count() == 1
    # the search outlives the verdict: the page's links still walk what it selects
    assert page.url.endswith(f"/pairs/{pid}?q=capital&saved={ReviewQueue(store).reviews(pid)[0].id}")
    assert page.get_attribute("#to-queue", "href") == "/review/?q=capital"
    page.screenshot(path=str(output_dir() / "review-verdict-saved.png"), full_page=True)


# The answers side by side, line beside line, in the report and on the pair page.
INSERTED = ("Intro.\nAlpha line.\n    indented\nBeta line.\nEnd.",
            "Intro.\nNew line one.\nNew line two.\n\nAlpha line.\n  indented\nBeta line!\nEnd.")
LONG = "".join(f"line {i} of a long answer\n" for i in range(120))


def _same_height(page: Any, scope: Any, line: str) -> None:
    """The line is in both columns, at the same height: the inserted lines did not push it down."""
    left = scope.locator("table.diff.text td.l", has_text=line).bounding_box()
    right = scope.locator("table.diff.text td.r", has_text=line).bounding_box()
    assert left and right and abs(left["y"] - right["y"]) < 1, (left, right)
    assert right["x"] >= left["x"] + left["width"] - 1                  # and side by side


def _whitespace_marked(page: Any, scope: Any) -> None:
    """The inserted blank line and the changed indentation show markers, on whichever side
    the review page put the second answer; unchanged text none."""
    assert scope.locator("td.l.gap + td.r .ws-nl, td.l:has(.ws-nl) + td.r.gap").count() == 1   # beside a gap
    assert sorted(scope.locator(f"td.{side} .ws-sp").count() for side in "lr") == [2, 4]
    shown = page.evaluate("[...document.querySelectorAll('.ws-nl, .ws-sp')].map("
                          "e => getComputedStyle(e, '::before').content)")
    assert set(shown) == {'"⏎"', '"·"'}


_UNCLIPPED = """cell => {
  for (let e = cell.parentElement; e; e = e.parentElement) {
    const s = getComputedStyle(e);
    if (/auto|scroll|hidden/.test(s.overflowY + s.overflowX) && e.scrollHeight > e.clientHeight + 1) return false;
  }
  return true;
}"""


def open_report(page: Any, tmp_path: Path, name: str, pairs: list[Pair]) -> None:
    """A run of ``pairs``, its report written under ``test-output/name``, opened in ``page``."""
    store = Store.open(tmp_path)
    run = store.create_run("replay", {})
    store.add_pairs(run, pairs)
    store.finish_run(run)
    report = output_dir().resolve() / name
    write_reports(store, run, report)
    store.close()
    page.goto((report / "report.html").as_uri())


def test_the_report_shows_whole_answers_line_beside_line(page: Any, tmp_path: Path) -> None:
    open_report(page, tmp_path, "answers-report",
                [pair("k40", *INSERTED), pair("k41", LONG, LONG.replace("line 7 ", "line seven "))])
    inserted = page.locator(".pair", has_text="k40")
    for line in ("Alpha line.", "indented", "Beta line", "End."):
        _same_height(page, inserted, line)
    _whitespace_marked(page, inserted)
    assert inserted.locator("del").count() >= 1 and inserted.locator("ins").count() >= 1
    last = page.locator(".pair", has_text="k41").locator("table.diff.text td.r", has_text="line 119 of")
    assert last.evaluate(_UNCLIPPED)          # no box cuts a long answer short
    _same_height(page, page.locator(".pair", has_text="k41"), "line 119 of")
    inserted.screenshot(path=str(output_dir() / "report-answers.png"))


def test_the_pair_page_shows_whole_answers_line_beside_line(page: Any, site: tuple[str, Store, str]) -> None:
    base, store, run = site
    store.add_pairs(run, [pair("k40", *INSERTED)])
    sign_in(page, base)
    pid = next(r["id"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["key"] == "k40")
    page.goto(f"{base}/pairs/{pid}")
    sides = page.locator(".sides")
    for line in ("Alpha line.", "indented", "Beta line", "End."):
        _same_height(page, sides, line)
    _whitespace_marked(page, sides)
    assert sides.locator("mark").count() >= 4 and sides.locator("del, ins").count() == 0   # blind
    assert page.locator("#side-A").bounding_box()["x"] < page.locator("#side-B").bounding_box()["x"]
    sides.screenshot(path=str(output_dir() / "review-pair-answers.png"))


# A right-to-left override shows "24" as "42"; in the log's text shown inline (a category)
# it reversed the page's own words after it.
RLO, PDF = "\u202e", "\u202c"
BIDI = ("total 42 units\nkept line\n", f"total {RLO}24{PDF} units\nkept line\n")

_NEXT_FRAME = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
_DRAWN_BEFORE = """(cell, [first, second]) => {
  // whether the first text is drawn left of the second, whatever their order in the DOM
  const at = text => {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const i = n.data.indexOf(text);
      if (i < 0) continue;
      const r = document.createRange();
      r.setStart(n, i); r.setEnd(n, i + 1);
      return r.getBoundingClientRect().left;
    }
    throw new Error("no " + text);
  };
  return at(first) < at(second);
}"""


def _digits_in_order(cell: Any) -> None:
    """The cell shows the override as a marker, then 24 drawn as 2 before 4."""
    cell.scroll_into_view_if_needed()
    cell.evaluate(_NEXT_FRAME)   # the report lays out a pair only once it is near the screen (content-visibility)
    assert re.search(r"U\+202E\s*24\s*U\+202C", cell.inner_text()), cell.inner_text()
    marker = cell.locator(".cf").first.bounding_box()
    assert marker and marker["width"] > 5                                  # a visible box
    assert cell.evaluate(_DRAWN_BEFORE, ["2", "4"])
    assert cell.evaluate(_DRAWN_BEFORE, ["total", "units"])


def test_an_rlo_in_an_answer_is_a_marker_in_the_report(page: Any, tmp_path: Path) -> None:
    open_report(page, tmp_path, "bidi-report", [pair("k70", *BIDI)])
    shown = page.locator(".pair", has_text="k70")
    _digits_in_order(shown.locator("table.diff.text td.r", has_text="units"))
    assert "U+202E" not in shown.locator("table.diff.text td.l").first.inner_text()   # the baseline's 42


def test_an_rlo_reorders_nothing_on_the_pair_page(page: Any, site: tuple[str, Store, str]) -> None:
    base, store, run = site
    store.add_pairs(run, [replace(pair("k70", *BIDI), category=f"ops{RLO}")])
    sign_in(page, base)
    pid = next(r["id"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["key"] == "k70")
    page.goto(f"{base}/pairs/{pid}")
    _digits_in_order(page.locator(".sides table.diff.text td", has_text="U+202E"))
    meta = page.locator("p.muted", has_text="similarity")
    assert meta.evaluate(_DRAWN_BEFORE, ["category", "similarity"])
    assert meta.evaluate(_DRAWN_BEFORE, ["similarity", "priority"])        # not "06 ytiroirp · … ytiralimis"
    page.locator(".sides").screenshot(path=str(output_dir() / "review-pair-bidi.png"))


def _heads_in_sight(page: Any, scope: Any) -> None:
    """Scrolled to the middle of a long diff, each side's heading is at the top, drawn over the lines."""
    line = scope.locator("table.diff.text td.r", has_text="line 60 of").element_handle()
    for _ in range(3):   # the pairs far off screen are laid out only as they come near (content-visibility)
        page.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + scrollY - 5)", line)
        page.evaluate(_NEXT_FRAME)
    assert abs(line.bounding_box()["y"] - 5) < 2
    for side in "lr":
        box = scope.locator(f".pairview > table.heads th.{side}").bounding_box()
        assert box and abs(box["y"]) < 1, box
        on_top = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('table.heads') !== null",
                               [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
        assert on_top, side


def test_the_answers_headings_stay_in_sight_down_a_long_diff(page: Any, site: tuple[str, Store, str],
                                                            tmp_path: Path) -> None:
    """report.html (its filter bar is not sticky: the pairs' content-visibility makes each
    one a stacking context, so a bar stuck to the top of the page would be drawn over any
    heading in them, whatever its z-index), and the pair page."""
    base, store, run = site
    store.add_pairs(run, [pair("k41", LONG, LONG.replace("line 7 ", "line seven "))])
    report = tmp_path / "report"
    write_reports(store, run, report)
    page.goto((report / "report.html").as_uri())
    _heads_in_sight(page, page.locator(".pair", has_text="k41"))
    sign_in(page, base)
    pid = next(r["id"] for r in ReviewQueue(store).page(Filters(run_id=run)) if r["key"] == "k41")
    page.goto(f"{base}/pairs/{pid}")
    _heads_in_sight(page, page.locator(".sides"))

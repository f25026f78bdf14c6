"""report.html in real headless Chromium: the decision and its figures first,
every plot drawn, each pair with its evidence, the filters, the links to the review UI,
no console error and no request beyond the page itself; for the demo and for a
10,000-pair run. Screenshots go under ``test-output/`` (or ``$SHADOWDIFF_TEST_OUTPUT``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.records import Answer
from shadowdiff.report.write import write_reports
from shadowdiff.review.app import build_review_app
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support.bigstore import big_run
from tests.support.browsers import TOKEN, output_dir, sign_in
from tests.support.demo import Demo
from tests.support.reporting import answered_pair as _pair
from tests.support.servers import serve_app

PLOTS = ("plot-outcomes", "plot-similarity", "plot-divergence", "plot-ttft", "plot-latency", "plot-categories",
         "plot-token-agreement")
FIGURES = ("changed", "token-agreement", "factual", "reviewed", "errors", "speed")


class Watched:
    """A page whose console errors, page errors and requests are kept."""

    def __init__(self, chromium: Any) -> None:
        self.context = chromium.new_context(viewport={"width": 1300, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: Path) -> Any:
        self.page.goto(path.resolve().as_uri(), wait_until="load")
        return self.page


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    w = Watched(browser)
    yield w
    w.context.close()


def shown(page: Any) -> list[dict[str, str]]:
    """The pairs the filters leave on the page (not ``display: none``), in order.
    (``checkVisibility`` rather than ``getComputedStyle``: on 1,210 pairs with
    ``content-visibility: auto`` the latter took 97 s against 0.1 s.)"""
    return page.evaluate("""[...document.querySelectorAll('article.pair')]
        .filter(e => e.checkVisibility())
        .map(e => ({key: e.dataset.key, outcome: e.dataset.outcome, signals: e.dataset.signals,
                    priority: e.dataset.priority}))""")


def check_top(page: Any, summary: dict[str, Any]) -> None:
    """The decision, the figures and every plot are drawn, with sizes on the page."""
    decision = page.locator("#decision")
    assert decision.is_visible()
    assert summary["acceptance"]["decision"] in decision.inner_text()
    for key in FIGURES:
        figure = page.locator(f"#figure-{key}")
        assert figure.is_visible(), key
        assert figure.get_attribute("class").split()[-1].startswith("status-")
    for plot in PLOTS:
        box = page.locator(f"svg#{plot}").bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100, plot
        assert page.locator(f"svg#{plot} rect, svg#{plot} path").count() > 3, plot   # drawn, not "no data"


def test_the_demo_report_leads_with_the_decision_plots_and_evidence(demo: Demo, watched: Watched) -> None:
    summary = json.loads((demo.out / "summary.json").read_text())
    page = watched.open(demo.out / "report.html")
    check_top(page, summary)
    # the changed figure says the candidate's rate and the noise floor's, as summary.json has them
    changed = page.inner_text("#figure-changed")
    assert f"{summary['changed_rate'] * 100:.1f} %" in changed and f"{summary['noise_rate'] * 100:.1f} %" in changed
    # every changed pair, in the review queue's order, each with its evidence
    rows = [json.loads(line) for line in (demo.out / "pairs.jsonl").read_text().splitlines()]
    changed_rows = {r["key"]: r for r in rows if r["outcome"] != "identical"}
    pairs = shown(page)
    assert sorted(p["key"] for p in pairs) == sorted(changed_rows)
    priorities = [int(p["priority"]) for p in pairs]
    assert priorities == sorted(priorities, reverse=True)
    for p in pairs:
        row = changed_rows[p["key"]]
        article = page.locator(f'article[data-key="{p["key"]}"]')
        assert f"priority {row['priority']}" in article.locator("h3").text_content()
        assert f"suggested {row['suggested']}" in article.locator("h3").text_content()
        reasons = [" ".join(t.split()) for t in article.locator("ul.signals li").evaluate_all(
            "lis => lis.map(li => [...li.childNodes].filter(n => !n.classList?.contains('term'))"
            ".map(n => n.textContent).join(''))")]   # (without the "?" that links each kind to its meaning)
        assert reasons == [" ".join(f"{s['kind']} {s['reason']}".split()) for s in row["signals"]]
    # a whole-page picture: every pair laid out (the page lays out only those near the screen)
    page.add_style_tag(content=".pair { content-visibility: visible !important; }")
    page.screenshot(path=str(output_dir() / "report-demo.png"), full_page=True)
    assert watched.errors == []
    assert watched.requests == [(demo.out / "report.html").resolve().as_uri()]


def test_the_filters_show_only_the_pairs_they_name(demo: Demo, watched: Watched) -> None:
    page = watched.open(demo.out / "report.html")
    everything = shown(page)
    for outcome in ("equivalent", "near"):
        page.click(f"label[for=show-outcome-{outcome}]")
        assert shown(page) == [p for p in everything if p["outcome"] == outcome]
    kinds = sorted({k for p in everything for k in p["signals"].split()})
    assert kinds, "the demo's pairs carry signals"
    page.click("label[for=show-outcome-any]")
    for kind in kinds:
        page.click(f"label[for=show-signal-{kind}]")
        expected = [p for p in everything if kind in p["signals"].split()]
        assert shown(page) == expected and expected, kind
    page.click("label[for=show-outcome-near]")          # both filters at once: pairs matching both
    assert shown(page) == [p for p in everything if p["outcome"] == "near" and kinds[-1] in p["signals"].split()]
    page.click("label[for=show-signal-any]")
    page.click("label[for=show-outcome-any]")
    assert shown(page) == everything
    assert watched.errors == []


def test_each_pair_links_to_its_review_page(demo: Demo, watched: Watched, tmp_path: Path) -> None:
    store = Store.open_existing(str(demo.copy(tmp_path / "run")))   # its pages claim pairs
    try:
        run = store.latest_run()
        assert run is not None
        with serve_app(build_review_app(store, TOKEN)) as url:
            base = url + "/review"
            write_reports(store, run.id, tmp_path, review_url=base + "/")
            page = watched.page
            sign_in(page, base)
            watched.open(tmp_path / "report.html")
            first = page.locator("article.pair").first
            key = first.get_attribute("data-key")
            link = first.locator("a.review-link")
            pair_id = first.get_attribute("id").removeprefix("pair-")
            assert link.get_attribute("href") == f"{base}/pairs/{pair_id}"
            link.click()
            page.wait_for_url(f"{base}/pairs/{pair_id}")
            assert key in page.inner_text("body")
        rows = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
        assert all(r["review_url"].startswith(base + "/pairs/") for r in rows)
    finally:
        store.close()


def test_a_report_of_10000_pairs_opens_whole(tmp_path: Path, watched: Watched) -> None:
    store = Store.open(tmp_path / "store")
    try:
        run = big_run(store, 10_000)
        write_reports(store, run, tmp_path / "out")
    finally:
        store.close()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["pairs"] == 10_000
    page = watched.open(tmp_path / "out" / "report.html")
    check_top(page, summary)
    failed = summary["stored_failed"]
    assert summary["stored_changed"] > 1000 and 0 < failed < 1000
    # --side-by-side's default: 1,000 changed pairs, and the failed ones after them; it says so
    assert page.locator("article.pair").count() == 1000 + failed
    said = f"The first 1000 of {summary['stored_changed']} changed pairs, and {failed} of {failed} failed ones"
    assert page.locator("p.meta", has_text=said).is_visible()
    page.click("label[for=show-outcome-error]")
    errors = shown(page)
    assert errors and all(p["outcome"] == "error" for p in errors)
    page.click("label[for=show-outcome-any]")
    page.evaluate("window.scrollTo(0, 0)")                  # the top: the decision, the figures, the plots
    page.screenshot(path=str(output_dir() / "report-10000-pairs.png"))
    assert watched.errors == []
    assert watched.requests == [(tmp_path / "out" / "report.html").resolve().as_uri()]


def _visible_keys(page: Any, selector: str) -> list[str]:
    return page.evaluate(f"""[...document.querySelectorAll({selector!r})]
        .filter(e => e.checkVisibility()).map(e => e.dataset.key)""")


def test_the_first_pair_is_one_click_from_the_top_and_every_term_is_explained(demo: Demo, watched: Watched) -> None:
    page = watched.open(demo.out / "report.html")
    link = page.locator("#first-pair a").first
    box = link.bounding_box()
    assert box and box["y"] + box["height"] < 1000, box          # on the first screen, unscrolled
    first = page.locator("article.pair").first
    assert link.get_attribute("href") == "#" + first.get_attribute("id")
    link.click()
    assert first.evaluate("e => { const r = e.getBoundingClientRect(); return r.top >= -1 && r.top < innerHeight }")
    # every "?" leads to an entry of Terms; those above the pairs say its meaning on hover too
    # (in each of a thousand pairs the same sentences would double the page)
    entries = set(page.evaluate("[...document.querySelectorAll('dl.glossary dt')].map(e => e.id)"))
    links = page.evaluate("[...document.querySelectorAll('a.term')].map(a => [a.getAttribute('href'), a.title, "
                          "!!a.closest('article')])")
    assert len(links) > 20
    for href, title, in_pair in links:
        assert href.removeprefix("#") in entries and (in_pair or len(title) > 30), (href, title)
    # the words the reader stumbled on are all explained there
    terms = page.inner_text("dl.glossary")
    for word in ("teacher forcing", "near-tie", "top-1/top-2 margin", "cascade", "review priority", "noise floor",
                 "KL", "TTFT"):
        assert word in terms, word
    page.click('a.term[href="#term-margin"]')
    assert page.evaluate("location.hash") == "#term-margin"
    assert watched.errors == []


def test_search_finds_pairs_by_their_prompts_and_answers_and_opens_the_identical_ones(
        demo: Demo, watched: Watched) -> None:
    rows = [json.loads(line) for line in (demo.out / "pairs.jsonl").read_text().splitlines()]
    page = watched.open(demo.out / "report.html")
    everything = _visible_keys(page, "article.pair")
    assert _visible_keys(page, "article.same") == []             # the identical pairs: on demand only

    def holding(text: str) -> set[str]:
        """The keys of the pairs whose key, category, prompt, answers or signals hold every word
        of ``text``, as pairs.jsonl has them."""
        return {r["key"] for r in rows if all(any(word in (field or "").lower() for field in (
                    r["key"], r["category"], r["prompt"], *(s["reason"] for s in r["signals"] or ()),
                    *(s["kind"] for s in r["signals"] or ()),
                    *(a["text"] for a in r["answers"].values() if a))) for word in text.lower().split())}

    changed = next(r for r in rows if r["outcome"] != "identical")
    # a word of one changed pair's prompt (not a word of the page's own, nor of its key): exactly
    # the pairs that hold it, changed and identical
    words = sorted({w.strip(".,?!:;$").lower() for w in changed["prompt"].split()}, key=lambda w: (-len(w), w))
    word = next(w for w in words if w.isalpha() and w not in changed["key"] and w not in changed["category"])
    page.fill("#search", word)
    found = _visible_keys(page, "article.pair") + _visible_keys(page, "article.same")
    assert changed["key"] in found and set(found) == holding(word), (word, found)
    # a piece of a candidate's answer that its baseline lacks
    only = next(line for line in changed["answers"]["candidate"]["text"].splitlines()
                if line.strip() and line not in changed["answers"]["baseline"]["text"])
    page.fill("#search", only[:40])
    found = _visible_keys(page, "article.pair") + _visible_keys(page, "article.same")
    assert changed["key"] in found and set(found) == holding(only[:40]), (only, found)
    # the page's own words are not what a pair says: "baseline" finds the pairs that say it, not all
    for own in ("baseline", "priority", "answer"):
        page.fill("#search", own)
        found = _visible_keys(page, "article.pair") + _visible_keys(page, "article.same")
        assert set(found) == holding(own) != set(everything), (own, found)
    # an identical pair's prompt: the identical pairs open, and it is among them
    same = next(r for r in rows if r["outcome"] == "identical")
    page.fill("#search", same["prompt"][:50])
    assert page.locator("details#identical").evaluate("d => d.open")
    assert same["key"] in _visible_keys(page, "article.same")
    assert "identical" in page.inner_text("#search-count")
    # the count is of the pairs the filters leave too
    page.fill("#search", word)
    page.click("label[for=show-outcome-divergent]")
    assert page.inner_text("#search-count").startswith(f"{len(_visible_keys(page, 'article.pair'))} changed")
    page.click("label[for=show-outcome-any]")
    # nothing matches: nothing shown, and it says so; cleared: everything again
    page.fill("#search", "zqxjv-no-such-text")
    assert _visible_keys(page, "article.pair") == [] and _visible_keys(page, "article.same") == []
    assert page.inner_text("#search-count").startswith("0 changed or failed and 0 identical")
    page.fill("#search", "")
    assert _visible_keys(page, "article.pair") == everything
    # search and the filters together: a pair must match both
    page.click("label[for=show-outcome-near]")
    page.fill("#search", word)
    assert set(_visible_keys(page, "article.pair")) == {k for k in holding(word)
                                                         if any(r["key"] == k and r["outcome"] == "near" for r in rows)}
    assert watched.errors == []     # (a script the page's policy refused would be an error here)


def test_search_reads_no_placeholder_of_a_side_without_an_answer(tmp_path: Path, watched: Watched) -> None:
    """A side that failed shows "no answer" in its cell: the page's words, not the pair's, so a
    search for "answer" finds the pairs whose text says it, not the failed one."""
    store = Store.open(tmp_path / "store")
    try:
        run = store.create_run("replay", {})
        store.add_pairs(run, [
            _pair("said", 1, "The answer is 42.", "The answer is 43."),
            _pair("failed", 2, "It is 42.", Answer(Side.CANDIDATE, "m", error="HTTP 500: boom", status=500)),
            _pair("other", 3, "It is blue.", "It is green.")])
        store.finish_run(run)
        write_reports(store, run, tmp_path / "out")
    finally:
        store.close()
    page = watched.open(tmp_path / "out" / "report.html")
    # (the failed side's placeholder is on the page; textContent: a pair off the screen is not laid out)
    assert "no answer" in page.evaluate("document.getElementById('pair-failed-2')?.textContent ?? "
                                        "[...document.querySelectorAll('article.pair')].map(a => a.textContent).join()")
    page.fill("#search", "answer")    # (a signal's reason may say it too: the pair's own words)
    assert "said" in _visible_keys(page, "article.pair") and "failed" not in _visible_keys(page, "article.pair")
    for word, found in (("boom", ["failed"]), ("42", ["said", "failed"])):
        page.fill("#search", word)
        assert _visible_keys(page, "article.pair") == found, word
    assert watched.errors == []


def test_the_identical_pairs_open_on_demand(demo: Demo, watched: Watched) -> None:
    rows = [json.loads(line) for line in (demo.out / "pairs.jsonl").read_text().splitlines()]
    identical = [r["key"] for r in sorted(rows, key=lambda r: r["seq"]) if r["outcome"] == "identical"]
    assert identical, "the demo has identical pairs"
    page = watched.open(demo.out / "report.html")
    page.click("details#identical summary")
    assert _visible_keys(page, "article.same") == identical     # all of them, in log order
    article = page.locator(f'article.same[data-key="{identical[0]}"]')
    same = next(r for r in rows if r["key"] == identical[0])
    article.scroll_into_view_if_needed()   # (laid out only near the screen: content-visibility)
    text = article.inner_text()
    assert same["answers"]["baseline"]["text"].splitlines()[0] in text and same["prompt"][:40] in text
    assert watched.errors == []

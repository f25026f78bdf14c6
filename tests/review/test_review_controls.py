"""The review UI's pages and exports with control, escape and bidi characters in a pair:
its key, category, prompt, answers, error and a reviewer's note. None is written raw; each
is shown, as a box naming its code point in a text, as its escape (``\\u202e``) elsewhere."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowdiff.answers.compare import compare, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.review.app import build_review_app
from shadowdiff.store import Store
from shadowdiff.store.review import ReviewQueue
from shadowdiff.triage.signals import triage
from shadowdiff.vocabulary import Side
from tests.support.reporting import OWASP_FORMS, assert_no_formula_in_csv
from tests.support.reviewing import TOKEN, pair_ids, signed_in
from tests.support.servers import serve_app

HOSTILE = "total \x1b[2K\rverdict: PASS | \u202e24\u202c | \x07 | \x9b units"
SHOWN = "total \\x1b[2K\\rverdict: PASS | \\u202e24\\u202c | \\x07 | \\x9b units"
RAW = ("\x1b", "\r", "\x07", "\x9b", "\u202e", "\u202c")
BOX = '<span class="cf" title="right-to-left override">U+202E</span>24'


def boxed(text: str) -> str:
    """``text`` as a page's text shows it: each character not drawn, a box naming its code point."""
    def box(ch: str) -> str:
        name = unicodedata.name(ch, "a control character").lower()
        return f'<span class="cf" title="{name}">U+{ord(ch):04X}</span>'
    return "".join(ch if ch.isprintable() else box(ch) for ch in text)


BOXED = boxed(HOSTILE)


def raw_in(text: str) -> list[str]:
    return [ch for ch in RAW if ch in text]


def _pairs() -> list[Pair]:
    base, cand = "The total is 42 units.", f"The {HOSTILE}."
    comparison = compare(base, cand)
    t = triage(base, cand, comparison)
    changed = Pair(f"k1 {HOSTILE}", 1, "/v1/chat/completions", f"prompt {HOSTILE}", {}, comparison,
                   {Side.BASELINE: Answer(Side.BASELINE, "m", base), Side.CANDIDATE: Answer(Side.CANDIDATE, "m", cand)},
                   category=f"cat {HOSTILE}", signals=t.as_json(), suggested=t.suggested, priority=t.priority)
    failed = Pair(f"k2 {HOSTILE}", 2, "/v1/chat/completions", "prompt 2", {}, error_comparison(),
                  {Side.BASELINE: Answer(Side.BASELINE, "m", base),
                   Side.CANDIDATE: Answer(Side.CANDIDATE, "m", "", error=f"HTTP 400: {HOSTILE}")})
    return [changed, failed]


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[tuple[str, Store, dict[str, int]]]:
    store = Store.open(tmp_path)
    run = store.create_run("replay", {})
    store.add_pairs(run, _pairs())
    try:
        with serve_app(build_review_app(store, TOKEN)) as url:
            yield url + "/review", store, pair_ids(store, run)
    finally:
        store.close()


def test_pages_show_them_and_write_none_raw(ui: tuple[str, Store, dict[str, int]]) -> None:
    base, store, ids = ui
    client = signed_in(base)
    queue = client.get("/", params={"outcome": "error"}).text + client.get("/").text
    assert raw_in(queue) == []
    assert f"k1 {BOXED}" in queue
    changed = client.get(f"/pairs/{ids[f'k1 {HOSTILE}']}").text
    assert raw_in(changed) == []
    prompt = changed.split('id="prompt">', 1)[1].split("</div>", 1)[0]
    assert BOX in prompt                                   # the prompt, boxed as the answers are
    assert BOX in changed.split('id="side-A"', 1)[1] or BOX in changed.split('id="side-B"', 1)[1]
    assert f"cat {BOXED}" in changed and f"k1 {BOXED}" in changed
    ReviewQueue(store).add_review(ids[f"k2 {HOSTILE}"], "ana", "factual", "candidate", note=f"see {HOSTILE}")
    failed = client.get(f"/pairs/{ids[f'k2 {HOSTILE}']}").text   # revealed: the error text and the note
    assert raw_in(failed) == []
    assert f"HTTP 400: {BOXED}" in failed and f"see {BOXED}" in failed


def test_exports_write_none_raw(ui: tuple[str, Store, dict[str, int]]) -> None:
    base, store, ids = ui
    ReviewQueue(store).add_review(ids[f"k1 {HOSTILE}"], "ana", "factual", "candidate", note=f"see {HOSTILE}")
    client = signed_in(base)
    exported = client.get("/export.csv").content.decode("utf-8").replace("\r\n", "\n")   # (CSV's line ends)
    assert raw_in(exported) == []
    assert f"k1 {SHOWN}" in exported and f"see {SHOWN}" in exported
    jsonl = client.get("/export.jsonl").content.decode("utf-8")
    assert raw_in(jsonl) == []
    row = json.loads(jsonl.splitlines()[0])
    assert (row["key"], row["note"]) == (f"k1 {HOSTILE}", f"see {HOSTILE}")   # JSON's escapes: the text exact


# A file name that reads "photo‮gnp.exe" shows as "photoexe.png" where the override acts;
# the isolates (U+2066-U+2069) reorder what follows them as well.
BIDI = ("\u202a", "\u202b", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f")
TRICK = "photo\u202egnp.exe \u2066x\u2069"
RLO_BOX = '<span class="cf" title="right-to-left override">U+202E</span>gnp.exe'
LRI_BOX = '<span class="cf" title="left-to-right isolate">U+2066</span>x'


def bidi_in(text: str) -> list[str]:
    return [ch for ch in BIDI if ch in text]


def test_texts_from_the_log_and_people_show_code_points(ui: tuple[str, Store, dict[str, int]]) -> None:
    """A key, a prompt, a category, a finish reason, an error, a judge's reason and a
    reviewer's note each show a bidi character as the box of its code point, as an answer
    does; none is written raw, in the queue (searched for it too) or on the pair's page."""
    base, store, _ = ui
    run = store.latest_run("replay")
    assert run is not None
    answers = {Side.BASELINE: Answer(Side.BASELINE, "m", "It is 1.", f"stop {TRICK}"),
               Side.CANDIDATE: Answer(Side.CANDIDATE, "m", "", error=f"HTTP 500: {TRICK}")}
    store.add_pairs(run.id, [Pair(f"key {TRICK}", 3, "/v1/chat/completions", f"prompt {TRICK}", {},
                                  error_comparison(), answers, category=f"cat {TRICK}")])
    pid = pair_ids(store, run.id)[f"key {TRICK}"]
    ReviewQueue(store).set_judge(pid, "factual", "candidate", f"because {TRICK}")
    client = signed_in(base)

    queue = client.get("/").text
    searched = client.get("/", params={"q": f"prompt {TRICK}"}).text
    assert bidi_in(queue) == [] and bidi_in(searched) == []
    row = queue.split(f"/pairs/{pid}?", 1)[1].split("</tr>", 1)[0]
    assert f">key photo{RLO_BOX} {LRI_BOX}" in row                          # the key
    assert f">prompt photo{RLO_BOX}" in row and f"<bdi>cat photo{RLO_BOX}" in row

    page = client.get(f"/pairs/{pid}").text
    assert bidi_in(page) == []
    assert f"<h1><bdi>key photo{RLO_BOX}" in page and f"category <bdi>cat photo{RLO_BOX}" in page
    assert f"finish <bdi>stop photo{RLO_BOX}" in page
    assert f"because photo{RLO_BOX}" in page.split('id="judge"', 1)[1].split("</p>", 1)[0]
    ReviewQueue(store).add_review(pid, "ana", "factual", "candidate", note=f"see {TRICK}")
    revealed = client.get(f"/pairs/{pid}").text
    assert bidi_in(revealed) == []
    assert f"HTTP 500: photo{RLO_BOX}" in revealed and f"see photo{RLO_BOX} {LRI_BOX}" in revealed


def test_export_csv_runs_no_formula(ui: tuple[str, Store, dict[str, int]]) -> None:
    """Notes in every form of a formula OWASP lists: no cell of export.csv runs, read with any
    separator, and every cell is quoted."""
    base, store, ids = ui
    queue = ReviewQueue(store)
    for i, form in enumerate(OWASP_FORMS):
        queue.add_review(ids[f"k1 {HOSTILE}"], f"reviewer{i}", "wording", note=form)
    data = signed_in(base).get("/export.csv").content.decode("utf-8")
    assert_no_formula_in_csv(data)
    notes = [row["note"] for row in csv.DictReader(io.StringIO(data, newline=""))]
    assert "' =1+1" in notes and "a;'=1+1" in notes and "'\uff1d1+1" in notes
    assert '"a;\'=1+1"' in data                                               # quoted

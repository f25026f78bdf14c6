"""The reports of a run: one meaning per word, and nothing in them live.

A prompt log, a saved answer file and an upstream's error body are written by
people and programs nobody here vetted. Whatever they hold — a script, an event
handler, a closing ``</textarea>``, quotes, runs of backticks — must come out of
report.html as text (and the page's Content-Security-Policy forbids scripts anyway),
and must not end report.md's own code blocks or headings when a CommonMark renderer
reads it.
"""

from __future__ import annotations

import csv
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from shadowdiff.answers.records import Answer, Choice
from shadowdiff.report.write import EXPORTS_WRITTEN, write_reports
from shadowdiff.store import Store
from shadowdiff.store.review import Filters, ReviewQueue
from shadowdiff.vocabulary import Side
from tests.support.reporting import (
    FENCED,
    HOSTILE,
    IMG,
    OWASP_FORMS,
    SCRIPT,
    assert_no_formula_in_csv,
    assert_nothing_live,
    commonmark,
    live,
)
from tests.support.reporting import answered_pair as _pair


def _thought(side: Side, text: str = "", finish: str = "length", tokens: int = 40) -> Answer:
    return Answer(side, "m", text, finish, completion_tokens=tokens, reasoning="Let me think about rivers")


def test_one_set_of_counts_for_a_mixed_run_in_every_output(store: Store, tmp_path: Path) -> None:
    """Sampled and deterministic pairs, failed ones of each, one cut by the token cap before
    its answer, one cut after it: every output counts them alike (stdout, summary.json and
    its verdict, report.md, report.html)."""
    run = store.create_run("replay", {})
    sampled = [_pair("s-same", 2, "Same answer.", "Same answer."), _pair("s-near", 3, "It is 42.", "It is 43."),
               _pair("s-failed", 4, "An answer.", Answer(Side.CANDIDATE, "m", error="HTTP 500: boom", status=500))]
    store.add_pairs(run, [
        _pair("same", 1, "Same answer.", "Same answer."),
        *[replace(p, comparable=False) for p in sampled],
        _pair("near", 5, "The total is 42 dollars in all.", "The total is 43 dollars in all."),
        _pair("failed", 6, "An answer.", Answer(Side.CANDIDATE, "m", error="HTTP 500: boom", status=500)),
        _pair("thinking", 7, _thought(Side.BASELINE), _thought(Side.CANDIDATE)),
        _pair("capped", 8, _thought(Side.BASELINE, "The river"), _thought(Side.CANDIDATE, "The river")),
    ])
    store.finish_run(run)
    paths = write_reports(store, run, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    counts = {"pairs": 8, "compared": 3, "identical": 2, "equivalent": 0, "near": 1, "divergent": 0,
              "unanswered": 1, "sampled": 2, "errors": 2}
    assert summary["counts"] == counts
    verdict = summary["acceptance"]
    assert {k: verdict[k] for k in ("pairs", "compared", "identical", "unanswered", "sampled", "errors")} == {
        k: counts[k] for k in ("pairs", "compared", "identical", "unanswered", "sampled", "errors")}
    assert paths.summary_text.startswith("8 pairs: 3 compared (2 identical, 0 equivalent, 1 near, 0 divergent), "
                                         "1 unanswered (neither side reached an answer), 2 sampled (not compared), "
                                         "2 errors\n")
    assert "2 identical, 0 equivalent, 0 wording-only, 0 ambiguous, 1 unreviewed, 1 unanswered, 2 sampled " \
           "(not compared), 2 errors" in paths.summary_text
    # (the two pairs answered without a finish reason: whether the cap cut them is not known, and said)
    assert verdict["capped"] == {"pairs": 2, "unanswered": 1, "of": 4, "unknown": 2, "share": 0.5, "tokens": [40, 40]}
    assert "2 of 4 comparable pairs have no finish reason on a side" in paths.summary_text
    md = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    assert "| pairs | 8 made (3 compared), 8 stored |" in md
    assert "<tr><th>pairs</th><td>8 made (3 compared), 8 stored</td></tr>" in html
    for outcome, n in (("identical", 2), ("near", 1), ("unanswered", 1), ("error", 2), ("sampled (not compared)", 2)):
        assert f"| {outcome} | {n} |" in md, outcome
        term = '(<a class="term"[^>]*>\\?</a>)?'   # (the "?" that links the outcome to its meaning)
        assert re.search(f"<tr><td>{re.escape(outcome)}{term}</td><td>{n}</td>", html), outcome
    assert "of 8 pairs made" in md and "of 8 pairs made" in html
    assert "2 of 4 comparable pairs (50 %) hit the token cap on both sides, compared over their first 40 tokens; " \
           "1 of them before any answer" in md


def test_changed_means_one_thing_in_every_report(store: Store, tmp_path: Path) -> None:
    """changed = answered by both sides and not identical (equivalent, near, divergent);
    in substance = near or divergent; failed = error. The same counts everywhere."""
    run = store.create_run("replay", {})
    store.add_pairs(run, [
        _pair("same", 1, "Same answer.", "Same answer."),
        _pair("format", 2, "Line one.\nLine two.", "Line one.\n\nLine two."),
        _pair("near", 3, "The total is 42 dollars in all.", "The total is 43 dollars in all."),
        _pair("far", 4, "Paris is the capital of France.", "Bananas are yellow and curved fruit."),
        _pair("failed", 5, "An answer.", Answer(Side.CANDIDATE, "m", error="HTTP 500: boom", status=500)),
    ])
    store.finish_run(run)
    outcomes = [p["outcome"] for p in store.pairs(run)]
    assert outcomes == ["identical", "equivalent", "near", "divergent", "error"]
    paths = write_reports(store, run, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    answered = 4
    assert summary["changed_rate"] == 3 / answered           # equivalent + near + divergent
    assert summary["substantive_rate"] == 2 / answered       # near + divergent
    assert (summary["stored_changed"], summary["stored_failed"]) == (3, 1)
    assert ("candidate changed (not identical): 75.0 % of 4 compared pairs, in substance (near or divergent): 50.0 %"
            in paths.summary_text)
    html = (tmp_path / "report.html").read_text()
    assert "<td>changed (not identical: equivalent + near + divergent)</td><td>75.0 %</td>" in html
    assert "<td>changed in substance (near + divergent)</td><td>50.0 %</td>" in html
    assert html.count('<article class="pair"') == 4             # changed and failed, side by side
    # the formatting-only pair: its inserted blank line is marked, a newline beside a gap
    assert ('<tr class="line"><td class="l gap"></td><td class="r changed"><ins class="ws-run">'
            '<span class="ws ws-nl">\n</span></ins></td></tr>') in html
    md = (tmp_path / "report.md").read_text()
    assert "| changed (not identical: equivalent + near + divergent) | 75.0 % |" in md
    assert "| changed in substance (near + divergent) | 50.0 % |" in md
    counts = ReviewQueue(store).counts(Filters(run_id=run))
    assert (counts["changed"], counts["failed"], counts["needs_review"]) == (3, 1, 2)
    assert "2 of 2 pairs changed in substance are unreviewed" in paths.acceptance.text()
    # the side-by-side cap counts the same pairs
    write_reports(store, run, tmp_path / "capped", side_by_side=2)
    capped = (tmp_path / "capped" / "report.html").read_text()
    assert "The first 2 of 3 changed pairs, and 1 of 1 failed ones." in capped


def test_hostile_text_is_never_live_in_either_report(store: Store, tmp_path: Path) -> None:
    run = store.create_run("replay", {
        "sides": {"baseline": {"url": f"http://b/{IMG}", "model": SCRIPT},
                  "candidate": {"url": "http://c", "model": "m`o`del"}},
        "labels": {"team": SCRIPT, IMG: "q`x`"}, "versions": {"baseline": IMG},
    })
    call = {"id": "call_1", "type": "function", "function": {"name": SCRIPT, "arguments": json.dumps({"q": HOSTILE})}}
    thinking = Answer(Side.BASELINE, "m", HOSTILE, "stop", reasoning=FENCED, refusal=IMG, tool_calls=[call],
                      others=(Choice(1, FENCED, IMG, SCRIPT, [call], f"stop{SCRIPT}"),))
    store.add_pairs(run, [
        _pair(f"k{IMG}", 1, thinking, FENCED, category=IMG, prompt=HOSTILE),
        _pair(f"e{SCRIPT}", 2, FENCED, Answer(Side.CANDIDATE, "m", error=f"HTTP 400: {HOSTILE}", status=400),
              category=f"cat|{SCRIPT}", prompt=FENCED),
        _pair("```", 3, "one ``` two", "one ```` two", prompt="`"),
        _pair('=HYPERLINK("http://x")', 4, "+1 plus", "@sum", category="-2+3"),
    ])
    store.add_skipped(run, 9, f"not JSON: {HOSTILE}")
    store.finish_run(run)
    write_reports(store, run, tmp_path)

    # pairs.csv: no cell a spreadsheet would run as a formula
    with (tmp_path / "pairs.csv").open(newline="") as f:
        cells = [cell for row in csv.reader(f) for cell in row]
    assert "'=HYPERLINK(\"http://x\")" in cells and not [c for c in cells if c.startswith(("=", "+", "@"))]
    html = (tmp_path / "report.html").read_text()
    assert_nothing_live(html, SCRIPT, IMG, "</textarea></pre>", f"k{IMG}", f"HTTP 400: {HOSTILE}",
                        f"not JSON: {HOSTILE}", "team=" + SCRIPT)
    assert html.count('<article class="pair"') == 4

    tokens = commonmark((tmp_path / "report.md").read_text())
    # no raw HTML gets through, inline or as a block: every hostile string is in code
    assert [t for t in tokens if t.type == "html_block"] == []
    inline = [c for t in tokens if t.type == "inline" for c in t.children or ()]
    assert [c for c in inline if c.type == "html_inline"] == []
    # every pair keeps its own heading, whatever fences its answers hold
    headings = [tokens[i + 1] for i, t in enumerate(tokens)
                if t.type == "heading_open" and t.tag == "h3"]
    keys = [next(c.content for c in h.children if c.type == "code_inline") for h in headings if h.children]
    assert sorted(keys) == sorted(["```", f"e{SCRIPT}", f"k{IMG}", '=HYPERLINK("http://x")'])
    # and every answer is whole inside one code block
    fences = [t.content for t in tokens if t.type == "fence"]
    assert sum(FENCED in f for f in fences) >= 3
    assert any("one ```` two" in f for f in fences)


FORMULAS = ('=HYPERLINK("http://x","y")', "+1", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1")


def test_pairs_csv_guards_every_text_cell_a_spreadsheet_would_run(store: Store, tmp_path: Path) -> None:
    """Keys, categories, prompts, finish reasons and error bodies come from logs and
    servers nobody vetted: each comes out of pairs.csv with a leading quote; numbers,
    negative ones included, stay numbers."""
    run = store.create_run("replay", {})
    made = []
    for i, formula in enumerate(FORMULAS):
        failed = Answer(Side.CANDIDATE, "m", error=formula, status=500, finish_reason=formula)
        made.append(_pair(formula, i, Answer(Side.BASELINE, "m", "An answer.", formula), failed, category=formula,
                          prompt=formula))
    made.append(replace(_pair("numbers", 9, "The total is 42.", "The total is 43."), margin=-0.5))
    store.add_pairs(run, made)
    store.finish_run(run)
    write_reports(store, run, tmp_path)
    with (tmp_path / "pairs.csv").open(newline="", encoding="utf-8") as f:
        rows = {row["seq"]: row for row in csv.DictReader(f)}
    for i, formula in enumerate(FORMULAS):
        row = rows[str(i)]
        for column in ("key", "category", "prompt", "baseline_finish_reason", "candidate_finish_reason",
                       "candidate_error"):
            # (a CR is written as its escape, \r; a tab is also a separator, so the formula after it is
            # quoted as well)
            shown = {"\r=1": "\\r=1", "\t=1": "'\t'=1"}.get(formula, "'" + formula)
            assert row[column] == shown, (column, row[column])
    assert rows["9"]["margin"] == "-0.5"                       # a number, not text
    assert 0 < float(rows["9"]["similarity"]) < 1
    cells = [cell for row in rows.values() for cell in row.values()]
    assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r")) or (c.startswith("-") and c != "-0.5")]


def test_pairs_csv_guards_owasp_forms_of_a_formula(store: Store, tmp_path: Path) -> None:
    """A formula after white space, after a line break, in full-width characters or after a
    separator inside a cell: none is left for a spreadsheet to run, and every cell is quoted."""
    run = store.create_run("replay", {})
    made = [_pair(form, i, Answer(Side.BASELINE, "m", form, form),
                  Answer(Side.CANDIDATE, "m", error=form, status=500), category=form, prompt=form)
            for i, form in enumerate(OWASP_FORMS)]
    store.add_pairs(run, made)
    store.finish_run(run)
    write_reports(store, run, tmp_path)
    data = (tmp_path / "pairs.csv").read_text(encoding="utf-8")
    assert_no_formula_in_csv(data)
    with (tmp_path / "pairs.csv").open(newline="", encoding="utf-8") as f:
        rows = {row["seq"]: row for row in csv.DictReader(f)}
    for i, form in enumerate(OWASP_FORMS):
        assert rows[str(i)]["key"].replace("'", "") == form.replace("\r", "\\r").replace("'", ""), form
    assert rows["9"]["key"] == "a;'=1+1" and rows["0"]["key"] == "' =1+1"
    assert data.startswith('"key","seq",') and '"a;\'=1+1","9",' in data       # every cell quoted


def test_the_reports_say_where_output_token_counts_came_from(store: Store, tmp_path: Path) -> None:
    """A side whose server sent no usage (llama.cpp's streams) is counted from its logprobs
    or its streamed pieces: every report says which, and how exact."""
    run = store.create_run("replay", {})
    base = Answer(Side.BASELINE, "m", "One two three.", "stop", completion_tokens=4, ttft=0.1, ttlt=0.4, duration=0.5)
    cand = Answer(Side.CANDIDATE, "m", "One two four.", "stop", completion_tokens=3, token_source="stream",
                  ttft=0.1, ttlt=0.3, duration=0.4)
    other = replace(cand, text="One two five.", token_source="logprobs")
    store.add_pairs(run, [_pair("k1", 1, base, cand), _pair("k2", 2, base, other)])
    paths = write_reports(store, run, tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["sides"]["candidate"]["token_sources"] == {"stream": 1, "logprobs": 1}
    assert summary["sides"]["baseline"]["token_sources"] == {"usage": 2}
    line = next(x for x in paths.summary_text.splitlines() if "output token counts" in x)
    assert "candidate: 1 from streamed pieces, 1 from the logprobs' tokens" in line or \
        "candidate: 1 from the logprobs' tokens, 1 from streamed pieces" in line
    assert "baseline" not in line and "lower bound" in line
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="token-sources"' in html and "from streamed pieces" in html
    assert "from streamed pieces" in (tmp_path / "out" / "report.md").read_text()


def test_a_server_without_a_version_endpoint_is_reported_as_unknown(store: Store, tmp_path: Path) -> None:
    """llama.cpp's server has no /version: the reports say "unknown", not nothing."""
    run = store.create_run("replay", {"sides": {"baseline": {"url": "http://a:8000", "model": "m"},
                                                "candidate": {"url": "http://b:8080", "model": "smol-q8"}},
                                      "versions": {"baseline": "0.34.0", "candidate": None}})
    store.add_pairs(run, [_pair("k1", 1, "Same.", "Same.")])
    write_reports(store, run, tmp_path / "out")
    for name in ("report.html", "report.md"):
        text = (tmp_path / "out" / name).read_text()
        assert "unknown (no /version)" in text and "0.34.0" in text, name


def test_every_pair_carries_its_evidence_in_every_file(store: Store, tmp_path: Path) -> None:
    """Signals with their reasons, the suggested verdict, the priority and (given the
    review UI's address) the link to the pair's page, in report.html, report.md,
    pairs.csv and pairs.jsonl; the side-by-side list in the review queue's order."""
    run = store.create_run("replay", {})
    store.add_pairs(run, [_pair("wording", 1, "It is usually fine.", "It is typically fine."),
                          _pair("number", 2, "The total is 42 dollars.", "The total is 43 dollars."),
                          _pair("label", 3, "Label: Positive", "Label: Negative"),
                          _pair("failed", 4, "x", Answer(Side.CANDIDATE, "m", error="HTTP 500"))])
    store.finish_run(run)
    write_reports(store, run, tmp_path, review_url="https://review.example/review/")
    ids = {p["key"]: p["id"] for p in store.pairs(run)}
    stored = {p["key"]: p for p in store.pairs(run)}
    rows = {r["key"]: r for r in map(json.loads, (tmp_path / "pairs.jsonl").read_text().splitlines())}
    with (tmp_path / "pairs.csv").open(newline="") as f:
        cells = {r["key"]: r for r in csv.DictReader(f)}
    html = (tmp_path / "report.html").read_text()
    md = (tmp_path / "report.md").read_text()
    for key, pair in stored.items():
        link = f"https://review.example/review/pairs/{ids[key]}"
        assert rows[key]["review_url"] == cells[key]["review_url"] == link
        assert rows[key]["signals"] == pair["signals"]
        assert (rows[key]["suggested"], rows[key]["priority"]) == (pair["suggested"], pair["priority"])
        assert (cells[key]["suggested"], cells[key]["priority"]) == (pair["suggested"] or "", str(pair["priority"]))
        assert cells[key]["signals"] == "; ".join(f"{s['kind']}: {s['reason']}" for s in pair["signals"] or ())
        assert f'href="{link}"' in html and f"(<{link}>)" in md
        for signal in pair["signals"] or ():
            assert signal["reason"].replace("'", "&#39;") in html and f"`{signal['reason']}`" in md
    assert stored["number"]["suggested"] == "factual" and stored["wording"]["suggested"] == "wording"
    # the changed pairs by priority (the number, then the label, then the wording), then the failed one
    order = [html.index(f'data-key="{key}"') for key in ("number", "label", "wording", "failed")]
    assert order == sorted(order)
    assert [md.index(f"`{key}` —") for key in ("number", "label", "wording", "failed")] == sorted(
        md.index(f"`{key}` —") for key in ("number", "label", "wording", "failed"))
    # each filter the page offers matches pairs by their data attributes
    assert 'data-outcome="error"' in html and 'data-signals="numbers' in html
    assert 'id="show-signal-numbers"' in html and 'id="show-outcome-near"' in html


def test_the_headline_and_run_table_say_what_the_run_was(store: Store, tmp_path: Path) -> None:
    run = store.create_run("replay", {"sides": {"baseline": {"url": "http://a:8000", "model": "bf16"},
                                                "candidate": {"url": "http://b:8000", "model": "fp8"}},
                                      "labels": {"gpu": "H100"}, "concurrency": 8,
                                      "overrides": {"temperature": 0.0, "max_tokens": 256}})
    store.add_pairs(run, [_pair("k1", 1, "Same.", "Same."), _pair("k2", 2, "The total is 4.", "The total is 5.")])
    store.finish_run(run)
    write_reports(store, run, tmp_path)
    # (read without the "?" beside each term, which links to its meaning)
    page = live(re.sub(r'<a class="term"[^>]*>\?</a>', "", (tmp_path / "report.html").read_text()))
    text = " ".join(" ".join(page.text).split())
    summary = json.loads((tmp_path / "summary.json").read_text())
    # ISO 8601 to the second, with its zone
    assert summary["created_at"].endswith("+00:00") and "." not in summary["created_at"]
    assert f"started {summary['created_at']}" in text and f"finished {summary['finished_at']}" in text
    assert "INCOMPLETE 1 of 1 pairs changed in substance are unreviewed" in text
    for words in ("answers changed 50.0 % of 2 comparable pairs both sides answered", "factual regressions 0",
                  "reviewed 0 of 1", "errors 0 failed pairs", "baseline http://a:8000 bf16",
                  "candidate http://b:8000 fp8", "labels gpu=H100", "concurrency 8", "overrides.max_tokens 256",
                  "no noise floor: replay with --replica to measure one"):
        assert words in text, words
    # no text block repeating the CLI's summary
    assert '<pre class="summary">' not in (tmp_path / "report.html").read_text()


def test_a_report_that_fails_part_way_leaves_the_previous_set_whole(store: Store, tmp_path: Path,
                                                                      monkeypatch: Any) -> None:
    """Every file is written aside and moved into place only once all are whole: a report
    that dies before that leaves the last report's files as they were, and nothing else."""
    run = store.create_run("replay", {})
    store.add_pairs(run, [_pair("k1", 1, "The total is 4.", "The total is 5.")])
    out = tmp_path / "out"
    write_reports(store, run, out)
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    store.add_pairs(run, [_pair("k2", 2, "Label: A", "Label: B")])

    def broken(*_: Any) -> list[Any]:
        raise RuntimeError("the plots broke")

    monkeypatch.setattr("shadowdiff.report.write.report_plots", broken)
    with pytest.raises(RuntimeError):
        write_reports(store, run, out)
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before


def test_two_reports_into_one_directory_at_once_do_not_collide(store: Store, tmp_path: Path) -> None:
    run = store.create_run("replay", {})
    store.add_pairs(run, [_pair(f"k{i}", i, "The total is 4.", f"The total is {i}.") for i in range(50)])
    store.finish_run(run)
    out = tmp_path / "out"
    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(write_reports, store, run, out) for _ in range(4)]:
            done.result()
    assert sorted(f.name for f in out.iterdir()) == sorted(
        ["summary.json", "report.md", "report.html", "pairs.csv", "pairs.jsonl", "baseline.texts.json",
         "candidate.texts.json", EXPORTS_WRITTEN])
    assert len((out / "pairs.jsonl").read_text().splitlines()) == 50
    assert (out / EXPORTS_WRITTEN).read_text().split() == sorted(
        ["pairs.csv", "pairs.jsonl", "baseline.texts.json", "candidate.texts.json"])


def test_text_from_logs_cannot_reorder_the_report_around_it(store: Store, tmp_path: Path) -> None:
    """A right-to-left override in a key, a category, a label or a signal's reason (a log's
    text) is never written: shown as the box of its code point, as in an answer, and isolated
    where it is shown inline, so it cannot reverse the report's own words."""
    rlo = "\u202e"
    run = store.create_run("replay", {"labels": {f"team{rlo}": f"x{rlo}y"}})
    store.add_pairs(run, [_pair(f"k{rlo}1", 1, "The total is 42.", f"The total is {rlo}24.", category=f"c{rlo}at")])
    store.finish_run(run)
    write_reports(store, run, tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert rlo not in html
    shown = '<span class="cf" title="right-to-left override">U+202E</span>'
    for text in (f"<bdi>k{shown}1</bdi> —", f"category <bdi>c{shown}at</bdi> ·", f"<bdi>team{shown}=x{shown}y</bdi>"):
        assert text in html, text
    reasons = [r for r in html.split("<li>") if "signal-numbers" in r]
    assert reasons and "<bdi>" in reasons[0]


def _run_of(store: Store, log: str, candidate: str, texts: list[tuple[str, str]], **settings: Any) -> str:
    """A finished replay run of the log ``log`` (its name and its bytes' stand-in) against ``candidate``."""
    run = store.create_run("replay", {"log": f"/checkout-{len(store.runs())}/{log}", "format": "jsonl",
                                      "turn": "last", "log_fingerprint": {"bytes": 10, "sha256": log},
                                      "sides": {"baseline": {"url": "http://b:8000", "model": "base"},
                                                "candidate": {"url": "http://c:8000", "model": candidate}},
                                      **settings})
    store.add_pairs(run, [_pair(f"p{i}", i, base, cand, prompt=f"prompt {i}") for i, (base, cand) in enumerate(texts)])
    store.finish_run(run)
    return run


def test_a_report_shows_the_other_runs_of_its_prompts_run_over_run(store: Store, tmp_path: Path) -> None:
    """The same log (the same bytes, wherever it was) against two candidates: each run's report
    lists them all, oldest first, each with its own figures; a run of another log, or of the same
    log read another way, is not among them."""
    same = [("The answer is 42.", "The answer is 42.")] * 3
    q8 = _run_of(store, "/logs/prompts.jsonl", "m-q8", [*same, ("It is 42.", "It is 43.")])
    _run_of(store, "/logs/other.jsonl", "m-other", same)
    changed = [("The answer is 42.", "Totally different words.")] * 2
    q4 = _run_of(store, "/logs/prompts.jsonl", "m-q4", [*changed, *same])
    again = _run_of(store, "/logs/prompts.jsonl", "m-q8", same, turn="all")   # other turns asked: other prompts
    write_reports(store, q4, tmp_path / "q4")
    history = json.loads((tmp_path / "q4" / "summary.json").read_text())["history"]
    assert [(r["run_id"], r["candidate"], r["this"]) for r in history] == [(q8, "m-q8", False), (q4, "m-q4", True)]
    assert [r["changed_rate"] for r in history] == [0.25, 0.4] and [r["compared"] for r in history] == [4, 5]
    for r in history:   # each row is what that run's own report says
        write_reports(store, r["run_id"], tmp_path / r["run_id"])
        own = json.loads((tmp_path / r["run_id"] / "summary.json").read_text())
        assert (r["changed_rate"], r["substantive_rate"], r["errors"]) == (
            own["changed_rate"], own["substantive_rate"], own["counts"]["errors"])
        assert [h["run_id"] for h in own["history"]] == [q8, q4]
    html = (tmp_path / "q4" / "report.html").read_text()
    table = html[html.index('<table id="history-table">'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr") == 3 and "m-q8" in table and "m-other" not in table
    assert 'class="this"' in table and "(this run)" in table and "40.0 %" in table and "25.0 %" in table
    md = (tmp_path / "q4" / "report.md").read_text()
    assert "## Runs of these prompts" in md and "`m-q8`" in md and "**(this run)**" in md and "m-other" not in md
    assert "## Terms" in md and "**top-1/top-2 margin**" in md
    # a run alone with its prompts has no such table
    write_reports(store, again, tmp_path / "alone")
    assert json.loads((tmp_path / "alone" / "summary.json").read_text())["history"] == []
    assert 'id="history-table"' not in (tmp_path / "alone" / "report.html").read_text()

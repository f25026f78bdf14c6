"""The swap test: nothing a reviewer sees before the verdict depends on which
side is the baseline.

Every pair is stored twice, in two stores: once as (baseline=x, candidate=y) and once
swapped, each triaged by the real code and with the judge's suggestion mirrored. The
blinding is arranged so that x has the same letter on both pages; then every page a
reviewer can reach before giving a verdict (the queue, filtered or not, each pair page,
"review the next pair") must be the same, byte for byte, up to the nonce, the CSRF
field and the run's id.

Scoring is on, as a real run has it: the figures measured on one side (the baseline's
top-1/top-2 margin where the answers part, and the teacher-forced reading of the
baseline's answer: its token agreement, and so whether the pair is a cascade) are those
of whichever answer is the baseline, so they differ between the two stores.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from shadowdiff.answers.compare import compare_answers, error_comparison
from shadowdiff.answers.records import Answer, Choice, Pair
from shadowdiff.review.app import build_review_app
from shadowdiff.review.blind import Blinding
from shadowdiff.review.render import VERDICT_HELP
from shadowdiff.store import Store, schema
from shadowdiff.store.review import ReviewQueue
from shadowdiff.triage.grading import Grader
from shadowdiff.triage.scoring import CASCADE_AGREEMENT, scorable
from shadowdiff.triage.signals import SIGNAL_KINDS, triage_answers, with_cascade
from shadowdiff.verdict.flips import grade_pair
from shadowdiff.vocabulary import Side, Verdict
from tests.support.servers import serve_app

TOKEN = "review-token-for-swap-tests"


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}


@dataclass(frozen=True)
class Case:
    """Two deployments' answers, x and y (``Answer`` fields without the side), and the
    judge's suggestion: a verdict, which of x and y it finds worse, and its reason with
    ``{x}``/``{y}`` for the letters (or, ``legacy``, for the side names the old judge stored)."""

    key: str
    x: dict[str, Any]
    y: dict[str, Any]
    margins: tuple[float, float] | None = None   # the baseline's margin where x is the baseline, where y is
    judge: tuple[str, str | None, str] | None = None
    legacy: bool = False
    kinds: tuple[str, ...] = field(default_factory=tuple)   # the signal kinds this case is there for
    # the teacher-forced scores where x is the baseline and where y is (None: as ``_score`` reads the texts)
    scores: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)
    reference: tuple[str, str] | None = None   # a reference answer and its grader: the pair is graded


CASES = [
    Case("numbers", {"text": "The total is 42 dollars for 7 items."},
         {"text": "The total is 43 dollars for 7 items, in 9 boxes."},
         judge=("factual", "y", "Answer {y} says 43 dollars; Answer {x} says 42."), kinds=("numbers",)),
    Case("numbers-one-side", {"text": "It takes 3 days to arrive."}, {"text": "It takes a few days to arrive."},
         judge=("factual", "x", "{x} is wrong: it says 3."), kinds=("numbers",)),
    Case("negation", {"text": "The bridge is not safe to cross today."}, {"text": "The bridge is safe to cross today."},
         kinds=("negation",)),
    Case("boolean", {"text": "The method returns True for an empty list."},
         {"text": "The method returns False for an empty list."}, kinds=("boolean",)),
    Case("label", {"text": "Label: Positive"}, {"text": "Label: Negative"},
         judge=("factual", "y", "answer {y} mislabels it"), kinds=("label",)),
    Case("json-paths", {"text": '{"a": 1, "b": 2}'}, {"text": '{"a": 1, "b": 3, "c": 4}'},
         judge=("minor", "x", "Answer {x} lacks c"), kinds=("structured",)),
    Case("json-one-parses", {"text": '{"city": "Paris"}'}, {"text": "city: Paris"},
         judge=("minor", "y", "Answer {y} is not JSON"), kinds=("structured",)),
    Case("tool-calls", {"text": "", "finish_reason": "tool_calls",
                        "tool_calls": [_call("get_weather", '{"unit": "celsius", "city": "Oslo"}')]},
         {"text": "", "finish_reason": "tool_calls",
          "tool_calls": [_call("get_weather", '{"unit": "fahrenheit"}'), _call("get_time", "{}")]},
         judge=("factual", "y", "Answer {y} asks for fahrenheit"), kinds=("structured",)),
    Case("tool-names", {"text": "", "tool_calls": [_call("search", '{"q": 1}')]},
         {"text": "", "tool_calls": [_call("lookup", '{"q": "1"}')]}, kinds=("structured",)),
    Case("code", {"text": "Use this:\n```python\nprint(1)\n```"},
         {"text": "Use this:\n```python\nprint(2)\nprint(3)\n```\n```js\nx()\n```"},
         judge=("minor", "x", "{x}'s code prints the wrong thing"), kinds=("code",)),
    Case("truncation-cut", {"text": "One, two, three, four, five.", "finish_reason": "stop"},
         {"text": "One, two, three,", "finish_reason": "length"},
         judge=("minor", "y", "Answer {y} is cut short"), kinds=("truncation", "length")),
    Case("truncation-other", {"text": "Here it is: the list.", "finish_reason": "stop"},
         {"text": "Here it is: the list!", "finish_reason": "content_filter"}, kinds=("truncation",)),
    Case("repetition-both", {"text": "the the cat sat on the mat"}, {"text": "the cat sat on on the mat"},
         judge=("wording", None, "both stutter"), kinds=("repetition",)),
    Case("repetition-one", {"text": "it is is fine, really"}, {"text": "it is fine, really"},
         judge=("minor", "x", "the answers differ: {x} repeats a word"), legacy=True, kinds=("repetition",)),
    Case("refusal-text", {"text": "I'm sorry, I can't help with that request."},
         {"text": "Here is how: first, open the lid."},
         judge=("factual", "x", "{x} refuses while {y} helps"), legacy=True, kinds=("refusal",)),
    Case("refusal-field", {"text": "", "refusal": "I won't do that."}, {"text": "Sure, here it is."},
         judge=("ambiguous", None, "Answer {x} refuses, answer {y} does not"), kinds=("refusal",)),
    Case("length", {"text": "Short."},
         {"text": "A much, much longer answer that keeps on going for quite a while."},
         judge=("minor", "y", "Answer {y} rambles; Answer {x} is terse"), kinds=("length",)),
    Case("length-empty", {"text": ""}, {"text": "Something to say."}, kinds=("length",)),
    Case("choices-count", {"text": "Red.", "others": (Choice(1, "Blue."),)}, {"text": "Red."},
         judge=("equivalent", None, "same colours"), kinds=("choices",)),
    Case("choices-differ", {"text": "Red.", "others": (Choice(1, "Blue."), Choice(2, "Green."))},
         {"text": "Red.", "others": (Choice(1, "Teal."), Choice(2, "Green."))}, kinds=("choices",)),
    Case("reasoning", {"text": "391", "reasoning": "17 * 23 = 391"}, {"text": "391", "reasoning": "17*23 is 391"},
         judge=("equivalent", None, "the same final answer"), kinds=("reasoning",)),
    Case("reasoning-cut", {"text": "", "reasoning": "First, 17 * 20", "finish_reason": "length"},
         {"text": "", "reasoning": "First, 17 * 3", "finish_reason": "length"}, kinds=("reasoning",)),
    Case("reasoning-refusal", {"text": "", "reasoning": "First, 17 * 20", "finish_reason": "length"},
         {"text": "", "reasoning": "First, 17 * 3", "refusal": "I cannot.", "finish_reason": "stop"},
         kinds=("refusal", "truncation")),
    Case("divergence-near-tie", {"text": "The capital is Paris, of course.", "tokens": ["The", " capital", " is",
                                                                                       " Paris"]},
         {"text": "The capital is Lyon, of course.", "tokens": ["The", " capital", " is", " Lyon"]},
         margins=(0.2, 1.7), judge=("factual", "y", "Answer {y} names the wrong capital"), kinds=("divergence",)),
    Case("divergence-confident", {"text": "Water boils at sea level quickly."},
         {"text": "Water boils at high altitude quickly."}, margins=(2.5, 0.3),
         judge=("wording", None, "same content"), kinds=("divergence",)),
    Case("highlight-tie", {"text": "alpha beta gamma"}, {"text": "beta alpha gamma"},
         judge=("wording", None, "reordered"), kinds=("divergence",)),
    Case("cascade", {"text": "The test passed after we fixed the build."},
         {"text": "The test passed once we fixed the build."},
         judge=("wording", None, "same content"), kinds=("cascade",),
         scores=({"agreement": 0.995, "tokens": 200, "agreed": 199, "cascade": True},
                 {"agreement": 0.9912, "tokens": 227, "agreed": 225, "cascade": True})),
    # a cascade read one way round only: its tag alone would tell the stores apart
    Case("cascade-one-way", {"text": "We shipped the fix on the first try."},
         {"text": "We shipped the fix on our first try."}, kinds=("divergence",),
         scores=({"agreement": 0.994, "tokens": 170, "agreed": 169, "cascade": True}, None)),
    # graded against a reference: x right, y wrong (a flip either way round), and both right
    Case("flip", {"text": "So the answer is 42."}, {"text": "So the answer is 41."}, reference=("42", "number"),
         judge=("factual", "y", "Answer {y} gets the sum wrong"), kinds=("flip", "numbers")),
    Case("graded-alike", {"text": "Answer: (B)"}, {"text": "The answer is B."}, reference=("B", "choice")),
    Case("equivalent", {"text": "Line one.\nLine two."}, {"text": "Line one.\n\nLine two."}),
    # invisible characters, changed and not, shown as markers; accents encoded two ways
    Case("invisible", {"text": "The total is 42 units.\nKept \u202e12\u202c.\u200b"},
         {"text": "The total is \u202e24\u202c units.\nKept \u202e12\u202c.\r"}),
    Case("normalization", {"text": "Café au lait."}, {"text": "Cafe\u0301 au lait."}),
    Case("identical", {"text": "Same answer."}, {"text": "Same answer."}),
    Case("error", {"text": "Fine."}, {"text": "", "error": "connection failed: host candidate-vllm:8001"}),
]


def test_the_cases_cover_every_signal_kind_and_judge_verdict() -> None:
    """The swap test below is only as good as its cases: each kind and verdict is in them."""
    assert {k for c in CASES for k in c.kinds} == set(SIGNAL_KINDS)
    verdicts = {_judged(c, x_is_baseline)[0] for c in CASES if c.judge for x_is_baseline in (True, False)}
    assert verdicts == {v.value for v in Verdict}
    for case in CASES:   # and each case fires what it is there for, in both orders
        for x_is_baseline in (True, False):
            signals = _pair(case, x_is_baseline).signals or []
            assert set(case.kinds) <= {s["kind"] for s in signals}, (case.key, x_is_baseline, signals)


def _answer(side: Side, fields: dict[str, Any]) -> Answer:
    return Answer(side, "m", **fields)


_TOKENS = re.compile(r"\w+|[^\w\s]")


def _score(base: Answer, cand: Answer, outcome: str) -> dict[str, Any] | None:
    """A teacher-forced score as ``shadowdiff.triage.scoring.score_pair`` stores it, of the
    baseline's answer: its tokens (words and marks here), all agreed on up to where the
    texts part. Its figures are the baseline's: read the other way round, they differ."""
    if not cand.ok:
        return None
    if (reason := scorable("/v1/completions", {"prompt": "p"}, base)) is not None:
        return {"unscorable": reason}
    tokens = _TOKENS.findall(base.text)
    same = sum(1 for _ in itertools.takewhile(lambda t: t[0] == t[1], zip(tokens, _TOKENS.findall(cand.text),
                                                                          strict=False)))
    agreed = len(tokens) if same == len(tokens) else len(tokens) - 1
    agreement = agreed / len(tokens)
    return {"agreement": agreement, "tokens": len(tokens), "agreed": agreed,
            "cascade": outcome in ("near", "divergent") and agreement >= CASCADE_AGREEMENT}


def _pair(case: Case, x_is_baseline: bool) -> Pair:
    first, second = (case.x, case.y) if x_is_baseline else (case.y, case.x)
    base, cand = _answer(Side.BASELINE, first), _answer(Side.CANDIDATE, second)
    ok = base.ok and cand.ok
    comparison = compare_answers(base, cand) if ok else error_comparison(base.finish_reason, cand.finish_reason)
    margin = case.margins[0 if x_is_baseline else 1] if case.margins else None
    score = case.scores[0 if x_is_baseline else 1] or _score(base, cand, comparison.outcome.value)
    noise = ({"agreement": 1.0, "tokens": score["tokens"], "agreed": score["tokens"]}   # the replica's reading
             if score and "agreement" in score else None)
    pair = Pair(case.key, 0, "/v1/chat/completions", f"prompt for {case.key}", {}, comparison,
                {Side.BASELINE: base, Side.CANDIDATE: cand}, margin=margin, score=score, noise_score=noise,
                **with_cascade(triage_answers(base, cand, comparison, margin), score))
    return grade_pair(pair, case.reference[0], Grader(case.reference[1])) if case.reference else pair


def _judged(case: Case, x_is_baseline: bool, x_is_a: bool = True) -> tuple[str, str | None, str]:
    """The case's judge suggestion as stored for one order of the sides: the verdict and
    worse side on the real sides (a worse baseline is an improvement), the reason in the
    page's letters (or, legacy, in the side names the old judge wrote)."""
    assert case.judge
    verdict, worse, reason = case.judge
    side = {"x": Side.BASELINE if x_is_baseline else Side.CANDIDATE,
            "y": Side.CANDIDATE if x_is_baseline else Side.BASELINE}
    if case.legacy:
        names = {k: f"the {s.value}" for k, s in side.items()}
    else:
        names = {"x": "A" if x_is_a else "B", "y": "B" if x_is_a else "A"}
    worse_side = side[worse] if worse else None
    if verdict == "minor" and worse_side is Side.BASELINE:
        verdict = "improvement"
    return verdict, worse_side.value if worse_side else None, reason.format(**names)


@pytest.fixture
def swapped_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, Store]]:
    """Store 1 holds each case as (x, y), store 2 as (y, x), every case twice: on the first
    of its pairs x is A, on the second y is A, in both stores."""
    one, two = Store.open(tmp_path / "one"), Store.open(tmp_path / "two")
    swapped_key = two.secret("blind_key").encode()
    x_is_a = {}
    for store, x_is_baseline in ((one, True), (two, False)):
        run = store.create_run("replay", {})
        for case in CASES:
            for copy in (0, 1):
                store.add_pairs(run, [replace(_pair(case, x_is_baseline), key=f"{case.key}-{copy}")])
        queue = ReviewQueue(store)
        for row in queue.page(_filters(run), limit=1000):
            case = next(c for c in CASES if row["key"].rsplit("-", 1)[0] == c.key)
            x_is_a[row["id"]] = row["key"].endswith("-0")
            if case.judge and row["outcome"] in ("near", "divergent"):
                queue.set_judge(row["id"], *_judged(case, x_is_baseline, x_is_a[row["id"]]))
                if case.legacy:   # judged before 0010: the judge's order was not the page's
                    with store.engine.begin() as c:
                        c.execute(schema.pairs.update().where(schema.pairs.c.id == row["id"])
                                  .values(judge_blind=None))

    def a_is_baseline(self: Blinding, pair_id: int) -> bool:
        # in store 1 x is the baseline, in store 2 the candidate
        return bool(x_is_a[pair_id] != (self._key == swapped_key))

    monkeypatch.setattr(Blinding, "a_is_baseline", a_is_baseline)
    yield one, two
    one.close()
    two.close()


def _filters(run: str) -> Any:
    from shadowdiff.store.review import Filters

    return Filters(run_id=run)


def _normalised(html: str, store: Store) -> str:
    html = re.sub(r'nonce="[^"]*"', 'nonce=""', html)
    html = re.sub(r'name="csrf" value="[^"]*"', 'name="csrf" value=""', html)
    for run in store.runs():
        html = html.replace(run.id, "RUN").replace(run.id[:8], "RUN")
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d", "TIME", html)


def _pages(store: Store, url: str) -> dict[str, str]:
    """Every page a reviewer who has given no verdict can reach, by its path."""
    client = _signed_in(url)
    paths = ["/", "/?unreviewed=1"]
    # every signal the queue's filter offers
    offered = re.search(r'<select name="signal">(.*?)</select>', client.get("/").text, re.DOTALL)
    assert offered
    paths += [f"/?signal={k}" for k in re.findall(r"<option>([^<]+)</option>", offered.group(1))]
    paths += [f"/?suggested={v}" for v in VERDICT_HELP]
    paths += [f"/?outcome={o}" for o in ("equivalent", "near", "divergent", "error")]
    # every pair any listing shows (the first page of the whole queue holds 50)
    ids = sorted({int(i) for path in paths for i in re.findall(r'href="/review/pairs/(\d+)\?', client.get(path).text)})
    assert ids
    paths += [f"/pairs/{i}" for i in ids] + [f"/pairs/{i}?signal=numbers" for i in ids]
    pages = {}
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path
        pages[path] = _normalised(response.text, store)
    csrf = re.search(r'name="csrf" value="([^"]*)"', client.get("/").text)
    assert csrf
    for n in range(3):   # "review the next pair", and the queue showing the claim
        claimed = client.post("/next", data={"csrf": csrf.group(1)})
        pages[f"next {n}"] = claimed.headers["location"]
        pages[f"queue after next {n}"] = _normalised(client.get("/").text, store)
    return pages


def _signed_in(url: str) -> httpx.Client:
    client = httpx.Client(base_url=url + "/review")
    assert client.post("/login", data={"token": TOKEN, "reviewer": "ana"}).status_code == 303
    return client


def test_every_page_is_the_same_whichever_side_is_the_baseline(swapped_stores: tuple[Store, Store]) -> None:
    one, two = swapped_stores
    with serve_app(build_review_app(one, TOKEN)) as url_one, serve_app(build_review_app(two, TOKEN)) as url_two:
        first, second = _pages(one, url_one), _pages(two, url_two)
    assert first.keys() == second.keys()
    # the judge's suggestion and the grade reach the pages (else this test would prove little about them)
    assert any('id="judge"' in page for page in first.values())
    assert any('id="grade"' in page and "wrong" in page for page in first.values())
    # ... and the scores are there, one side's figures that differ between the two stores
    cascades = [{p["key"] for p in _stored(store) if p["score"] and p["score"].get("cascade")} for store in (one, two)]
    assert "cascade-one-way-0" in cascades[0] - cascades[1]
    assert [{p["margin"] for p in _stored(store)} for store in (one, two)] == [{None, 0.2, 2.5}, {None, 1.7, 0.3}]
    assert any(">U+202E</span>" in page for page in first.values()) and any(" nfc\"" in page for page in first.values())
    differing = [path for path in first if first[path] != second[path]]
    report = "\n".join("".join(difflib.unified_diff(first[p].splitlines(True), second[p].splitlines(True),
                                                    p, p + " (swapped)", n=0))[:3000] for p in differing[:4])
    assert not differing, f"{len(differing)} pages differ when the sides are swapped:\n{report}"


def _stored(store: Store) -> list[Any]:
    return [p for run in store.runs() for p in store.pairs_by_priority(run.id)]


def test_one_sides_figures_are_shown_after_the_verdict(swapped_stores: tuple[Store, Store]) -> None:
    """The margin, the token agreement and the cascade wait for the reveal, then show."""
    one, _ = swapped_stores
    with serve_app(build_review_app(one, TOKEN)) as url:
        client = _signed_in(url)
        ids = {row["key"]: row["id"] for run in one.runs()
               for row in ReviewQueue(one).page(_filters(run.id), limit=1000)}
        cascade, near_tie = ids["cascade-0"], ids["divergence-near-tie-0"]
        csrf = re.search(r'name="csrf" value="([^"]*)"', client.get("/").text)
        assert csrf
        before = {i: client.get(f"/pairs/{i}").text for i in (cascade, near_tie)}
        for i in (cascade, near_tie):
            assert client.post(f"/pairs/{i}/verdict", data={"csrf": csrf.group(1), "verdict": "wording"}
                               ).status_code == 303
        after = {i: client.get(f"/pairs/{i}").text for i in (cascade, near_tie)}
    for figure in ("99.5%", 'id="token-agreement"', "tag-cascade", "the replica (the noise floor) on 100.0%"):
        assert figure not in before[cascade] and figure in after[cascade], figure
    assert "top-1/top-2 margin" not in before[near_tie] and "top-1/top-2 margin was 0.20 (a near-tie" in after[near_tie]
    assert "the answers part at token 3" in before[near_tie]


def test_the_queue_does_not_filter_by_one_sides_figures(swapped_stores: tuple[Store, Store]) -> None:
    """Which pairs are cascades is the baseline's reading: no filter lists them before the verdict."""
    one, _ = swapped_stores
    with serve_app(build_review_app(one, TOKEN)) as url:
        client = _signed_in(url)
        page = client.get("/?signal=cascade", headers={"accept": "text/html"})
        csrf = re.search(r'name="csrf" value="([^"]*)"', client.get("/").text)
        assert csrf
        claimed = client.post("/next?signal=cascade", data={"csrf": csrf.group(1)})
    assert page.status_code == 400 and "after your verdict" in page.text and "report" in page.text
    assert claimed.status_code == 400


def test_no_page_names_a_side_before_the_verdict(swapped_stores: tuple[Store, Store]) -> None:
    """A page that says "baseline", "candidate" or "improvement" outside the rubric's own
    help texts and the style sheet gives a side away, whatever the swap shows."""
    one, _ = swapped_stores
    with serve_app(build_review_app(one, TOKEN)) as url:
        pages = _pages(one, url)
    for path, html in pages.items():
        shown = re.sub(r"<style.*?</style>|<script.*?</script>|<form.*?</form>|<select.*?</select>|"
                       r'title="[^"]*"', "", html, flags=re.DOTALL)
        assert not re.search(r"baseline|candidate|improvement", shown, re.IGNORECASE), (path, shown)
    # a reason the judge gave before it saw the page's order waits for the reveal whole:
    # its bare letters followed sha256(key), which anyone can compute from the page
    phrases = {"repetition-one": "repeats a word", "refusal-text": "refuses while"}
    assert sorted(phrases) == sorted(c.key for c in CASES if c.legacy and c.judge)
    seen = 0
    for path, html in pages.items():
        for key, phrase in phrases.items():
            if "/pairs/" in path and re.search(rf"<title>[^<]*{key}-\d", html):
                seen += 1
                assert "shown after your verdict" in html and phrase not in html, path
    assert seen >= len(phrases)


@pytest.mark.parametrize(("signal", "a_baseline", "b_baseline"), [
    ({"kind": "numbers", "value": {"baseline_only": ["42"], "candidate_only": ["43"]},
      "reason": "only the baseline says 42; only the candidate says 43"},
     "only A says 42; only B says 43", "only A says 43; only B says 42"),
    # a length stored by earlier builds: the candidate's length over the baseline's
    ({"kind": "length", "value": 1.9, "reason": "the candidate is 1.90x the baseline's length"},
     "B is 1.90x as long", "A is 1.90x as long"),
    ({"kind": "length", "value": 0.0, "reason": "the candidate is 0.00x the baseline's length"},
     "B is empty", "A is empty"),
    ({"kind": "choices", "value": {"baseline": 1, "candidate": 3},
      "reason": "1 choices on the baseline, 3 on the candidate"},
     "1 and 3 choices", "1 and 3 choices"),
    # what this version does not know, or cannot read: a neutral text, never the stored reason
    ({"kind": "tone", "value": {"baseline": "warm"}, "reason": "the baseline is warmer than the candidate"},
     "the answers differ (tone): see them below", "the answers differ (tone): see them below"),
    ({"kind": "numbers", "value": None, "reason": "only the baseline says 1"},
     "the answers differ (numbers): see them below", "the answers differ (numbers): see them below"),
    ({"kind": "refusal", "value": {"side": "neither"}, "reason": "only the neither refuses"},
     "the answers differ (refusal): see them below", "the answers differ (refusal): see them below"),
    ({"kind": "reasoning", "value": None, "reason": "the baseline thinks longer"},
     "the reasoning differs", "the reasoning differs"),
])
def test_old_and_unknown_signals_are_shown_blind(signal: dict[str, Any], a_baseline: str, b_baseline: str) -> None:
    from shadowdiff.review.blind import blind_reason

    assert (blind_reason(signal, True), blind_reason(signal, False)) == (a_baseline, b_baseline)

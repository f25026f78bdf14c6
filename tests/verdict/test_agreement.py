"""Inter-reviewer agreement: Cohen's kappa against worked examples, its edge cases, and
the agreement a report shows for pairs two reviewers judged blind."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from shadowdiff.report.write import write_reports
from shadowdiff.store import Store
from shadowdiff.store.review import ReviewQueue
from shadowdiff.verdict.agreement import LISTED, Agreement, agreement_of, cohens_kappa
from tests.support.reporting import assert_nothing_live, commonmark
from tests.support.runs import add_run, flips


def items(**cells: int) -> list[tuple[str, str]]:
    """A contingency table as items: ``yes_no=5`` is five items rater 1 said yes and rater 2 no."""
    return [(first, second) for cell, n in cells.items() for first, second in [cell.split("_")] * n]


def test_the_worked_example_of_wikipedia() -> None:
    """Wikipedia's "Cohen's kappa" example: 50 proposals, both yes 20, A yes B no 5, A no
    B yes 10, both no 15: p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4."""
    k = cohens_kappa(items(yes_yes=20, yes_no=5, no_yes=10, no_no=15))
    assert k.items == 50
    assert k.observed == pytest.approx(0.7) and k.expected == pytest.approx(0.5)
    assert k.kappa == pytest.approx(0.4)


def test_three_categories_by_hand() -> None:
    """a/a 4, b/b 2, c/c 1, a/b 1, b/c 1, c/a 1: p_o = 7/10; each rater a 5, b 3, c 2, so
    p_e = (25 + 9 + 4) / 100 = 0.38 and kappa = 0.32 / 0.62 = 16/31."""
    k = cohens_kappa(items(a_a=4, b_b=2, c_c=1, a_b=1, b_c=1, c_a=1))
    assert (k.observed, k.expected) == (pytest.approx(0.7), pytest.approx(0.38))
    assert k.kappa == pytest.approx(16 / 31)


def test_agreement_worse_than_chance_is_negative() -> None:
    assert cohens_kappa(items(yes_no=5, no_yes=5)).kappa == pytest.approx(-1.0)


def test_one_category_only_leaves_kappa_undefined() -> None:
    """Both raters always say the same one thing: chance agreement is 100 %, and kappa is
    0/0 - undefined, never a division by zero nor a made-up 1."""
    k = cohens_kappa(items(wording_wording=6))
    assert (k.items, k.observed, k.expected, k.kappa) == (6, 1.0, 1.0, None)
    text = Agreement(6, k, ()).kappa_text
    assert "observed agreement 100.0 %" in text and "Cohen's kappa undefined" in text


def test_no_items() -> None:
    assert cohens_kappa([]) == cohens_kappa(()) and cohens_kappa([]).kappa is None
    assert agreement_of([]).text() == ""     # nobody reviewed: nothing to say


def review(pair_id: int, reviewer: str, verdict: str, wrong_side: str | None = None, note: str = "",
           key: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(pair_id=pair_id, key=key or f"k{pair_id}", reviewer=reviewer, verdict=verdict,
                           wrong_side=wrong_side, note=note)


def test_raters_are_a_pairs_first_review_and_the_first_later_one_by_someone_else() -> None:
    agreement = agreement_of([
        review(1, "ana", "minor", "candidate"), review(1, "ana", "wording"),   # ana again: not a second rater
        review(1, "bob", "minor", "candidate"), review(1, "cy", "wording"),   # cy: a third, not in kappa
        review(2, "bob", "minor", "baseline"), review(2, "cy", "minor", "candidate"),   # the side differs
        review(3, "cy", "equivalent"),                                        # reviewed once
        review(4, "ana", "minor"), review(4, "bob", "minor", "candidate"),   # no side: it meant the candidate
    ])
    assert agreement.reviewed == 4 and agreement.twice.items == 3
    # pairs 1 and 4 agree (minor/candidate), pair 2 does not: p_o = 2/3
    # rater 1: minor/candidate 2, minor/baseline 1; rater 2: minor/candidate 3: p_e = 2/3, kappa 0
    assert agreement.twice.observed == pytest.approx(2 / 3) and agreement.twice.kappa == pytest.approx(0)
    # disagreements: any two reviewers apart (pair 1: cy; pair 2: the side), every counted review
    # listed (ana's second is after her reveal: not counted)
    assert [(d.pair_id, [(r.reviewer, r.label) for r in d.reviews]) for d in agreement.disagreements] == [
        (1, [("ana", "minor/candidate"), ("bob", "minor/candidate"), ("cy", "wording")]),
        (2, [("bob", "minor/baseline"), ("cy", "minor/candidate")]),
    ]


def test_with_two_reviewers_each_is_a_rater_whoever_came_first() -> None:
    """The classic two-rater kappa: Ana's column against Bo's, not first against second
    review (a hostile review's case: by hand p_o = 1/2, p_e = 3/8, kappa = 0.20; first
    against second would give p_e = 1/2 and kappa 0)."""
    agreement = agreement_of([
        review(1, "Ana", "factual", "candidate"), review(1, "Bo", "wording"),
        review(2, "Ana", "wording"), review(2, "Bo", "wording"),
        review(3, "Bo", "factual", "candidate"), review(3, "Ana", "factual", "candidate"),
        review(4, "Bo", "wording"), review(4, "Ana", "factual", "candidate"),
    ])
    k = agreement.twice
    assert (k.items, k.raters) == (4, ("Ana", "Bo"))
    assert k.observed == pytest.approx(0.5) and k.expected == pytest.approx(3 / 8)
    assert k.kappa == pytest.approx(0.2)
    assert "between Ana and Bo" in agreement.text() and "too few to read much into" in agreement.text()
    assert agreement.as_json()["raters"] == ["Ana", "Bo"]
    # a third reviewer: the columns are first and second review again
    three = agreement_of([review(1, "Ana", "wording"), review(1, "Bo", "wording"),
                          review(2, "Cy", "wording"), review(2, "Ana", "wording")])
    assert three.twice.raters == () and "first review against" in three.text()


def test_a_reviewer_changing_their_mind_is_no_disagreement() -> None:
    agreement = agreement_of([review(1, "ana", "wording"), review(1, "ana", "minor", "candidate")])
    assert agreement.disagreements == () and agreement.twice.items == 0
    assert "no pair has two reviews by different reviewers" in agreement.text()


def test_verdicts_given_after_the_reveal_change_neither_kappa_nor_the_disagreements() -> None:
    """A reviewer's later verdict on a pair (older builds took one after the page had shown
    the sides) is left out: the agreement is the one of the blind verdicts alone."""
    blind = [review(1, "ana", "wording"), review(1, "bob", "wording"),
             review(2, "ana", "equivalent"), review(2, "bob", "minor", "candidate"),
             review(3, "bob", "wording"), review(3, "ana", "wording")]
    unblinded = [review(1, "ana", "factual", "candidate"), review(2, "bob", "equivalent"),
                 review(3, "bob", "factual", "candidate")]
    mixed = blind[:2] + unblinded[:1] + blind[2:4] + unblinded[1:2] + blind[4:] + unblinded[2:]
    assert agreement_of(mixed) == agreement_of(blind)
    assert [d.pair_id for d in agreement_of(mixed).disagreements] == [2]


def test_the_terminal_lists_the_first_disagreements_only() -> None:
    rows = [r for i in range(LISTED + 3) for r in (review(i, "ana", "wording", note=f"note\n{i}"),
                                                    review(i, "bob", "factual", "candidate"))]
    text = agreement_of(rows).text()
    assert f"reviewers disagree on {LISTED + 3} pairs" in text
    assert "pair k0 (id 0): ana wording (note 0); bob factual/candidate" in text
    assert f"pair k{LISTED - 1} (id" in text and f"pair k{LISTED} (id" not in text
    assert "... and 3 more (all in summary.json and the reports)" in text
    assert len(agreement_of(rows).as_json()["disagreements"]) == LISTED + 3


HOSTILE_NOTE = "<script>alert(1)</script> | `x` ```"


def test_the_reports_show_agreement_and_the_pairs_reviewers_disagree_on(store: Store, tmp_path: Path) -> None:
    """Two reviewers, each pair judged blind by both, through the store on every database."""
    run, ids = add_run(store, flips(6))
    queue = ReviewQueue(store)
    pairs = list(ids.values())
    verdicts = [  # (ana, bob): agree on 4 of 6
        (("wording", None), ("wording", None)), (("minor", "candidate"), ("minor", "candidate")),
        (("wording", None), ("wording", None)), (("improvement", "baseline"), ("improvement", "baseline")),
        (("minor", "baseline"), ("minor", "candidate")), (("wording", None), ("factual", "candidate")),
    ]
    for pair, (ana, bob) in zip(pairs, verdicts, strict=True):
        queue.add_review(pair, "ana", *ana, note="ana's note" if pair == pairs[4] else "")
        queue.add_review(pair, "bob", *bob, note=HOSTILE_NOTE if pair == pairs[5] else "")
    # ana: wording 3, minor/candidate 1, improvement/baseline 1, minor/baseline 1
    # bob: wording 2, minor/candidate 2, improvement/baseline 1, factual/candidate 1
    # p_o = 4/6; p_e = (3*2 + 1*2 + 1*1) / 36 = 9/36; kappa = (2/3 - 1/4) / (3/4) = 5/9
    paths = write_reports(store, run, tmp_path)

    assert "observed agreement 66.7 %, by chance 25.0 %, Cohen's kappa 0.56" in paths.summary_text
    assert "6 pairs reviewed twice" in paths.summary_text
    assert "reviewers disagree on 2 pairs" in paths.summary_text
    assert (f"pair flip4 (id {pairs[4]}): ana minor/baseline (ana's note); bob minor/candidate"
            in paths.summary_text)

    summary = json.loads((tmp_path / "summary.json").read_text())["acceptance"]
    assert summary["disagreements"] == 2
    agreement = summary["agreement"]
    assert (agreement["reviewed"], agreement["reviewed_twice"]) == (6, 6)
    assert agreement["kappa"] == pytest.approx(5 / 9) and agreement["observed"] == pytest.approx(2 / 3)
    assert agreement["disagreements"] == [
        {"pair_id": pairs[4], "key": "flip4", "reviews": [
            {"reviewer": "ana", "verdict": "minor/baseline", "note": "ana's note"},
            {"reviewer": "bob", "verdict": "minor/candidate", "note": ""}]},
        {"pair_id": pairs[5], "key": "flip5", "reviews": [
            {"reviewer": "ana", "verdict": "wording", "note": ""},
            {"reviewer": "bob", "verdict": "factual/candidate", "note": HOSTILE_NOTE}]},
    ]

    html = (tmp_path / "report.html").read_text()
    assert_nothing_live(html, HOSTILE_NOTE, "Cohen's kappa 0.56")
    # flip1, and flip4 where the verdict least favourable to the candidate stands
    assert "<tr><td>minor: the candidate slightly worse</td><td>2</td></tr>" in html
    assert f"<tr><td><bdi>flip5</bdi></td><td>{pairs[5]}</td>" in html

    md = (tmp_path / "report.md").read_text()
    assert "Cohen's kappa 0.56" in md
    rows = [line for line in md.splitlines() if line.startswith("| `flip")]
    assert len(rows) == 2 and rows[1].count(" | ") == 2     # the note's pipe does not split the row
    tokens = commonmark(md)
    assert [t for t in tokens if t.type == "html_block"] == []
    inline = [c for t in tokens if t.type == "inline" for c in t.children or ()]
    assert [c for c in inline if c.type == "html_inline"] == []


def test_reports_of_pairs_reviewed_once_say_no_pair_has_two_reviews(store: Store, tmp_path: Path) -> None:
    run, ids = add_run(store, flips(2))
    queue = ReviewQueue(store)
    for pair in ids.values():
        queue.add_review(pair, "ana", "wording")
    paths = write_reports(store, run, tmp_path)
    assert "no pair has two reviews by different reviewers" in paths.summary_text
    assert "no pair has two reviews by different reviewers" in (tmp_path / "report.html").read_text()
    agreement = json.loads((tmp_path / "summary.json").read_text())["acceptance"]["agreement"]
    assert (agreement["reviewed_twice"], agreement["kappa"], agreement["disagreements"]) == (0, None, [])


def test_a_report_of_unreviewed_pairs_has_no_agreement_section(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "store")
    run, _ = add_run(store, flips(2))
    paths = write_reports(store, run, tmp_path / "out")
    assert "inter-reviewer agreement" not in paths.summary_text
    assert "Agreement between reviewers" not in (tmp_path / "out" / "report.html").read_text()
    store.close()

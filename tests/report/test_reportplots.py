"""The report's plots, drawn from a store (SQLite, and PostgreSQL when given): each there
under its id, each showing the run's own numbers, none running anything."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

from shadowdiff.answers.compare import compare, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.report.plots import MAX_CATEGORIES, Plot, report_plots
from shadowdiff.report.summary import summarize
from shadowdiff.store import Store
from shadowdiff.vocabulary import Side
from tests.support.factories import pair

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script> & co"
IDS = ["plot-outcomes", "plot-similarity", "plot-divergence", "plot-ttft", "plot-latency", "plot-categories"]
SAME, FORMAT = ("Same answer.", "Same answer."), ("Line one.\nLine two.", "Line one.\n\nLine two.")
NEAR = ("The total is 42 dollars in all.", "The total is 43 dollars in all.")
FAR = ("Paris is the capital of France.", "Bananas are yellow and curved fruit.")


def _answer(side: Side, text: str, seq: int, failed: bool = False) -> Answer:
    ttft = {Side.BASELINE: 0.1, Side.CANDIDATE: 0.05, Side.REPLICA: 0.2}[side] * seq
    if failed:
        return Answer(side, "m", error="HTTP 500: boom", status=500, ttft=ttft, duration=ttft)
    return Answer(side, "m", text, ttft=ttft, duration=ttft + 1.0, status=200)


def _pair(seq: int, texts: tuple[str, str], *, replica: str | None = None, category: str | None = None,
          failed: bool = False, first_token: int | None = None, comparable: bool = True,
          score: float | None = None) -> Pair:
    """A pair as replay stores it, with timings per side, a replica's answer (and its
    comparison, the noise floor) when given, a known first differing token, a score."""
    base, cand = texts
    p = pair(f"k{seq}", base, cand)
    answers = {Side.BASELINE: _answer(Side.BASELINE, base, seq),
               Side.CANDIDATE: _answer(Side.CANDIDATE, cand, seq, failed)}
    if replica is not None:
        answers[Side.REPLICA] = _answer(Side.REPLICA, replica, seq)
    comparison = error_comparison() if failed else replace(p.comparison, first_token=first_token)
    return replace(p, comparison=comparison, answers=answers, category=category, comparable=comparable,
                   noise=compare(base, replica) if replica is not None else None,
                   score={"agreement": score, "tokens": 100, "agreed": round(score * 100)} if score else None)


def _plots(store: Store, run: str) -> dict[str, Plot]:
    plots = report_plots(store, run, summarize(store, run))
    for p in plots:
        root = ET.fromstring(p.svg)   # well-formed
        assert root.get("id") == p.id and root.get("role") == "img"
        assert not {e.tag for e in root.iter()} & {f"{NS}script", f"{NS}foreignObject"}
    return {p.id: p for p in plots}


def _root(plot: Plot) -> ET.Element:
    return ET.fromstring(plot.svg)


def _series(plot: Plot) -> dict[str, ET.Element]:
    return {g.get("data-series", ""): g for g in _root(plot).iter(f"{NS}g") if g.get("data-series") is not None}


def _texts(plot: Plot) -> list[str]:
    return ["".join(t.itertext()) for t in _root(plot).iter(f"{NS}text")]


def _labels(plot: Plot) -> list[str]:
    """Each text's whole label: a label cut to fit has the whole in its tooltip."""
    return [t.findtext(f"{NS}title") or t.text or "" for t in _root(plot).iter(f"{NS}text")]


def _heights(group: ET.Element) -> list[float]:
    return [float(r.get("height", "")) for r in group.iter(f"{NS}rect")]


def _mixed_run(store: Store) -> str:
    run = store.create_run("replay", {"thresholds": {"near": 0.8}})
    store.add_pairs(run, [
        _pair(1, SAME, replica=SAME[0], category="math"),
        _pair(2, NEAR, replica=NEAR[0], category="math", first_token=7),
        _pair(3, FAR, replica="Paris is the capital of France!", category=HOSTILE, first_token=0),
        _pair(4, FORMAT, replica=FORMAT[0], category="code"),
        _pair(5, SAME, replica=SAME[0], category="code", failed=True),
        _pair(6, FAR, replica=FAR[0], comparable=False, first_token=0),      # sampled: no rate counts it
    ])
    store.finish_run(run)
    return run


def test_every_plot_is_there_in_order_and_shows_the_runs_numbers(store: Store) -> None:
    run = _mixed_run(store)
    assert [p["outcome"] for p in store.pairs(run)] == [
        "identical", "near", "divergent", "equivalent", "error", "divergent"]
    plots = _plots(store, run)
    assert list(plots) == IDS   # unscored: no token agreement

    # outcomes: 5 comparable pairs, one of each outcome; the replica's: 4 identical, 1 near
    outcomes = _series(plots["plot-outcomes"])
    assert list(outcomes) == ["candidate vs baseline", "replica vs baseline (noise floor)"]
    candidate = _heights(outcomes["candidate vs baseline"])
    floor = _heights(outcomes["replica vs baseline (noise floor)"])
    assert len(candidate) == len(floor) == 6   # identical, equivalent, near, divergent, unanswered, error
    shown = candidate[:4] + candidate[5:]     # one pair of each outcome but unanswered
    assert max(shown) - min(shown) < 0.2 and candidate[0] > 0 and candidate[4] == 0
    assert floor[0] == 4 * floor[2] and floor[2] == candidate[0] and floor[1] == floor[3] == floor[4] == floor[5] == 0
    assert "noise floor, 5 pairs" in plots["plot-outcomes"].caption

    # similarity: the comparable pairs changed in substance (near, divergent), the marker
    # at the run's own near threshold
    similarity = plots["plot-similarity"]
    assert list(_series(similarity)) == ["candidate vs baseline", "replica vs baseline"]
    assert {"candidate vs baseline (n=2)", "replica vs baseline (n=1)"} <= set(_texts(similarity))
    marker = next(g for g in _root(similarity).iter(f"{NS}g") if g.get("data-marker"))
    assert marker.get("data-marker") == "0.8" and "near ≥ 0.8" in "".join(marker.itertext())

    # divergence: the same two pairs, in tokens
    divergence = plots["plot-divergence"]
    bars = list(_series(divergence)["candidate vs baseline"].iter(f"{NS}rect"))
    assert sum(int(b.findtext(f"{NS}title", "").rsplit(": ", 1)[1]) for b in bars) == 2
    assert "first differing token (from 0)" in _texts(divergence)

    # timings: every side's successful answers (the candidate's failed one left out)
    for plot_id, median in (("plot-ttft", "candidate 0.15 s"), ("plot-latency", "candidate 1.15 s")):
        timing = plots[plot_id]
        assert list(_series(timing)) == ["baseline", "candidate", "replica"]
        assert {"baseline (n=6)", "candidate (n=5)", "replica (n=6)"} <= set(_texts(timing))
        assert median in timing.caption

    # categories: the largest first, the hostile name shown as text, never as markup
    categories = plots["plot-categories"]
    assert "<script" not in categories.svg
    labels = [t for t in _labels(categories) if t in ("code", "math", "(none)", HOSTILE)]
    assert labels == ["code", "math", "(none)", HOSTILE]
    assert "categories are shown" not in categories.caption


def test_without_a_replica_there_is_no_noise_floor_and_a_scored_run_shows_its_agreement(store: Store) -> None:
    run = store.create_run("replay", {})
    store.add_pairs(run, [_pair(1, SAME, score=1.0), _pair(2, NEAR, score=0.96), _pair(3, FAR, score=0.5),
                          _pair(4, FAR, score=0.97)])
    plots = _plots(store, run)
    assert list(plots) == [*IDS, "plot-token-agreement"]
    assert list(_series(plots["plot-outcomes"])) == ["candidate vs baseline"]
    assert "there is no noise floor" in plots["plot-outcomes"].caption
    assert list(_series(plots["plot-similarity"])) == ["candidate vs baseline"]

    # no tokens known: positions in characters
    assert "first differing character (from 0)" in _texts(plots["plot-divergence"])
    assert "in characters" in plots["plot-divergence"].caption

    # agreement in scorestats' bins: below 90 %, ..., 95-98 % (two pairs), ..., exactly 100 %
    agreement = plots["plot-token-agreement"]
    heights = _heights(_series(agreement)["candidate"])
    assert len(heights) == 7
    assert heights[0] == heights[-1] > 0 and heights[2] == 2 * heights[0] and sum(heights[1:2] + heights[3:6]) == 0
    assert "0–90%" in _texts(agreement) and "exactly 100%" in _texts(agreement)
    assert "candidate 85.75% of 400 tokens" in agreement.caption


def test_categories_are_capped_at_the_largest(store: Store) -> None:
    run = store.create_run("replay", {})
    store.add_pairs(run, [_pair(i, SAME, category=f"c{i % 25:02d}") for i in range(1, 31)])
    categories = _plots(store, run)["plot-categories"]
    rows = [t for t in _texts(categories) if re.fullmatch(r"c\d\d", t)]
    assert len(rows) == MAX_CATEGORIES
    assert rows[:5] == ["c01", "c02", "c03", "c04", "c05"]   # the five with 2 pairs each come first
    assert f"The {MAX_CATEGORIES} largest of 25 categories are shown." in categories.caption


def test_an_empty_run_has_every_plot_saying_no_data(store: Store) -> None:
    run = store.create_run("replay", {})
    plots = _plots(store, run)
    assert list(plots) == IDS
    for plot in plots.values():
        assert _texts(plot) == ["no data"], plot.id


def test_a_run_larger_than_the_sample_is_drawn_from_a_seeded_sample_and_says_so(store: Store) -> None:
    run = store.create_run("replay", {})
    store.add_pairs(run, [_pair(i, NEAR if i % 2 else FAR, replica=SAME[0], first_token=i % 7)
                          for i in range(1, 41)])
    summary = summarize(store, run)
    whole = {p.id: p for p in report_plots(store, run, summary)}
    assert whole == {p.id: p for p in report_plots(store, run, summary, sample_size=40)}   # every value: as before
    sampled = {p.id: p for p in report_plots(store, run, summary, sample_size=10)}
    assert sampled == {p.id: p for p in report_plots(store, run, summary, sample_size=10)}   # the same every time
    for plot_id in ("plot-similarity", "plot-ttft", "plot-latency"):
        assert "Drawn from a sample of 10 " in sampled[plot_id].caption
        assert "sample" not in whole[plot_id].caption
        assert sampled[plot_id].svg != whole[plot_id].svg
    # the legend counts every pair; the curve has the sample's steps
    assert "candidate (n=40)" in _texts(sampled["plot-ttft"])
    path = _series(sampled["plot-ttft"])["candidate"].find(f"{NS}path")
    assert path is not None and path.get("d", "").count("v") == 10
    assert "drawn from a sample of 10" in sampled["plot-ttft"].svg
    # the divergence histogram counts every pair, sampled or not
    assert sampled["plot-divergence"] == whole["plot-divergence"]
    assert "40 comparable pairs" in sampled["plot-divergence"].caption

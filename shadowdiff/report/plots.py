"""The report's plots: a run's numbers drawn as inline SVG.

``report_plots`` gives ``Plot``s in this order, each ``svg`` one ``<svg>`` element whose
``id`` attribute is the plot's ``id`` (the browser tests look for them):

    plot-outcomes         the candidate's outcomes beside the noise floor's (the replica's),
                          as shares of the comparable pairs
    plot-similarity       CDF of the similarity of the pairs changed in substance, with the
                          near threshold marked; the replica's as a second series
    plot-divergence       histogram of where those pairs' answers first differ: in tokens,
                          or in characters when no pair's tokens are known
    plot-ttft             CDF of each side's time to first token (successful answers)
    plot-latency          CDF of each side's time for the whole answer (successful answers)
    plot-categories       outcomes per category, stacked (the MAX_CATEGORIES largest)
    plot-token-agreement  per-pair token agreement, binned (shadowdiff.statistics.scorestats), the candidate
                          beside the replica: only for a scored run

Every plot but the last is always there, a "no data" chart when it has nothing to draw.
Every text inside ``svg`` is escaped (shadowdiff.report.svg), so a template inserts it as
markup (``{{ plot.svg | safe }}``); ``title`` and ``caption`` are plain text, escaped
like any other. The pairs are read once, a few numbers each (store.plotrows), into
memory that does not grow with the run: a CDF draws every value up to
``SAMPLE_SIZE`` of them, a seeded sample of that many beyond (its caption says so); the
divergence histogram counts every pair (shadowdiff.report.sampling).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from shadowdiff.report import svg as svgplot
from shadowdiff.report.sampling import SAMPLE_SIZE, Counts, Sample, mix
from shadowdiff.report.summary import OUTCOMES, Summary
from shadowdiff.report.svg import Marker, Series
from shadowdiff.store import Store
from shadowdiff.store.plotrows import SIDES, PlotRow, plot_rows
from shadowdiff.vocabulary import SUBSTANTIVE, Outcome, Side

# seaborn's "deep" blue and orange, and a grey for the noise floor: apart for every
# common colour blindness, and in lightness
SIDE_COLORS = {Side.BASELINE: "#4c72b0", Side.CANDIDATE: "#dd8452", Side.REPLICA: "#8c8c8c"}
# from alike (light blues) to different (orange, vermillion), errors dark grey
OUTCOME_COLORS: dict[str, str] = {Outcome.IDENTICAL: "#c6dbef", Outcome.EQUIVALENT: "#6baed6", Outcome.NEAR: "#f2b447",
                  Outcome.DIVERGENT: "#c8501e", Outcome.UNANSWERED: "#b8b8b8", Outcome.ERROR: "#4d4d4d"}
MAX_CATEGORIES = 20
_SERVE_NOTE = " A serve run keeps identical pairs only at its --keep-rate: these are its stored pairs."


@dataclass(frozen=True)
class Plot:
    id: str
    title: str
    svg: str        # one <svg id="{id}">, every text in it escaped: safe to insert as markup
    caption: str    # plain text


@dataclass
class _Columns:
    """The values the plots draw, gathered in one pass in memory that does not grow with
    the run: a seeded sample of each CDF's values, exact counts of the divergence's
    positions (shadowdiff.report.sampling)."""

    size: int = SAMPLE_SIZE
    similarity: Sample = field(init=False)
    noise_similarity: Sample = field(init=False)
    first_token: Counts = field(default_factory=Counts)
    first_char: Counts = field(default_factory=Counts)
    ttft: dict[Side, Sample] = field(init=False)
    duration: dict[Side, Sample] = field(init=False)

    def __post_init__(self) -> None:
        self.similarity, self.noise_similarity = Sample(self.size), Sample(self.size)
        self.ttft = {s: Sample(self.size) for s in SIDES}
        self.duration = {s: Sample(self.size) for s in SIDES}


def report_plots(store: Store, run_id: str, summary: Summary, sample_size: int = SAMPLE_SIZE) -> list[Plot]:
    """The run's plots (see the module's docstring), from its store and its summary; each
    CDF drawn from at most ``sample_size`` values (the caption says when it is a sample)."""
    data = _collect(plot_rows(store, run_id), sample_size)
    near = float(summary.settings.get("thresholds", {}).get("near", 0.9))
    note = _SERVE_NOTE if summary.kind == "serve" else ""
    plots = [_outcomes(summary), _similarity(data, near), _divergence(data),
             _timing("plot-ttft", "Time to first token", data.ttft, "time to first token", note),
             _timing("plot-latency", "Latency (whole answer)", data.duration, "time for the whole answer", note),
             _categories(summary, note)]
    if summary.token_agreement and summary.token_agreement.get("pairs"):
        plots.append(_agreement(summary))
    return plots


def _collect(rows: Iterable[PlotRow], size: int = SAMPLE_SIZE) -> _Columns:
    data = _Columns(size)
    for r in rows:
        h = mix(r.id)
        # the similarity and divergence plots: comparable pairs changed in substance, as the
        # summary's histogram (sampled pairs differ by chance; equivalent ones in formatting)
        if r.comparable and r.outcome in SUBSTANTIVE:
            _add(data.similarity, h, r.similarity)
            if r.first_token is not None:
                data.first_token.add(float(r.first_token))
            if r.first_char is not None:
                data.first_char.add(float(r.first_char))
        if r.comparable and r.noise_outcome in SUBSTANTIVE:
            _add(data.noise_similarity, h, r.noise_similarity)
        for side, ttft, duration in zip(SIDES, (r.baseline_ttft, r.candidate_ttft, r.replica_ttft),
                                        (r.baseline_duration, r.candidate_duration, r.replica_duration),
                                        strict=True):
            _add(data.ttft[side], h, ttft)
            _add(data.duration[side], h, duration)
    return data


def _add(values: Sample, h: int, value: float | None) -> None:
    if value is not None:
        values.add(h, value)


def _series(name: str, sample: Sample, color: str) -> Series:
    return Series(name, sample.values, color, count=sample.seen)


def _sample_note(samples: Iterable[Sample]) -> str:
    """The caption's sentence for a plot drawn from samples (none when every value is drawn)."""
    sampled = [s for s in samples if s.sampled]
    if not sampled:
        return ""
    return (f" Drawn from a sample of {sampled[0].size:,} of each series' values (uniform, by pair, the same "
            "every time for a run): its curves and medians are within about half a percent of the exact ones.")


def _outcomes(summary: Summary) -> Plot:
    title = ("Outcomes: the candidate against the noise floor" if summary.noise
             else "Outcomes: the candidate against the baseline")
    candidate = summary.comparable_outcomes
    series = [_shares("candidate vs baseline", SIDE_COLORS[Side.CANDIDATE], candidate)]
    total = sum(candidate.values())
    caption = f"Outcomes of the {total:,} comparable pairs (deterministic decoding), as shares of them: "
    if summary.noise:
        series.append(_shares("replica vs baseline (noise floor)", SIDE_COLORS[Side.REPLICA], summary.noise))
        caption += ("the candidate against the baseline, beside the replica against the baseline (the noise "
                    f"floor, {sum(summary.noise.values()):,} pairs). Bars above the grey ones are the change.")
    else:
        caption += ("the candidate against the baseline. No replica in this run: there is no noise floor to "
                    "compare with.")
    svg = svgplot.grouped_bars(title, OUTCOMES, series, plot_id="plot-outcomes", percent=True,
                               y_label="share of pairs") if total else svgplot.no_data(title, "plot-outcomes")
    return Plot("plot-outcomes", title, svg, caption if total else "No comparable pairs in this run.")


def _shares(name: str, color: str, counts: dict[str, int]) -> Series:
    total = sum(counts.values()) or 1
    tips = [f"{name} · {o}: {counts.get(o, 0) / total:.1%} ({counts.get(o, 0):,} of {total:,})" for o in OUTCOMES]
    return Series(name, [counts.get(o, 0) / total for o in OUTCOMES], color, tips)


def _similarity(data: _Columns, near: float) -> Plot:
    title = "Similarity of the changed pairs"
    series = [_series("candidate vs baseline", data.similarity, SIDE_COLORS[Side.CANDIDATE])]
    if data.noise_similarity:
        series.append(_series("replica vs baseline", data.noise_similarity, SIDE_COLORS[Side.REPLICA]))
    svg = svgplot.cdf(title, series, plot_id="plot-similarity", marker=Marker(near, f"near ≥ {near:g}"),
                      x_label="similarity to the baseline's answer (1: the same)")
    caption = (f"Cumulative share of the {data.similarity.seen:,} comparable pairs changed in substance (near or "
               f"divergent) by their answers' similarity; at or above the near threshold ({near:g}) a pair is near, "
               "below it divergent.")
    if data.noise_similarity:
        caption += f" Grey: the replica's {data.noise_similarity.seen:,} such pairs, the noise floor."
    return Plot("plot-similarity", title, svg, caption + _sample_note((data.similarity, data.noise_similarity)))


def _divergence(data: _Columns) -> Plot:
    title = "Where the changed answers first differ"
    counts, unit = (data.first_token, "token") if data.first_token else (data.first_char, "character")
    middle = counts.median()
    about = "" if counts.exact else "≈ "
    svg = svgplot.histogram_counts(
        title, "candidate vs baseline", SIDE_COLORS[Side.CANDIDATE], counts.counts, plot_id="plot-divergence",
        integer=True, x_label=f"first differing {unit} (from 0)",
        ends=None if counts.exact or counts.low is None or counts.high is None else (counts.low, counts.high),
        marker=Marker(middle, f"median {about}{middle:,.0f}") if middle is not None else None)
    caption = (f"The position of the first differing {unit} in the {counts.seen:,} comparable pairs changed in "
               "substance (near or divergent): early means the answers part at once, late that they share a start.")
    if unit == "character":
        caption += " No pair's tokens are known (no logprobs were asked for), so positions are in characters."
    if not counts.exact:
        caption += f" The median is known to {counts.block:,} {unit}s (the positions are counted in blocks)."
    return Plot("plot-divergence", title, svg, caption)


def _timing(plot_id: str, title: str, by_side: dict[Side, Sample], what: str, note: str) -> Plot:
    series = [_series(side.value, values, SIDE_COLORS[side]) for side, values in by_side.items() if values]
    svg = svgplot.cdf(title, series, plot_id=plot_id, x_label="seconds", y_label="share of answers", zero=True)
    medians = "; ".join(f"{side.value} {median(values.values):.3g} s" for side, values in by_side.items() if values)
    caption = (f"Cumulative share of each side's successful answers by {what}, in seconds"
               + (f" (medians: {medians})." if medians else ".") + _sample_note(by_side.values()) + note)
    return Plot(plot_id, title, svg, caption)


def _categories(summary: Summary, note: str) -> Plot:
    title = "Outcomes by category"
    rows = sorted(summary.categories, key=lambda row: (-row["pairs"], row["category"]))
    shown = rows[:MAX_CATEGORIES]
    parts = [Series(o, [row.get(o, 0) for row in shown], OUTCOME_COLORS[o], _tips(shown, o)) for o in OUTCOMES]
    svg = svgplot.stacked_bars(title, [row["category"] for row in shown], parts, plot_id="plot-categories",
                               notes=[f"{row['pairs']:,}" for row in shown])
    caption = "Each category's stored pairs by outcome, as shares of them; at the right, its number of pairs."
    if len(rows) > len(shown):
        caption += f" The {len(shown)} largest of {len(rows):,} categories are shown."
    return Plot("plot-categories", title, svg, caption + note)


def _tips(rows: Sequence[dict[str, object]], outcome: str) -> list[str]:
    return [f"{outcome}: {row.get(outcome, 0):,} of {row['pairs']:,}" for row in rows]


def _agreement(summary: Summary) -> Plot:
    title = "Token agreement per pair"
    tallies = [(name, color, tally) for name, color, tally in (
        ("candidate", SIDE_COLORS[Side.CANDIDATE], summary.token_agreement),
        ("replica (noise floor)", SIDE_COLORS[Side.REPLICA], summary.noise_token_agreement))
        if tally and tally.get("pairs")]
    bins = tallies[0][2]["distribution"]
    series = [_bin_shares(name, color, tally) for name, color, tally in tallies]
    svg = svgplot.grouped_bars(title, [_bin_label(b) for b in bins], series, plot_id="plot-token-agreement",
                               percent=True, y_label="share of pairs")
    pooled = ", ".join(f"{name} {tally['pooled']:.2%} of {tally['tokens']:,} tokens" for name, _, tally in tallies)
    caption = ("Scored pairs by their token agreement: the share of the baseline's answer tokens that the side, "
               f"fed the same text, also ranks first; finer near 100 %, where quantization lives. Pooled: {pooled}.")
    return Plot("plot-token-agreement", title, svg, caption)


def _bin_shares(name: str, color: str, tally: dict[str, Any]) -> Series:
    counts = [int(b["pairs"]) for b in tally["distribution"]]
    total = sum(counts) or 1
    return Series(name, [n / total for n in counts], color,
                  [f"{name} · {_bin_label(b)}: {n / total:.1%} ({n:,} of {total:,})"
                   for b, n in zip(tally["distribution"], counts, strict=True)])


def _bin_label(row: dict[str, Any]) -> str:
    """A bin of shadowdiff.statistics.scorestats.EDGES: ``[from, to)``, the last exactly 1."""
    if row["from"] == row["to"]:
        return f"exactly {row['to']:.0%}"
    return f"{row['from'] * 100:g}–{row['to'] * 100:g}%"

"""The SVG charts: well-formed, inert, escaped, drawn to scale, small, and calm on odd data.

Each chart is parsed as XML (as a browser parses inline SVG in HTML it tolerates less, not
more, than this checks) and its geometry read back from the elements' attributes.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from shadowdiff.report.svg import (
    Marker,
    Series,
    cdf,
    ecdf_points,
    format_ticks,
    grouped_bars,
    histogram,
    nice_ticks,
    no_data,
    stacked_bars,
)

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert('x')</script> & \"quoted\" </svg><img src=x onerror=alert(1)> \x01\x00 \ud800"
LONG = "a category name far longer than any label could show in the room a chart gives it"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    return root


def series(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-series", ""): g for g in root.iter(f"{NS}g") if g.get("data-series") is not None}


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def all_charts(label: str = "label") -> list[str]:
    return [
        grouped_bars(label, [label, "b"], [Series(label, [1.0, 2.0], "#4c72b0")], plot_id="p1", y_label=label),
        stacked_bars(label, [label, "b"], [Series(label, [1.0, 2.0], "#4c72b0"), Series("x", [3.0, None], "#888")],
                     plot_id="p2", notes=[label, "2"]),
        cdf(label, [Series(label, [0.5, 0.7, None, 0.9], "#dd8452")], plot_id="p3", marker=Marker(0.8, label),
            x_label=label),
        histogram(label, Series(label, [1, 2, 2, 30], "#dd8452"), plot_id="p4", marker=Marker(2, label),
                  x_label=label, integer=True),
        no_data(label, "p5", label),
    ]


def test_every_chart_stands_alone_and_is_accessible() -> None:
    for i, svg in enumerate(all_charts(), 1):
        root = parse(svg)
        assert root.get("id") == f"p{i}"
        assert root.get("role") == "img" and root.get("aria-label") == "label"
        assert root.get("width") == "100%" and re.fullmatch(r"0 0 640 [\d.]+", root.get("viewBox", ""))
        assert root[0].tag == f"{NS}title" and root[0].text == "label"
        tags = {e.tag.removeprefix(NS) for e in root.iter()}
        assert not tags & {"script", "foreignObject", "image", "a", "style", "use", "link", "iframe"}, tags
        attributes = [name for e in root.iter() for name in e.attrib]
        assert not [a for a in attributes if a.startswith("on") or "href" in a]
        assert "url(" not in svg and "@import" not in svg
        assert re.findall(r"https?://[^\"]*", svg) == ["http://www.w3.org/2000/svg"]


def test_hostile_text_is_escaped_everywhere() -> None:
    # control characters and lone surrogates as their escapes (shadowdiff.answers.invisible.safe_text)
    shown = HOSTILE.replace("\x01", "\\x01").replace("\x00", "\\x00").replace("\ud800", "\\ud800")
    for svg in all_charts(HOSTILE):
        svg.encode("utf-8")   # no lone surrogate left
        root = parse(svg)     # well-formed despite the label's markup and control characters
        assert "<script" not in svg and "<img" not in svg and "</svg><" not in svg
        assert {e.tag.removeprefix(NS) for e in root.iter()} <= {"svg", "title", "text", "g", "rect", "path"}
        assert root.get("aria-label") == shown and root[0].text == shown
        # the label comes back as text (or, cut to fit, in full in its tooltip)
        assert any(shown in "".join(t.itertext()) or t.findtext(f"{NS}title") == shown
                   for t in root.iter(f"{NS}text")), svg


def test_long_labels_are_cut_with_the_whole_text_in_a_tooltip() -> None:
    root = parse(stacked_bars("t", [LONG], [Series("a", [1.0], "#888")]))
    label = next(t for t in root.iter(f"{NS}text") if t.findtext(f"{NS}title") == LONG)
    assert label.text and label.text.endswith("…") and len(label.text) < len(LONG)
    assert LONG.startswith(label.text[:-1])


def test_bars_are_drawn_to_scale_from_zero() -> None:
    root = parse(grouped_bars("t", ["a", "b", "c"], [Series("s", [1.0, 2.0, 4.0], "#888"),
                                                     Series("r", [4.0, 0.0, None], "#444")]))
    drawn = series(root)
    assert list(drawn) == ["s", "r"]
    heights = [float(r.get("height", "")) for r in drawn["s"].iter(f"{NS}rect")]
    assert len(heights) == 3 and heights[0] > 0
    assert heights[1] == pytest.approx(2 * heights[0], abs=0.2)
    assert heights[2] == pytest.approx(4 * heights[0], abs=0.2)
    bottoms = {round(float(r.get("y", "")) + float(r.get("height", "")), 1) for r in root.iter(f"{NS}rect")
               if r.get("rx") is None}
    assert len(bottoms) == 1   # every bar stands on the zero line, missing values at 0
    assert [float(r.get("height", "")) for r in drawn["r"].iter(f"{NS}rect")][1:] == [0.0, 0.0]


def test_a_bar_tooltip_can_be_given() -> None:
    root = parse(grouped_bars("t", ["a"], [Series("s", [0.25], "#888", ["25 % (1 of 4)"])], percent=True))
    assert [r.findtext(f"{NS}title") for r in root.iter(f"{NS}rect") if r.get("rx") is None] == ["25 % (1 of 4)"]
    assert {"0%", "5%", "25%"} <= set(texts(root))


def test_stacked_bars_fill_each_row_in_shares_and_leave_out_zeros() -> None:
    rows = ["one", "two"]
    parts = [Series("a", [1, 0], "#111"), Series("b", [3, 5], "#222")]
    root = parse(stacked_bars("t", rows, parts, notes=["4", "5"]))
    drawn = series(root)

    def widths(name: str) -> list[int]:
        return [int(re.search(r"h(-?\d+)v", p.get("d", "")).group(1)) for p in drawn[name].iter(f"{NS}path")]  # type: ignore[union-attr]

    assert len(widths("a")) == 1   # the zero is no bar
    full = widths("b")[1]
    assert widths("a")[0] + widths("b")[0] == full
    assert widths("b")[0] == pytest.approx(full * 3 / 4, abs=1)
    assert {"4", "5", "0%", "100%"} <= set(texts(root))


def test_stacked_bars_in_counts() -> None:
    root = parse(stacked_bars("t", ["r"], [Series("a", [2_000_000], "#111")], shares=False))
    assert {"0", "0.5M", "2.0M"} <= set(texts(root))


def test_a_series_must_match_its_labels() -> None:
    with pytest.raises(ValueError, match="2 values for 3 labels"):
        grouped_bars("t", ["a", "b", "c"], [Series("s", [1, 2], "#888")])


@given(st.floats(-1e9, 1e9), st.floats(0, 1e9), st.integers(2, 10))
@example(0.0, 5e-324, 2)      # a subnormal span: the step underflowed to 0
def test_ticks_are_round_and_cover_the_range(lo: float, span: float, count: int) -> None:
    assume(span == 0 or span > abs(lo) * 1e-6)   # (below, the floats' own steps show)
    hi = lo + span
    ticks = nice_ticks(lo, hi, count)
    step = (ticks[-1] - ticks[0]) / (len(ticks) - 1)
    assert ticks[0] <= lo + step * 1e-6 and ticks[-1] >= hi - step * 1e-6
    assert 2 <= len(ticks) <= 2 * count + 3
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-4
    for t in ticks:   # each a multiple of the step
        assert abs(t / step - round(t / step)) < 1e-4 * max(1.0, abs(t / step))


def test_tick_labels() -> None:
    assert format_ticks(nice_ticks(0, 1)) == ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert format_ticks(nice_ticks(0, 1), percent=True) == ["0%", "20%", "40%", "60%", "80%", "100%"]
    assert format_ticks(nice_ticks(0, 0.01), percent=True)[:2] == ["0%", "0.2%"]
    assert format_ticks(nice_ticks(0, 8_000)) == ["0", "2,000", "4,000", "6,000", "8,000"]
    assert format_ticks(nice_ticks(0, 45_000)) == ["0", "10k", "20k", "30k", "40k", "50k"]
    assert format_ticks(nice_ticks(0, 3_500_000_000)) == ["0", "1G", "2G", "3G", "4G"]
    assert format_ticks(nice_ticks(-1, 1)) == ["-1.0", "-0.5", "0", "0.5", "1.0"]
    assert nice_ticks(0, 1, integer=True) == [0, 1] and nice_ticks(0, 3, integer=True) == [0, 1, 2, 3]


def test_equal_ends_are_widened_around_the_value() -> None:
    assert nice_ticks(5, 5)[0] < 5 < nice_ticks(5, 5)[-1]
    assert nice_ticks(0, 0)[0] < 0 < nice_ticks(0, 0)[-1]


def test_the_cdf_is_exact_on_few_values() -> None:
    assert ecdf_points([1.0, 2.0, 2.0, 4.0]) == [(1.0, 0.25), (2.0, 0.75), (4.0, 1.0)]


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=3000), st.integers(5, 300))
def test_the_cdf_is_downsampled_to_points_on_the_exact_curve(values: list[float], limit: int) -> None:
    ordered = sorted(values)
    points = ecdf_points(ordered, limit)
    assert len(points) <= limit and points[-1] == (ordered[-1], 1.0)
    for x, share in points:
        assert share == bisect.bisect_right(ordered, x) / len(ordered)
    # the drawn steps hold each share until the next point: the exact curve just before
    # that point is at most 1/limit higher
    for (_, held), (x, _) in zip([(None, 0.0), *points], points, strict=False):
        assert bisect.bisect_left(ordered, x) / len(ordered) - held <= 1 / limit + 1e-12


def test_a_cdf_of_ten_thousand_values_stays_small() -> None:
    values = [math.sin(i) * 1000 + i for i in range(10_000)]
    svg = cdf("t", [Series("a", values, "#4c72b0"), Series("b", values[::-1], "#dd8452"),
                    Series("c", [v * 2 for v in values], "#888")], max_points=200)
    root = parse(svg)
    for g in series(root).values():
        moves = re.findall(r"[hv]", g.find(f"{NS}path").get("d", ""))  # type: ignore[union-attr]
        assert len(moves) <= 2 * 201
    assert len(svg.encode()) < 8_000
    assert "a (n=10,000)" in texts(root)


def test_the_marker_stands_at_its_value() -> None:
    root = parse(cdf("t", [Series("a", [0.2, 0.5, 0.95], "#888")], marker=Marker(0.9, "near ≥ 0.9")))
    marker = next(g for g in root.iter(f"{NS}g") if g.get("data-marker") is not None)
    assert marker.get("data-marker") == "0.9" and "near ≥ 0.9" in texts(marker)
    at = float(re.match(r"M([\d.]+) ", marker.find(f"{NS}path").get("d", "")).group(1))  # type: ignore[union-attr]
    ticks = {t.text: float(t.get("x", "")) for t in root.iter(f"{NS}text") if t.text in ("0.8", "1.0")}
    assert at == pytest.approx(ticks["0.8"] + (ticks["1.0"] - ticks["0.8"]) / 2, abs=0.2)


def test_the_x_axis_can_start_at_zero() -> None:
    assert "0.0" not in texts(parse(cdf("t", [Series("a", [3.0, 3.5], "#888")])))
    assert "0" in texts(parse(cdf("t", [Series("a", [3.0, 3.5], "#888")], zero=True)))


def test_histogram_counts_every_value_once_in_whole_bins() -> None:
    values = [0, 0, 1, 7, 19, 20, 250, None, math.nan]
    root = parse(histogram("t", Series("s", values, "#888"), integer=True, max_bins=10))
    bars = list(series(root)["s"].iter(f"{NS}rect"))
    counts = [int(b.findtext(f"{NS}title", "").rsplit(": ", 1)[1]) for b in bars]
    assert sum(counts) == 7
    edges = [(float(b.get("data-from", "")), float(b.get("data-to", ""))) for b in bars]
    assert all(b - a == edges[0][1] - edges[0][0] >= 1 and a == int(a) for a, b in edges)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(edges))


def test_histogram_of_huge_counts_and_wide_values() -> None:
    root = parse(histogram("t", Series("s", [1e12] * 3 + [0.0], "#888")))
    assert sum(int(b.findtext(f"{NS}title", "").rsplit(": ", 1)[1]) for b in root.iter(f"{NS}rect")) == 4
    assert not [t for t in texts(root) if "e+" in t]   # no scientific notation on the axes


@pytest.mark.parametrize("values", [[], [None], [math.nan, math.inf, -math.inf]])
def test_nothing_to_draw_says_so(values: list[float | None]) -> None:
    for svg in (cdf("t", [Series("s", values, "#888")], plot_id="x"),
                histogram("t", Series("s", values, "#888"), plot_id="x"),
                grouped_bars("t", ["a"] * len(values), [Series("s", values, "#888")], plot_id="x"),
                stacked_bars("t", ["a"] * len(values), [Series("s", values, "#888")], plot_id="x"),
                cdf("t", [], plot_id="x")):
        root = parse(svg)
        assert root.get("id") == "x" and texts(root) == ["no data"]


@pytest.mark.parametrize("values", [[0.5], [0.5] * 100, [7.0, 7.0]])
def test_one_value_or_all_equal_draws(values: list[float]) -> None:
    root = parse(cdf("t", [Series("s", values, "#888")]))
    assert "s (n=" + f"{len(values):,})" in texts(root)
    path = series(root)["s"].find(f"{NS}path").get("d", "")  # type: ignore[union-attr]
    assert path.count("v") == 1   # one step, from 0 to all of them
    root = parse(histogram("t", Series("s", values, "#888")))
    bars = list(root.iter(f"{NS}rect"))
    assert len(bars) == 1 and bars[0].findtext(f"{NS}title", "").endswith(f": {len(values)}")
    if len(values) == 1:   # counts have whole ticks
        assert texts(root)[:2] == ["0", "1"]
    assert len(series(parse(grouped_bars("t", ["a"], [Series("s", values[:1], "#888")])))["s"]) == 1

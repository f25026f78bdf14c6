"""Small inline SVG charts: grouped bars, stacked horizontal bars, step CDFs, histograms.

Our own, not a plotting library: matplotlib is heavy and writes large SVG,
pygal needs JavaScript. Each function returns one ``<svg>`` element as a string that
stands alone in a page: no script, no link, no external font, no style sheet; sized by
its ``viewBox`` with ``width="100%"``; ``role="img"`` with an ``aria-label`` and a
``<title>``; its ``id`` attribute is the ``plot_id`` given.

Safe to insert as markup (``markupsafe.Markup``, Jinja's ``| safe``): every text in it -
titles, series and category names, which come from logs nobody vetted - is escaped,
its invisible characters written as escapes (``\\u202e``: shadowdiff.answers.invisible), and
the characters XML cannot hold are replaced with U+FFFD, so the string also parses
as XML. Long labels are cut with an ellipsis, the whole text in a ``<title>`` tooltip.

Values that are None, NaN or infinite are skipped. A chart with nothing to draw is a
small SVG that says "no data" (``no_data``), never None: a page's layout and element ids
do not depend on the data.
"""

from __future__ import annotations

import bisect
import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shadowdiff.answers.invisible import safe_text

WIDTH, HEIGHT = 640, 260
_FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
_INK, _MUTED, _GRID, _AXIS = "#333", "#666", "#e8e8e8", "#999"
_CHAR = 6.6          # the width of a character of 12px text, roughly: for cutting labels
_LEFT, _RIGHT, _TOP, _BOTTOM = 60, 16, 30, 40   # the plot area's margins
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Series:
    """Values with a name and a colour. ``tips``: a tooltip per value (bars), instead of
    the name and the value. ``count``: how many values the series stands for when
    ``values`` is a sample of them (a CDF's legend says it)."""

    name: str
    values: Sequence[float | None]
    color: str
    tips: Sequence[str] | None = None
    count: int | None = None


@dataclass(frozen=True)
class Marker:
    """A labelled vertical line at ``x`` (a threshold, a median)."""

    x: float
    label: str


def esc(text: object) -> str:
    """Text (or an attribute's value) as XML: escaped, characters XML cannot hold replaced."""
    return html.escape(_NOT_XML.sub("\ufffd", safe_text(str(text))), quote=True)


def finite(values: Iterable[float | None]) -> list[float]:
    """The values that are numbers: None, NaN and infinities left out."""
    return [float(v) for v in values if v is not None and math.isfinite(v)]


# -- ticks -----------------------------------------------------------------------------

def nice_step(span: float, count: int = 5) -> float:
    """The 1-2-5 step (1, 2, 5 times a power of ten) that cuts ``span`` in at most about ``count``."""
    raw = span / max(count, 1) if span > 0 else 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))


def nice_ticks(lo: float, hi: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """Round ticks covering ``lo``..``hi``: multiples of a 1-2-5 step (of at least 1 with
    ``integer``: counts), the first at or below ``lo``, the last at or above ``hi``. Equal
    ends (or ends too close to tell apart) are widened around them."""
    lo, hi = min(lo, hi), max(lo, hi)
    # ends too close for round ticks between them (a subnormal span makes a step of 0) are
    # drawn as equal ends; ends that close to 0 are drawn about 0
    if hi - lo <= max(abs(lo), abs(hi), 1e-100) * 1e-12:
        pad = max(abs(lo), abs(hi)) * 0.1
        pad = pad if pad > 1e-100 else 1.0
        lo, hi = lo - pad, hi + pad
    step = max(nice_step(hi - lo, count), 1.0) if integer else nice_step(hi - lo, count)
    digits = _decimals(step)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, digits) + 0.0 for i in range(first, last + 1)]


def format_ticks(ticks: Sequence[float], percent: bool = False) -> list[str]:
    """Tick labels with as many decimals as the step needs; large numbers in k, M or G."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    scale, suffix = (100.0, "%") if percent else (1.0, "")
    biggest = max(abs(t) for t in ticks)
    # from 10,000 on (four digits read well as they are)
    for above, size, unit in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if not percent and biggest >= above:
            scale, suffix = 1 / size, unit
            break
    digits = _decimals(step * scale)
    return [f"{t * scale:,.{digits}f}{suffix}" if t else "0" + suffix[:percent] for t in ticks]


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))


def value_text(value: float, percent: bool = False) -> str:
    """A value for a tooltip: a share as a percentage, a whole number with separators."""
    if percent:
        return f"{value:.1%}"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.3g}"


# -- pieces ----------------------------------------------------------------------------

class _Scale:
    """A linear map from a domain to pixels."""

    def __init__(self, lo: float, hi: float, start: float, end: float) -> None:
        self.lo, self.span, self.start, self.end = lo, (hi - lo) or 1.0, start, end

    def __call__(self, value: float) -> float:
        return self.start + (value - self.lo) / self.span * (self.end - self.start)


def _n(value: float) -> str:
    """A coordinate, to a tenth of a pixel (the SVG stays small)."""
    return f"{value:.1f}".removesuffix(".0")


def _text(x: float, y: float, text: str, limit: int | None = None, attrs: str = "") -> str:
    """A ``<text>``, cut to ``limit`` characters with an ellipsis, the whole in its tooltip."""
    shown = text if limit is None or len(text) <= limit else text[:max(limit - 1, 1)].rstrip() + "…"
    tip = f"<title>{esc(text)}</title>" if shown != text else ""
    return f'<text x="{_n(x)}" y="{_n(y)}"{attrs}>{esc(shown)}{tip}</text>'


def _svg(title: str, plot_id: str | None, height: float, body: Iterable[str]) -> str:
    ident = f' id="{esc(plot_id)}"' if plot_id else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg"{ident} viewBox="0 0 {WIDTH} {_n(height)}" width="100%" '
            f'role="img" aria-label="{esc(title)}" font-family="{_FONT}" font-size="12" fill="{_INK}">'
            f'<title>{esc(title)}</title>{"".join(body)}</svg>')


def no_data(title: str, plot_id: str | None = None, message: str = "no data") -> str:
    """A small chart that says there is nothing to draw."""
    return _svg(title, plot_id, 60, [_text(WIDTH / 2, 34, message, attrs=f' text-anchor="middle" fill="{_MUTED}"')])


def _legend(items: Sequence[tuple[str, str]], y: float = 14) -> str:
    """Swatches and names in a row at the top, each name cut to its share of the width."""
    if not items:
        return ""
    room = (WIDTH - _LEFT - _RIGHT) / len(items)
    limit = max(int((room - 24) / _CHAR), 4)
    out, x = [], float(_LEFT)
    for name, color in items:
        shown = min(len(name), limit)
        out.append(f'<rect x="{_n(x)}" y="{_n(y - 9)}" width="10" height="10" rx="2" fill="{esc(color)}"/>'
                   + _text(x + 14, y, name, limit))
        x += 14 + shown * _CHAR + 18
    return "".join(out)


def _y_axis(ticks: Sequence[float], y: _Scale, left: float, right: float, percent: bool, label: str) -> str:
    """Horizontal gridlines with their labels at the left, and the axis's name."""
    grid = "".join(f"M{_n(left)} {_n(y(t))}H{_n(right)}" for t in ticks)
    labels = "".join(_text(left - 6, y(t) + 4, text) for t, text in zip(ticks, format_ticks(ticks, percent),
                                                                        strict=True))
    name = (f'<text transform="translate(11 {_n((y.start + y.end) / 2)}) rotate(-90)" text-anchor="middle" '
            f'font-size="11" fill="{_MUTED}">'
            f'{esc(label)}</text>' if label else "")
    return (f'<path d="{grid}" stroke="{_GRID}" fill="none" shape-rendering="crispEdges"/>'
            f'<g text-anchor="end" fill="{_MUTED}">{labels}</g>{name}')


def _x_axis(ticks: Sequence[float], x: _Scale, bottom: float, percent: bool, label: str,
            grid_top: float | None = None) -> str:
    """Tick marks and labels below the plot, the axis's name, and light vertical
    gridlines up to ``grid_top`` (none without)."""
    marks = "".join(f"M{_n(x(t))} {_n(bottom)}v4" for t in ticks)
    grid = "".join(f"M{_n(x(t))} {_n(grid_top)}V{_n(bottom)}" for t in ticks) if grid_top is not None else ""
    labels = "".join(_text(x(t), bottom + 16, text) for t, text in zip(ticks, format_ticks(ticks, percent),
                                                                       strict=True))
    name = _text((x.start + x.end) / 2, bottom + 32, label) if label else ""
    return ((f'<path d="{grid}" stroke="{_GRID}" fill="none" shape-rendering="crispEdges"/>' if grid else "")
            + f'<path d="M{_n(x.start)} {_n(bottom)}H{_n(x.end)}{marks}" stroke="{_AXIS}" fill="none" '
            f'shape-rendering="crispEdges"/><g text-anchor="middle" fill="{_MUTED}">{labels}{name}</g>')


def _marker(marker: Marker, x: _Scale, top: float, bottom: float) -> str:
    at = x(marker.x)
    anchor, dx = ("end", -4) if at > x.start + (x.end - x.start) * 0.75 else ("start", 4)
    return (f'<g data-marker="{esc(marker.x)}"><path d="M{_n(at)} {_n(top)}V{_n(bottom)}" stroke="{_INK}" '
            f'stroke-dasharray="4 3" fill="none"/>'
            + _text(at + dx, top + 10, marker.label, 40, f' text-anchor="{anchor}"') + "</g>")


# -- charts ----------------------------------------------------------------------------

def grouped_bars(title: str, groups: Sequence[str], series: Sequence[Series], *, plot_id: str | None = None,
                 percent: bool = False, y_label: str = "", height: float = HEIGHT) -> str:
    """Vertical bars, one per series side by side in each group; a series' values follow
    ``groups``. Each series is a ``<g data-series=name>`` holding one ``<rect>`` per group."""
    _check_lengths(groups, series)
    values = [[v if v is not None and math.isfinite(v) else 0.0 for v in s.values] for s in series]
    if not groups or not finite(v for s in series for v in s.values):
        return no_data(title, plot_id)
    top, bottom = _TOP, height - _BOTTOM + 12
    ticks = nice_ticks(min(0.0, *map(min, values)), max(0.0, *map(max, values)) or 1.0)
    y = _Scale(ticks[0], ticks[-1], bottom, top)
    band = (WIDTH - _LEFT - _RIGHT) / len(groups)
    width = band * 0.8 / len(series)
    body = [_y_axis(ticks, y, _LEFT, WIDTH - _RIGHT, percent, y_label), _legend([(s.name, s.color) for s in series])]
    for k, (s, vals) in enumerate(zip(series, values, strict=True)):
        rects = []
        for i, v in enumerate(vals):
            tip = s.tips[i] if s.tips else f"{s.name} · {groups[i]}: {value_text(v, percent)}"
            y0, y1 = sorted((y(0.0), y(v)))
            rects.append(f'<rect x="{_n(_LEFT + band * (i + 0.1) + width * k)}" y="{_n(y0)}" width="{_n(width - 1)}" '
                         f'height="{_n(y1 - y0)}"><title>{esc(tip)}</title></rect>')
        body.append(f'<g data-series="{esc(s.name)}" fill="{esc(s.color)}">{"".join(rects)}</g>')
    limit = max(int(band / _CHAR), 3)
    labels = "".join(_text(_LEFT + band * (i + 0.5), bottom + 16, g, limit) for i, g in enumerate(groups))
    body.append(f'<path d="M{_LEFT} {_n(y(0.0))}H{WIDTH - _RIGHT}" stroke="{_AXIS}" shape-rendering="crispEdges"/>'
                f'<g text-anchor="middle">{labels}</g>')
    return _svg(title, plot_id, height, body)


def stacked_bars(title: str, rows: Sequence[str], parts: Sequence[Series], *, plot_id: str | None = None,
                 shares: bool = True, notes: Sequence[str] | None = None) -> str:
    """A horizontal bar per row, stacked from ``parts`` (each part's values follow
    ``rows``); with ``shares``, each bar is its row's parts over the row's total. ``notes``:
    a short text per row at the bar's right end (its count). Each part is a ``<g
    data-series=name>`` holding a bar (a ``<path>``, shorter than a ``<rect>``) for each row
    where it is not 0."""
    _check_lengths(rows, parts)
    values = [[v if v is not None and math.isfinite(v) and v > 0 else 0.0 for v in p.values] for p in parts]
    totals = [sum(column) for column in zip(*values, strict=True)] if values else []
    if not rows or not any(totals):
        return no_data(title, plot_id)
    label_room, note_room, row_height = 150, 56 if notes else 0, 22
    top = _TOP + 4
    bottom = top + row_height * len(rows)
    ticks = nice_ticks(0.0, 1.0) if shares else nice_ticks(0.0, max(totals), integer=True)
    x = _Scale(ticks[0], ticks[-1], label_room, WIDTH - _RIGHT - note_room)
    body = [_x_axis(ticks, x, bottom, shares, "", top), _legend([(p.name, p.color) for p in parts])]
    starts = [0.0] * len(rows)
    for p, vals in zip(parts, values, strict=True):
        rects = []
        for i, v in enumerate(vals):
            share = v / totals[i] if shares and totals[i] else v
            # whole pixels, each end rounded where it is: no gaps or overlaps between parts
            left, right = round(x(starts[i])), round(x(starts[i] + share))
            starts[i] += share
            if not v:
                continue
            tip = p.tips[i] if p.tips else f"{p.name}: {value_text(share, shares)}"
            rects.append(f'<path d="M{left} {top + row_height * i + 4}h{right - left}v{row_height - 8}'
                         f'h{left - right}z"><title>{esc(tip)}</title></path>')
        body.append(f'<g data-series="{esc(p.name)}" fill="{esc(p.color)}">{"".join(rects)}</g>')
    # right-aligned at the bars, so a label that runs long runs off the left edge: cut it at
    # the width of wide characters (capitals, digits), not of average ones
    limit = int((label_room - 8) / (_CHAR * 1.2))
    body.append('<g text-anchor="end">' + "".join(_text(label_room - 6, top + row_height * (i + 0.5) + 4, r, limit)
                                                  for i, r in enumerate(rows)) + "</g>")
    if notes:
        body.append(f'<g fill="{_MUTED}">' + "".join(_text(x.end + 6, top + row_height * (i + 0.5) + 4, n, 8)
                                                       for i, n in enumerate(notes)) + "</g>")
    return _svg(title, plot_id, bottom + 26, body)


def _check_lengths(labels: Sequence[str], series: Sequence[Series]) -> None:
    for s in series:
        if len(s.values) != len(labels) or (s.tips is not None and len(s.tips) != len(labels)):
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(labels)} labels")


def ecdf_points(ordered: Sequence[float], max_points: int = 200) -> list[tuple[float, float]]:
    """Points (x, share of the values at or below x) of the empirical CDF of ascending
    values: at each distinct value, or at no more than ``max_points`` of them, taken at
    evenly spaced shares (the drawn steps then lag the exact curve by under 1/max_points)."""
    n = len(ordered)
    ranks: Iterable[int] = range(n) if n <= max_points else (
        math.ceil(k * n / max_points) - 1 for k in range(1, max_points + 1))
    points: list[tuple[float, float]] = []
    for r in ranks:
        x = ordered[r]
        if points and points[-1][0] == x:
            continue
        points.append((x, bisect.bisect_right(ordered, x) / n))
    return points


def _steps(x0: float, y0: float, corners: Sequence[tuple[float, float]], x_end: float) -> str:
    """A path from (x0, y0) across then up to each corner, then across to ``x_end``, in
    relative moves of a tenth of a pixel (short numbers: a CDF's path is most of its size)."""
    at_x, at_y = round(x0, 1), round(y0, 1)
    out = [f"M{_n(at_x)} {_n(at_y)}"]
    for cx, cy in [*corners, (x_end, corners[-1][1] if corners else y0)]:
        cx, cy = round(cx, 1), round(cy, 1)
        out.append((f"h{_delta(cx - at_x)}" if cx != at_x else "") + (f"v{_delta(cy - at_y)}" if cy != at_y else ""))
        at_x, at_y = cx, cy
    return "".join(out)


def _delta(value: float) -> str:
    """A relative move: ``.5`` for 0.5, ``-.5`` for -0.5."""
    return _n(value).replace("0.", ".", 1) if abs(value) < 1 else _n(value)


def cdf(title: str, series: Sequence[Series], *, plot_id: str | None = None, marker: Marker | None = None,
        x_label: str = "", y_label: str = "share at or below", percent_x: bool = False, zero: bool = False,
        max_points: int = 200, height: float = HEIGHT) -> str:
    """Step CDFs of one or more series, each a ``<g data-series=name>`` holding one
    ``<path>`` of at most ``max_points`` steps. The x axis covers the values (and the
    marker, and 0 with ``zero``), rounded out to ticks."""
    drawn = [(s, sorted(finite(s.values))) for s in series]
    drawn = [(s, ordered) for s, ordered in drawn if ordered]
    if not drawn:
        return no_data(title, plot_id)
    ends = [v for _, ordered in drawn for v in (ordered[0], ordered[-1])]
    ends += [marker.x] if marker else []
    ends += [0.0] if zero else []
    top, bottom = _TOP, height - _BOTTOM
    xticks = nice_ticks(min(ends), max(ends))
    x = _Scale(xticks[0], xticks[-1], _LEFT, WIDTH - _RIGHT)
    yticks = nice_ticks(0.0, 1.0)
    y = _Scale(0.0, 1.0, bottom, top)
    body = [_y_axis(yticks, y, _LEFT, WIDTH - _RIGHT, True, y_label),
            _x_axis(xticks, x, bottom, percent_x, x_label, top),
            _legend([(f"{s.name} (n={_count(s, ordered):,})", s.color) for s, ordered in drawn])]
    for s, ordered in drawn:
        corners = [(x(v), y(share)) for v, share in ecdf_points(ordered, max_points)]
        median = value_text(ordered[len(ordered) // 2], percent_x)
        body.append(f'<g data-series="{esc(s.name)}"><title>{esc(s.name)}: {_count(s, ordered):,}, median {median}'
                    f'{_sampled(s, ordered)}</title>'
                    f'<path d="{_steps(x.start, bottom, corners, x.end)}" stroke="{esc(s.color)}" '
                    f'stroke-width="2" fill="none" stroke-linejoin="round"/></g>')
    if marker:
        body.append(_marker(marker, x, top, bottom))
    return _svg(title, plot_id, height, body)


def _count(series: Series, ordered: Sequence[float]) -> int:
    return len(ordered) if series.count is None else series.count


def _sampled(series: Series, ordered: Sequence[float]) -> str:
    return f" (drawn from a sample of {len(ordered):,})" if _count(series, ordered) > len(ordered) else ""


def histogram(title: str, series: Series, *, plot_id: str | None = None, marker: Marker | None = None,
              x_label: str = "", y_label: str = "pairs", integer: bool = False, max_bins: int = 30,
              height: float = HEIGHT) -> str:
    """Counts of the values in at most about ``max_bins`` bins of a 1-2-5 width (whole
    numbers of at least 1 with ``integer``), as a ``<g data-series=name>`` holding one
    ``<rect data-from data-to>`` per non-empty bin, ``[from, to)``."""
    counts: dict[float, int] = {}
    for v in finite(series.values):
        counts[v] = counts.get(v, 0) + 1
    return histogram_counts(title, series.name, series.color, counts, plot_id=plot_id, marker=marker,
                            x_label=x_label, y_label=y_label, integer=integer, max_bins=max_bins, height=height)


def histogram_counts(title: str, name: str, color: str, counts: Mapping[float, int], *, plot_id: str | None = None,
                     marker: Marker | None = None, x_label: str = "", y_label: str = "pairs",
                     integer: bool = False, max_bins: int = 30, height: float = HEIGHT,
                     ends: tuple[float, float] | None = None) -> str:
    """``histogram`` of values given as counts (value: how many times it was seen), as
    shadowdiff.report.sampling.Counts keeps them; ``ends``: the lowest and highest value,
    when the counts' keys are the starts of blocks of values (of a width the bins'
    is a multiple of)."""
    counted = {v: n for v, n in counts.items() if n > 0 and math.isfinite(v)}
    if not counted:
        return no_data(title, plot_id)
    lo, hi = ends or (min(counted), max(counted))
    width = nice_step(hi - lo, max_bins)
    width = max(width, 1.0) if integer else width
    start = math.floor(lo / width) * width
    bins = [0] * (int((hi - start) // width) + 1)
    for v, n in counted.items():
        bins[min(max(int((v - start) // width), 0), len(bins) - 1)] += n
    top, bottom = _TOP, height - _BOTTOM
    end = start + width * len(bins)
    xticks = nice_ticks(min(start, marker.x if marker else start), max(end, marker.x if marker else end), 6,
                        integer=integer)
    x = _Scale(xticks[0], xticks[-1], _LEFT, WIDTH - _RIGHT)
    yticks = nice_ticks(0.0, float(max(bins)), integer=True)
    y = _Scale(yticks[0], yticks[-1], bottom, top)
    rects = []
    for i, count in enumerate(bins):
        if not count:
            continue
        a, b = start + width * i, start + width * (i + 1)
        span = (f"{a:,.0f}" if width == 1 else f"{a:,.0f}–{b - 1:,.0f}") if integer else f"{a:,.4g} to {b:,.4g}"
        rects.append(f'<rect data-from="{a:g}" data-to="{b:g}" x="{_n(x(a) + 0.5)}" y="{_n(y(count))}" '
                     f'width="{_n(max(x(b) - x(a) - 1, 0.5))}" height="{_n(bottom - y(count))}">'
                     f'<title>{esc(span)}: {count:,}</title></rect>')
    body = [_y_axis(yticks, y, _LEFT, WIDTH - _RIGHT, False, y_label),
            _x_axis(xticks, x, bottom, False, x_label),
            f'<g data-series="{esc(name)}" fill="{esc(color)}">{"".join(rects)}</g>']
    if marker:
        body.append(_marker(marker, x, top, bottom))
    return _svg(title, plot_id, height, body)

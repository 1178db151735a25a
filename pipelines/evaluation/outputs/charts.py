"""Small inline-SVG charts for the HTML report: interval (forest) plots, histograms, trend lines.

Hand-drawn SVG instead of a plotting library: the report stays one self-contained, text-diffable
file with no fonts, images or scripts to fetch, and the same inputs draw the same bytes. The
`<svg>` elements carry no xmlns: inside HTML5 none is needed, and the report must hold no URL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

INK, MUTED, ACCENT, GRID = "#1f2933", "#7b8794", "#2f6fdf", "#e4e7eb"


@dataclass(frozen=True)
class Interval:
    label: str
    mean: float | None
    low: float | None
    high: float | None
    note: str = ""
    """Shown right of the axis, e.g. `n=48`."""


def value_range(
    values: Sequence[float | None], default: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """The default [0, 1] scale, widened to fit values outside it (e.g. a negative noise ΔF)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    low, high = default
    if finite:
        low, high = min(low, min(finite)), max(high, max(finite))
    return (low, high) if high > low else (low - 0.5, high + 0.5)


LABEL_CHAR_PX = 7
"""An upper bound on a character's width in the charts' 11-12 px sans-serif: labels are sized, never
clipped."""


def interval_chart(
    rows: Sequence[Interval],
    *,
    x_range: tuple[float, float] | None = None,
    plot_width: int = 300,
    label_width: int | None = None,
    note_width: int = 70,
    title: str = "",
) -> str:
    """One row per label: the mean as a dot, its confidence interval as a whisker. The label column
    is as wide as the longest label needs, so no metric name is cut."""
    row_h, top, axis_h = 22, 22 if title else 6, 24
    height = top + row_h * len(rows) + axis_h
    lo, hi = x_range or value_range([v for r in rows for v in (r.mean, r.low, r.high)])
    if label_width is None:
        label_width = max(120, LABEL_CHAR_PX * max((len(r.label) for r in rows), default=0) + 12)
    plot_w = plot_width
    width = label_width + plot_w + note_width
    x = _scale(lo, hi, label_width, label_width + plot_w)
    parts = [_svg_open(width, height, title)]
    if title:
        parts.append(_text(4, 15, title, weight="600"))
    parts += _x_axis(x, lo, hi, top, top + row_h * len(rows))
    for i, row in enumerate(rows):
        y = top + row_h * i + row_h / 2
        parts.append(_text(label_width - 6, y + 4, row.label, anchor="end"))
        if row.low is not None and row.high is not None:
            parts.append(
                f'<line x1="{x(row.low):.1f}" y1="{y:.1f}" x2="{x(row.high):.1f}" y2="{y:.1f}" '
                f'stroke="{ACCENT}" stroke-width="2"/>'
            )
            for end in (row.low, row.high):
                parts.append(
                    f'<line x1="{x(end):.1f}" y1="{y - 5:.1f}" x2="{x(end):.1f}" y2="{y + 5:.1f}" '
                    f'stroke="{ACCENT}" stroke-width="1.5"/>'
                )
        if row.mean is not None:
            parts.append(f'<circle cx="{x(row.mean):.1f}" cy="{y:.1f}" r="4" fill="{INK}"/>')
        else:
            parts.append(_text(label_width + 4, y + 4, "no ok scores", fill=MUTED))
        if row.note:
            parts.append(_text(label_width + plot_w + 6, y + 4, row.note, fill=MUTED))
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    values: Sequence[float],
    *,
    bins: int = 10,
    x_range: tuple[float, float] | None = None,
    width: int = 260,
    height: int = 130,
    title: str = "",
) -> str:
    """Counts of ok scores per bin; an empty chart says so instead of drawing nothing."""
    if not values:
        return _empty_chart(width, height, title, "no ok scores")
    lo, hi = x_range or value_range(values)
    top, bottom, left, right = 22, 22, 30, 8
    parts = _titled_svg(width, height, title)
    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=bins, range=(lo, hi))
    peak = max(int(counts.max()), 1)
    x = _scale(lo, hi, left, width - right)
    y = _scale(0, peak, height - bottom, top)
    for count, start, stop in zip(counts, edges[:-1], edges[1:]):
        if count:
            parts.append(
                f'<rect x="{x(start) + 1:.1f}" y="{y(count):.1f}" width="{x(stop) - x(start) - 2:.1f}" '
                f'height="{y(0) - y(count):.1f}" fill="{ACCENT}"><title>{start:.2f}–{stop:.2f}: '
                f"{int(count)}</title></rect>"
            )
    parts.append(
        f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" stroke="{MUTED}"/>'
    )
    parts += [
        _text(left, height - 6, f"{lo:g}", anchor="middle", fill=MUTED),
        _text(width - right, height - 6, f"{hi:g}", anchor="middle", fill=MUTED),
        _text(left - 4, y(peak) + 4, str(peak), anchor="end", fill=MUTED),
        _text(left - 4, y(0) + 4, "0", anchor="end", fill=MUTED),
        "</svg>",
    ]
    return "".join(parts)


def line_chart(
    points: Sequence[tuple[str, float | None]],
    *,
    y_range: tuple[float, float] | None = None,
    width: int = 260,
    height: int = 130,
    title: str = "",
) -> str:
    """Values over ordered labels (logical dates); a missing value breaks the line."""
    if not points:
        return _empty_chart(width, height, title, "no runs yet")
    top, bottom, left, right = 22, 22, 34, 10
    lo, hi = y_range or value_range([v for _, v in points])
    parts = _titled_svg(width, height, title)
    step = (width - left - right) / max(len(points) - 1, 1)
    y = _scale(lo, hi, height - bottom, top)
    for tick in (lo, (lo + hi) / 2, hi):
        parts.append(
            f'<line x1="{left}" y1="{y(tick):.1f}" x2="{width - right}" y2="{y(tick):.1f}" stroke="{GRID}"/>'
        )
        parts.append(_text(left - 4, y(tick) + 4, f"{tick:.2f}", anchor="end", fill=MUTED))
    segment: list[str] = []
    for i, (label, value) in enumerate(points):
        cx = left + step * i if len(points) > 1 else (left + width - right) / 2
        if value is None:
            parts.append(_polyline(segment))
            segment = []
            continue
        segment.append(f"{cx:.1f},{y(value):.1f}")
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{y(value):.1f}" r="3" fill="{INK}"><title>{escape(label)}: '
            f"{value:.3f}</title></circle>"
        )
    parts.append(_polyline(segment))
    if len(points) == 1:
        parts.append(
            _text((left + width - right) / 2, height - 6, points[0][0], anchor="middle", fill=MUTED)
        )
    else:
        parts += [
            _text(left, height - 6, points[0][0], fill=MUTED),
            _text(width - right, height - 6, points[-1][0], anchor="end", fill=MUTED),
        ]
    parts.append("</svg>")
    return "".join(parts)


def _titled_svg(width: int, height: int, title: str) -> list[str]:
    """The opening of a histogram or line chart: the `<svg>` element and the title at its top
    left."""
    return [_svg_open(width, height, title), _text(4, 15, title, weight="600")]


def _empty_chart(width: int, height: int, title: str, message: str) -> str:
    """A titled chart with nothing to draw, saying why in its middle."""
    parts = _titled_svg(width, height, title)
    parts += [_text(width / 2, height / 2, message, anchor="middle", fill=MUTED), "</svg>"]
    return "".join(parts)


def _scale(lo: float, hi: float, out_lo: float, out_hi: float):
    span = (hi - lo) or 1.0
    return lambda v: out_lo + (v - lo) / span * (out_hi - out_lo)


def _x_axis(x, lo: float, hi: float, y_top: float, y_bottom: float) -> list[str]:
    parts = []
    for tick in np.linspace(lo, hi, 5):
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="{y_top}" x2="{x(tick):.1f}" y2="{y_bottom}" stroke="{GRID}"/>'
        )
        parts.append(_text(x(tick), y_bottom + 16, f"{tick:.2f}", anchor="middle", fill=MUTED))
    return parts


def _polyline(points: list[str]) -> str:
    if len(points) < 2:
        return ""
    return f'<polyline points="{" ".join(points)}" fill="none" stroke="{ACCENT}" stroke-width="2"/>'


def _svg_open(width: int, height: int, title: str) -> str:
    return (
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">'
    )


def _text(
    x: float, y: float, text: str, *, anchor: str = "start", fill: str = INK, weight: str = "400"
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}" font-weight="{weight}">'
        f"{escape(text)}</text>"
    )

"""Plots for Mica Notebooks: columns of numbers a cell printed -> the text of an SVG.

The same columns give the same bytes on every machine and every run: every
coordinate and tick label is formatted with a fixed number of decimals, tick
steps are exact decimals (1, 2 or 5 times a power of ten), and nothing records
when or where the picture was drawn. A line plot joins each column's points in
order; a bar plot draws one bar per row, the first column naming the bars.
"""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 80, 24, 24, 56  # the margins around the plotting area
COLOURS = ("#1f5fa8", "#c8501e", "#2e8b3a", "#8a3fa0", "#a07a18")
KINDS = ("line", "bars")


class PlotError(ValueError):
    pass


def table(text: str, names: list[str]) -> dict[str, list[float]]:
    """The columns named, read from a table in printed text: the first line whose
    blank-separated words include every name is the header, and the lines after it
    with as many words, all numbers, are its rows."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        header = line.split()
        if not all(name in header for name in names):
            continue
        rows = []
        for row in lines[at + 1:]:
            fields = row.split()
            if len(fields) != len(header) or not all(is_finite_number(field) for field in fields):
                break
            rows.append([float(field) for field in fields])
        if not rows:
            raise PlotError(f"the header line '{line.strip()}' has no rows of numbers under it")
        return {name: [row[header.index(name)] for row in rows] for name in names}
    raise PlotError(f"the output has no header line naming {', '.join(names)}")


def is_finite_number(word: str) -> bool:
    """A word of the output that reads as a finite float: one field of a row to plot."""
    try:
        return math.isfinite(float(word))
    except ValueError:
        return False


def ticks(low: float, high: float) -> tuple[list[float], int]:
    """Tick values covering low..high, about five of them, and the decimals their labels need."""
    if high <= low:
        low, high = low - 1, high + 1
    for exponent in range(-12, 16):
        for mantissa in (1, 2, 5):
            step = float(f"{mantissa}e{exponent}")  # an exact decimal, whatever pow would round to
            if (high - low) / step <= 6:
                first, last = math.floor(low / step), math.ceil(high / step)
                return [k * step for k in range(first, last + 1)], max(0, -exponent)
    raise PlotError(f"the values span {low} to {high}, too wide to draw")


def svg(x_name: str, x: list[float], series: dict[str, list[float]], kind: str) -> str:
    """The SVG text of the series (name: values, one per x) against x, axes labelled."""
    if kind not in KINDS:
        raise PlotError(f"unknown plot kind '{kind}'; choose one of: {', '.join(KINDS)}")
    values = [v for column in series.values() for v in column]
    x_ticks, x_decimals = ticks(min(x), max(x))
    y_low = min(values + [0.0]) if kind == "bars" else min(values)
    y_ticks, y_decimals = ticks(y_low, max(values))
    if kind == "bars":
        spread = (max(x) - min(x)) / max(1, len(x) - 1) or 1.0  # room for half a bar at each end
        x_ticks, x_decimals = ticks(min(x) - spread / 2, max(x) + spread / 2)
    left, right, bottom, top = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(v: float) -> str:
        return f"{LEFT + (v - left) / (right - left) * width:.1f}"

    def py(v: float) -> str:
        return f"{TOP + height - (v - bottom) / (top - bottom) * height:.1f}"

    y_label = ", ".join(series)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
           f"<title>{escape(y_label)} by {escape(x_name)}</title>",
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    for v in y_ticks:
        out.append(f'<line x1="{LEFT}" y1="{py(v)}" x2="{WIDTH - RIGHT}" y2="{py(v)}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(v)}" text-anchor="end" dominant-baseline="middle">'
                   f"{v:.{y_decimals}f}</text>")
    for v in x_ticks:
        out.append(f'<line x1="{px(v)}" y1="{TOP + height}" x2="{px(v)}" y2="{TOP + height + 4}" stroke="black"/>')
        out.append(f'<text x="{px(v)}" y="{TOP + height + 18}" text-anchor="middle">{v:.{x_decimals}f}</text>')
    out.append(f'<polyline points="{LEFT},{TOP} {LEFT},{TOP + height} {WIDTH - RIGHT},{TOP + height}" '
               'fill="none" stroke="black"/>')
    for k, (name, column) in enumerate(series.items()):
        colour = COLOURS[k % len(COLOURS)]
        if kind == "line":
            points = " ".join(f"{px(a)},{py(b)}" for a, b in zip(x, column))
            out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        else:
            bar = width / (right - left) * spread * 0.8 / len(series)
            for a, b in zip(x, column):
                x0 = LEFT + (a - left) / (right - left) * width - bar * len(series) / 2 + bar * k
                y0, y1 = float(py(max(b, 0.0))), float(py(min(b, 0.0)))
                out.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{bar:.1f}" height="{y1 - y0:.1f}" '
                           f'fill="{colour}"/>')
        if len(series) > 1:
            out.append(f'<rect x="{WIDTH - RIGHT - 150}" y="{TOP + 6 + 18 * k}" width="12" height="12" '
                       f'fill="{colour}"/>')
            out.append(f'<text x="{WIDTH - RIGHT - 132}" y="{TOP + 16 + 18 * k}">{escape(name)}</text>')
    out.append(f'<text x="{LEFT + width / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">{escape(x_name)}</text>')
    out.append(f'<text x="16" y="{TOP + height / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {TOP + height / 2:.1f})">{escape(y_label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"

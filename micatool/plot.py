"""Plots for Mica Notebooks: columns of numbers a cell printed -> the text of an SVG.

The same columns give the same bytes on every machine and every run: every
coordinate, colour and tick label is formatted with a fixed number of
decimals, tick steps are exact decimals (1, 2 or 5 times a power of ten), and
nothing records when or where the picture was drawn. A line plot joins each
column's points in order; a bar plot draws one bar per row, the first column
naming the bars; a points plot draws a dot per row, one colour per column or
per value of a group column; a heat map draws one cell per row at (x, y),
coloured by z, its rows top to bottom in the order the table gives them:
rising y as in a matrix or an image, falling y as in a map.
"""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 80, 24, 24, 56  # the margins around the plotting area
SCALE_WIDTH = 72  # a heat map's colour scale, right of its cells
COLOURS = ("#1f5fa8", "#c8501e", "#2e8b3a", "#8a3fa0", "#a07a18")
WHITE = (255, 255, 255)
HIGH, LOW = (31, 95, 168), (200, 80, 30)  # a heat map's largest value, and its most negative one
KINDS = ("line", "bars", "points", "heat")

Series = tuple[str, list[float], list[float]]  # a name, and its points' x and y


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


def ticks(low: float, high: float, least: float = 0.0) -> tuple[list[float], int]:
    """Tick values covering low..high, about five of them, at least `least` apart, and the
    decimals their labels need."""
    if high <= low:
        low, high = low - 1, high + 1
    for exponent in range(-12, 16):
        for mantissa in (1, 2, 5):
            step = float(f"{mantissa}e{exponent}")  # an exact decimal, whatever pow would round to
            if (high - low) / step <= 6 and step >= least:
                first, last = math.floor(low / step), math.ceil(high / step)
                return [k * step for k in range(first, last + 1)], max(0, -exponent)
    raise PlotError(f"the values span {low} to {high}, too wide to draw")


def draw(printed: str, kind: str, x: str, y: list[str], group: str | None = None, z: str | None = None) -> str:
    """The SVG of a table in printed text, as a cell's options ask for it."""
    if kind not in KINDS:
        raise PlotError(f"unknown plot kind '{kind}'; choose one of: {', '.join(KINDS)}")
    if kind == "heat":
        if z is None or len(y) != 1:
            raise PlotError("a heat map needs one y column and its values: x=COLUMN y=COLUMN z=COLUMN")
        columns = table(printed, [x, y[0], z])
        return heat(x, columns[x], y[0], columns[y[0]], z, columns[z])
    if z is not None:
        raise PlotError("z=COLUMN is for heat maps (kind=heat)")
    if group is not None:
        if kind != "points":
            raise PlotError("group=COLUMN is for points plots (kind=points)")
        columns = table(printed, [x, *y, group])
        return svg(x, ", ".join(y), grouped(columns[x], {name: columns[name] for name in y}, group, columns[group]),
                   kind)
    columns = table(printed, [x, *y])
    return svg(x, ", ".join(y), [(name, columns[x], columns[name]) for name in y], kind)


def grouped(x: list[float], columns: dict[str, list[float]], group: str, labels: list[float]) -> list[Series]:
    """One series per column and value of the group column, in the order the values first appear."""
    values = list(dict.fromkeys(labels))
    series = []
    for name, column in columns.items():
        for value in values:
            rows = [i for i, label in enumerate(labels) if label == value]
            title = f"{group} {value:g}" if len(columns) == 1 else f"{name}, {group} {value:g}"
            series.append((title, [x[i] for i in rows], [column[i] for i in rows]))
    return series


def svg(x_name: str, y_label: str, series: list[Series], kind: str) -> str:
    """The SVG text of the series (name, x values, y values) against x, axes labelled."""
    xs = [a for _, column, _ in series for a in column]
    values = [v for _, _, column in series for v in column]
    x_ticks, x_decimals = ticks(min(xs), max(xs))
    y_low = min(values + [0.0]) if kind == "bars" else min(values)
    y_ticks, y_decimals = ticks(y_low, max(values))
    if kind == "bars":
        spread = (max(xs) - min(xs)) / max(1, len(series[0][1]) - 1) or 1.0  # room for half a bar at each end
        x_ticks, x_decimals = ticks(min(xs) - spread / 2, max(xs) + spread / 2)
    left, right, bottom, top = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(v: float) -> str:
        return f"{LEFT + (v - left) / (right - left) * width:.1f}"

    def py(v: float) -> str:
        return f"{TOP + height - (v - bottom) / (top - bottom) * height:.1f}"

    out = opening(f"{y_label} by {x_name}")
    for v in y_ticks:
        out.append(f'<line x1="{LEFT}" y1="{py(v)}" x2="{WIDTH - RIGHT}" y2="{py(v)}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(v)}" text-anchor="end" dominant-baseline="middle">'
                   f"{v:.{y_decimals}f}</text>")
    for v in x_ticks:
        out.append(f'<line x1="{px(v)}" y1="{TOP + height}" x2="{px(v)}" y2="{TOP + height + 4}" stroke="black"/>')
        out.append(f'<text x="{px(v)}" y="{TOP + height + 18}" text-anchor="middle">{v:.{x_decimals}f}</text>')
    out.append(f'<polyline points="{LEFT},{TOP} {LEFT},{TOP + height} {WIDTH - RIGHT},{TOP + height}" '
               'fill="none" stroke="black"/>')
    for k, (name, x, column) in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        if kind == "line":
            points = " ".join(f"{px(a)},{py(b)}" for a, b in zip(x, column))
            out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        elif kind == "points":
            out.extend(f'<circle cx="{px(a)}" cy="{py(b)}" r="3" fill="{colour}"/>' for a, b in zip(x, column))
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
    return closing(out, x_name, y_label, width, height)


def heat(x_name: str, x: list[float], y_name: str, y: list[float], z_name: str, z: list[float]) -> str:
    """A heat map: a cell per row at (x, y), coloured by z; the first y printed at the top."""
    columns, rows = sorted(set(x)), list(dict.fromkeys(y))
    if rows != sorted(rows) and rows != sorted(rows, reverse=True):
        raise PlotError(f"a heat map's {y_name} values come in order, rising or falling, as its rows are drawn")
    step_x, step_y = spacing(columns), spacing(sorted(rows))
    if rows[0] > rows[-1]:
        step_y = -step_y  # falling: the largest on top, as a map or a graph's y axis reads
    width, height = WIDTH - LEFT - RIGHT - SCALE_WIDTH, HEIGHT - TOP - BOTTOM
    left, right = columns[0] - step_x / 2, columns[-1] + step_x / 2
    top, bottom = rows[0] - step_y / 2, rows[-1] + step_y / 2

    def px(v: float) -> float:
        return LEFT + (v - left) / (right - left) * width

    def py(v: float) -> float:
        return TOP + (v - top) / (bottom - top) * height

    low, high = min(z), max(z)
    out = opening(f"{z_name} by {x_name} and {y_name}")
    for a, b, c in zip(x, y, z):
        # Each edge is rounded once, so neighbouring cells share it and no seam shows between them.
        x0, x1 = round(px(a - step_x / 2), 1), round(px(a + step_x / 2), 1)
        y0, y1 = round(py(b - step_y / 2), 1), round(py(b + step_y / 2), 1)
        out.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" '
                   f'fill="{colour_of(c, low, high)}"/>')
    x_ticks, x_decimals = ticks(columns[0], columns[-1], step_x)  # no tick between two cells' centres
    for v in (t for t in x_ticks if left <= t <= right):
        out.append(f'<line x1="{px(v):.1f}" y1="{TOP + height}" x2="{px(v):.1f}" y2="{TOP + height + 4}" '
                   'stroke="black"/>')
        out.append(f'<text x="{px(v):.1f}" y="{TOP + height + 18}" text-anchor="middle">{v:.{x_decimals}f}</text>')
    y_ticks, y_decimals = ticks(min(rows), max(rows), abs(step_y))
    for v in (t for t in y_ticks if min(top, bottom) <= t <= max(top, bottom)):
        out.append(f'<line x1="{LEFT - 4}" y1="{py(v):.1f}" x2="{LEFT}" y2="{py(v):.1f}" stroke="black"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(v):.1f}" text-anchor="end" dominant-baseline="middle">'
                   f"{v:.{y_decimals}f}</text>")
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{width}" height="{height}" fill="none" stroke="black"/>')
    out.extend(colour_scale(z_name, low, high, LEFT + width + 24, height))
    return closing(out, x_name, y_name, width, height)


def spacing(values: list[float]) -> float:
    """The distance between neighbouring grid values (1 for a single value)."""
    return min((b - a for a, b in zip(values, values[1:])), default=1.0)


def colour_of(value: float, low: float, high: float) -> str:
    """White to blue from the smallest value to the largest; when the values have both
    signs, red below zero and blue above, white at zero, on one scale for both."""
    if low < 0 < high:
        reach = max(-low, high)
        toward, share = (HIGH, value / reach) if value >= 0 else (LOW, -value / reach)
    else:
        toward, share = HIGH, (value - low) / (high - low) if high > low else 1.0
    red, green, blue = (round(w + (c - w) * share) for w, c in zip(WHITE, toward))
    return f"#{red:02x}{green:02x}{blue:02x}"


def colour_scale(name: str, low: float, high: float, x: float, height: float) -> list[str]:
    """A column of colour bands from the largest value (top) to the smallest, its ends labelled."""
    bands, out = 20, []
    top_value, bottom_value = (max(-low, high), -max(-low, high)) if low < 0 < high else (high, low)
    for k in range(bands):
        value = top_value + (bottom_value - top_value) * (k + 0.5) / bands
        out.append(f'<rect x="{x:.1f}" y="{TOP + height * k / bands:.1f}" width="14" height="{height / bands:.1f}" '
                   f'fill="{colour_of(value, low, high)}"/>')
    for value, at in ((top_value, TOP), (bottom_value, TOP + height)):
        out.append(f'<text x="{x + 18:.1f}" y="{at:.1f}" dominant-baseline="middle">{value:.4g}</text>')
    out.append(f'<text x="{x:.1f}" y="{TOP - 10}">{escape(name)}</text>')  # above it, clear of the x axis
    return out


def opening(title: str) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
            f"<title>{escape(title)}</title>",
            f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']


def closing(out: list[str], x_name: str, y_name: str, width: float, height: float) -> str:
    """The axes' names, and the end of the SVG text."""
    out.append(f'<text x="{LEFT + width / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">{escape(x_name)}</text>')
    out.append(f'<text x="16" y="{TOP + height / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {TOP + height / 2:.1f})">{escape(y_name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"

"""Dependency-free SVG charts that stay readable at thousands of turns or calls.

``band_panels``: one small panel per engine, the series binned to at most
:data:`MAX_POINTS` bins drawn as a min-max band with the mean as a line;
``line_chart``: one line per series (binned the same way, the last value of each bin:
meant for cumulative series, which only grow).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")
WIDTH, HEIGHT = 900, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 30, 45
#: Points per series at most: more are binned.
MAX_POINTS = 300
PANEL_HEIGHT, PANEL_GAP = 110, 26

Series = list[tuple[int, int]]


@dataclass(frozen=True)
class Bin:
    """Consecutive points of a series merged into one: their x range and y statistics."""

    x: float  # the middle of the bin's x range
    low: int
    high: int
    mean: float
    last: int


def bin_series(values: Series, max_points: int = MAX_POINTS) -> list[Bin]:
    """``values`` in at most ``max_points`` bins of consecutive points (one per point when
    there are few)."""
    if not values:
        return []
    size = -(-len(values) // max_points)
    bins = []
    for start in range(0, len(values), size):
        chunk = values[start : start + size]
        ys = [y for _, y in chunk]
        bins.append(
            Bin(
                x=(chunk[0][0] + chunk[-1][0]) / 2,
                low=min(ys),
                high=max(ys),
                mean=sum(ys) / len(ys),
                last=ys[-1],
            )
        )
    return bins


def short_number(value: float) -> str:
    """A tick label that fits the margin: 950, 12.5k, 3M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{int(value):,}"


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = span / ticks if span > 0 else 1
    magnitude = 10 ** len(str(int(raw))) / 10
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def line_chart(
    title: str,
    series: dict[str, Series],
    *,
    limit: int | None = None,
    limit_label: str = "window",
    y_label: str = "request tokens",
    x_label: str = "turn",
) -> str:
    """An SVG document plotting each series (name -> [(x, y)]), each binned to at most
    :data:`MAX_POINTS` points (the last value of each bin)."""
    binned = {name: [(b.x, b.last) for b in bin_series(values)] for name, values in series.items()}
    points = [p for values in binned.values() for p in values]
    max_x = max((x for x, _ in points), default=1) or 1
    max_y = max([y for _, y in points] + ([limit] if limit else []) + [1])
    step = _nice_step(max_y)
    top_y = step * (int(max_y / step) + 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + plot_w * x / max_x

    def sy(y: float) -> float:
        return TOP + plot_h * (1 - y / top_y)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    tick = 0.0
    while tick <= top_y:
        y = sy(tick)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{short_number(tick)}</text>'
        )
        tick += step
    x_step = _nice_step(max_x)
    tick = 0.0
    while tick <= max_x:
        out.append(
            f'<text x="{sx(tick):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{int(tick)}</text>"
        )
        tick += x_step
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>'
    )
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    out.append(
        f'<text transform="translate(16 {TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    if limit:
        y = sy(limit)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" '
            'stroke="#555" stroke-dasharray="6 4"/>'
        )
        out.append(f'<text x="{LEFT + plot_w + 6}" y="{y + 4:.1f}">{escape(limit_label)}</text>')
    for n, (name, values) in enumerate(binned.items()):
        color = PALETTE[n % len(PALETTE)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in values)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{path}"/>')
        ly = TOP + 20 + 18 * n
        out.append(
            f'<line x1="{LEFT + plot_w + 6}" y1="{ly}" x2="{LEFT + plot_w + 26}" y2="{ly}" '
            f'stroke="{color}" stroke-width="3"/>'
        )
        out.append(f'<text x="{LEFT + plot_w + 30}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def band_panels(
    title: str,
    series: dict[str, Series],
    *,
    x_label: str,
    y_label: str,
    limit: int | None = None,
    limit_label: str = "window",
) -> str:
    """One small panel per series on shared axes: the min-max band of each bin, the mean
    as a line, ``limit`` dashed; readable however many points there are."""
    binned = {name: bin_series(values) for name, values in series.items()}
    max_x = max((b.x for bins in binned.values() for b in bins), default=1) or 1
    max_y = max([b.high for bins in binned.values() for b in bins] + [limit or 0, 1])
    step = _nice_step(max_y, ticks=3)
    top_y = step * (int(max_y / step) + 1)
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + len(binned) * (PANEL_HEIGHT + PANEL_GAP) - PANEL_GAP + BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]

    def sx(x: float) -> float:
        return LEFT + plot_w * x / max_x

    for n, (name, bins) in enumerate(binned.items()):
        top = TOP + n * (PANEL_HEIGHT + PANEL_GAP)

        def sy(y: float, top: float = top) -> float:
            return top + PANEL_HEIGHT * (1 - y / top_y)

        color = PALETTE[n % len(PALETTE)]
        tick = 0.0
        while tick <= top_y:
            y = sy(tick)
            out.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
            )
            label = short_number(tick)
            out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
            tick += step
        out.append(
            f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL_HEIGHT}" '
            'fill="none" stroke="#999"/>'
        )
        if bins:
            upper = [f"{sx(b.x):.1f},{sy(b.high):.1f}" for b in bins]
            lower = [f"{sx(b.x):.1f},{sy(b.low):.1f}" for b in reversed(bins)]
            out.append(
                f'<polygon fill="{color}" fill-opacity="0.25" stroke="none" '
                f'points="{" ".join(upper + lower)}"/>'
            )
            mean = " ".join(f"{sx(b.x):.1f},{sy(b.mean):.1f}" for b in bins)
            out.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{mean}"/>'
            )
        if limit:
            y = sy(limit)
            out.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" '
                'stroke="#555" stroke-dasharray="6 4"/>'
            )
            out.append(
                f'<text x="{LEFT + plot_w + 6}" y="{y + 4:.1f}">{escape(limit_label)}</text>'
            )
        peak = max((b.high for b in bins), default=0)
        out.append(
            f'<text x="{LEFT + plot_w + 6}" y="{top + PANEL_HEIGHT - 4}" fill="{color}">'
            f"{escape(name)}</text>"
        )
        out.append(
            f'<text x="{LEFT + 4}" y="{top + 14}" fill="#555">{escape(name)}: mean line, '
            f"min-max band, peak {peak:,}</text>"
        )
    axis_y = TOP + len(binned) * (PANEL_HEIGHT + PANEL_GAP) - PANEL_GAP + 16
    x_step = _nice_step(max_x)
    tick = 0.0
    while tick <= max_x:
        out.append(f'<text x="{sx(tick):.1f}" y="{axis_y}" text-anchor="middle">{int(tick)}</text>')
        tick += x_step
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{height - 8}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    out.append(
        f'<text transform="translate(16 {TOP + (height - TOP - BOTTOM) / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"

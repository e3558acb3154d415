"""A dependency-free SVG line chart: request tokens per turn, one line per engine."""

from __future__ import annotations

from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")
WIDTH, HEIGHT = 900, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 30, 45


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = span / ticks if span > 0 else 1
    magnitude = 10 ** len(str(int(raw))) / 10
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def line_chart(
    title: str,
    series: dict[str, list[tuple[int, int]]],
    *,
    limit: int | None = None,
    limit_label: str = "window",
    y_label: str = "request tokens",
) -> str:
    """An SVG document plotting each series (name -> [(turn, tokens)])."""
    points = [p for values in series.values() for p in values]
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
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{int(tick):,}</text>')
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
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">turn</text>')
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
    for n, (name, values) in enumerate(series.items()):
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

"""Rendering pieces of replay/compare: the progress bar, the SVG chart."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from ctxengine_host.replay.render import ProgressBar
from ctxengine_host.replay.svgchart import line_chart


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_only_on_a_terminal() -> None:
    tty, pipe = Terminal(), io.StringIO()
    for stream in (tty, pipe):
        bar = ProgressBar("replay x", stream)
        for done in range(1, 11):
            bar(done, 10)
    assert pipe.getvalue() == ""
    assert tty.getvalue().endswith("[" + "#" * 30 + "] 10/10 turns\n")
    assert tty.getvalue().startswith("\rreplay x [")


def test_svg_chart_is_well_formed_with_one_line_per_series() -> None:
    svg = line_chart(
        "s: request tokens",
        {"legacy": [(1, 100), (2, 30_000)], "lcm <x>": [(1, 50), (2, 20_000)]},
        limit=32_768,
    )
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    lines = root.findall(f"{ns}polyline")
    assert len(lines) == 2
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert "lcm <x>" in texts and "window" in texts
    # The highest point (30,000) is inside the plot area, below the top tick.
    ys = [float(p.split(",")[1]) for p in lines[0].get("points").split()]
    assert min(ys) >= 30

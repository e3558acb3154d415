"""What a comparison shows, shared by its files (``compare``) and its page (``htmlreport``):
the charts of one session and the cells of the side-by-side table."""

from __future__ import annotations

from typing import Any

from .model import ReplayReport
from .svgchart import band_panels, line_chart, short_number


def series_of(runs: dict[str, ReplayReport]) -> dict[str, list[tuple[int, int]]]:
    """Request tokens per turn (the largest request of the turn), per engine."""
    return {
        engine: [(row.turn, row.request_tokens) for row in report.turns]
        for engine, report in runs.items()
    }


def call_series_of(runs: dict[str, ReplayReport], key: str) -> dict[str, list[tuple[int, int]]]:
    """A per-call field (``request_tokens``, ``cumulative_sent_tokens``), per engine."""
    return {
        engine: [(row.call, getattr(row, key)) for row in report.calls]
        for engine, report in runs.items()
    }


def chart_svgs(name: str, runs: dict[str, ReplayReport]) -> dict[str, str]:
    """The session's charts: kind -> SVG text."""
    window = max((r.context_length for r in runs.values()), default=0)
    return {
        "request_tokens_per_call": band_panels(
            f"{name}: request tokens per provider call",
            call_series_of(runs, "request_tokens"),
            x_label="provider call",
            y_label="request tokens",
            limit=window,
        ),
        "request_tokens_per_turn": band_panels(
            f"{name}: largest request per turn",
            series_of(runs),
            x_label="turn",
            y_label="request tokens",
            limit=window,
        ),
        "cumulative_sent": line_chart(
            f"{name}: tokens sent so far",
            {
                f"{engine} {short_number(values[-1][1]) if values else 0}": values
                for engine, values in call_series_of(runs, "cumulative_sent_tokens").items()
            },
            x_label="provider call",
            y_label="tokens sent (cumulative)",
        ),
    }


def summary_cell(summary: dict[str, Any], key: str) -> str:
    """One summary value for a table cell; "-" for tool probes when the engine has no tools."""
    if key == "probes_search_found" and not summary["probes_searched"]:
        return "-"
    return format_value(key, summary[key])


def format_value(key: str, value: Any) -> str:
    """A summary value for a table cell: ratios as percentages."""
    if key.endswith("_ratio"):
        return f"{value:.1%}"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)

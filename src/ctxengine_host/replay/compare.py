"""Several engines over the same sessions: reports, a chart per session, one HTML page.

Each (session, engine) pair is a normal replay whose store and report.json land in
``OUT/<session>/<engine>/``; the comparison adds ``compare.json``, three SVG charts per
session (request tokens per provider call and per turn, one small panel per engine,
binned with a min-max band; cumulative tokens sent per call), a PNG when matplotlib
happens to be installed, and ``report.html``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .driver import ReplayOptions, replay_file
from .figures import call_series_of, chart_svgs, summary_cell
from .htmlreport import html_report
from .model import ReplayReport
from .sessionfile import session_stem
from .svgchart import bin_series

SCHEMA = "ctxengine.compare/1"
TABLE_FIELDS = (
    ("turns", "turns"),
    ("tokens_sent_total", "sent"),
    ("tokens_saved_ratio", "saved"),
    ("max_request_tokens", "max req"),
    ("turns_over_budget", "over"),
    ("compactions", "compact"),
    ("quarantines", "quar"),
    ("probes_in_context", "in ctx"),
    ("probes_search_found", "search"),
    ("wall_seconds", "wall s"),
)


@dataclass
class Comparison:
    """The reports of every run and the files written."""

    out_dir: Path
    reports: dict[str, dict[str, ReplayReport]] = field(default_factory=dict)
    charts: dict[str, str] = field(default_factory=dict)
    all_charts: dict[str, dict[str, str]] = field(default_factory=dict)
    pngs: dict[str, str] = field(default_factory=dict)
    html: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "out_dir": str(self.out_dir),
            "html": self.html,
            "sessions": [
                {
                    "session": name,
                    "chart_svg": self.charts.get(name),
                    "charts_svg": self.all_charts.get(name, {}),
                    "chart_png": self.pngs.get(name),
                    "runs": [
                        {
                            "engine": engine,
                            "requested": report.engine_requested,
                            "fallback": report.engine_fallback,
                            "report": str(self.out_dir / name / engine / "report.json"),
                            "summary": report.summary(),
                        }
                        for engine, report in runs.items()
                    ],
                }
                for name, runs in self.reports.items()
            ],
        }


def compare_files(
    files: list[str],
    engines: list[str],
    base: ReplayOptions,
    out_dir: str | Path,
    progress_for: Callable[[str], Callable[[int, int], None] | None] | None = None,
) -> Comparison:
    """Replay every file on every engine and write the comparison into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    comparison = Comparison(out)
    for file in files:
        name = session_stem(file)
        runs: dict[str, ReplayReport] = {}
        for engine in engines:
            run_dir = out / name / engine
            options = dataclasses.replace(base, engine=engine, out_dir=str(run_dir))
            progress = progress_for(f"{name} on {engine}") if progress_for else None
            report = replay_file(file, options, progress)
            (run_dir / "report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
            runs[engine] = report
        comparison.reports[name] = runs
        comparison.all_charts[name] = _write_charts(out, name, runs)
        comparison.charts[name] = comparison.all_charts[name]["request_tokens_per_call"]
        png = _write_png(out, name, runs)
        if png:
            comparison.pngs[name] = png
    html_path = out / "report.html"
    html_path.write_text(html_report(comparison.reports, TABLE_FIELDS), encoding="utf-8")
    comparison.html = str(html_path)
    (out / "compare.json").write_text(json.dumps(comparison.to_dict(), indent=2) + "\n")
    return comparison


#: File name suffix of each chart kind.
CHART_FILES = {
    "request_tokens_per_call": "request_tokens.svg",
    "request_tokens_per_turn": "request_tokens_per_turn.svg",
    "cumulative_sent": "cumulative_sent.svg",
}


def _write_charts(out: Path, name: str, runs: dict[str, ReplayReport]) -> dict[str, str]:
    paths = {}
    for kind, svg in chart_svgs(name, runs).items():
        path = out / f"{name}.{CHART_FILES[kind]}"
        path.write_text(svg, encoding="utf-8")
        paths[kind] = str(path)
    return paths


def _write_png(out: Path, name: str, runs: dict[str, ReplayReport]) -> str | None:
    """A PNG of the per-call chart (binned means), only when matplotlib is installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for engine, values in call_series_of(runs, "request_tokens").items():
        bins = bin_series(values)
        xs = [b.x for b in bins]
        ax.fill_between(xs, [b.low for b in bins], [b.high for b in bins], alpha=0.25)
        ax.plot(xs, [b.mean for b in bins], label=engine, linewidth=1)
    ax.set_xlabel("provider call")
    ax.set_ylabel("request tokens")
    ax.legend()
    path = out / f"{name}.request_tokens.png"
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return str(path)


def table_rows(comparison: Comparison) -> list[list[str]]:
    """The side-by-side table: one row per session and engine."""
    header = ["session", "engine", *(label for _, label in TABLE_FIELDS)]
    rows = [header]
    for name, runs in comparison.reports.items():
        for engine, report in runs.items():
            summary = report.summary()
            label = engine if not report.engine_fallback else f"{engine}->{report.engine}"
            rows.append([name, label, *(summary_cell(summary, k) for k, _ in TABLE_FIELDS)])
    return rows

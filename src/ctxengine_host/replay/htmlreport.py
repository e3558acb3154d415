"""A self-contained HTML page for a comparison: tables and inline SVG charts, no assets."""

from __future__ import annotations

from html import escape
from typing import Any

from .figures import chart_svgs, summary_cell
from .model import ReplayReport

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th { background: #f4f4f4; }
td.name { text-align: left; }
.fallback { color: #b00; }
"""


def html_report(
    reports: dict[str, dict[str, ReplayReport]], fields: tuple[tuple[str, str], ...]
) -> str:
    """The comparison page: per session a summary table, the chart and probe results."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>ctxengine compare</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>ctxengine compare</h1>",
    ]
    for name, runs in reports.items():
        first = next(iter(runs.values()), None)
        parts.append(f"<h2>{escape(name)}</h2>")
        if first is not None:
            parts.append(
                f"<p>{escape(first.session_file)}: {first.messages} messages, "
                f"model {escape(first.model)}, window {first.context_length:,} tokens.</p>"
            )
        parts.append("<table><tr><th>engine</th>")
        parts += [f"<th>{escape(label)}</th>" for _, label in fields]
        parts.append("</tr>")
        for engine, report in runs.items():
            summary = report.summary()
            label = escape(engine)
            if report.engine_fallback:
                label += (
                    f' <span class="fallback">(ran {escape(report.engine)}: '
                    f"{escape(report.engine_reason or '')})</span>"
                )
            parts.append(f'<tr><td class="name">{label}</td>')
            parts += [f"<td>{escape(summary_cell(summary, k))}</td>" for k, _ in fields]
            parts.append("</tr>")
        parts.append("</table>")
        parts += list(chart_svgs(name, runs).values())
        parts += _probe_table(runs)
        parts += _turn_table(runs)
        parts += _call_table(runs)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _turn_table(runs: dict[str, ReplayReport], max_rows: int = 120) -> list[str]:
    """Request tokens and compactions per turn, side by side (every n-th turn when long)."""
    engines = list(runs)
    count = max((len(r.turns) for r in runs.values()), default=0)
    if not count:
        return []
    step = max(1, -(-count // max_rows))
    which = "every turn" if step == 1 else f"every {step} turns"
    out = [
        f"<h3>Per turn ({which}): largest request in tokens, (n c) = n compactions</h3>",
        "<table><tr><th>turn</th>",
    ]
    out += [f"<th>{escape(e)}</th>" for e in engines]
    out.append("</tr>")
    for index in range(step - 1, count, step):
        out.append(f"<tr><td>{index + 1}</td>")
        for engine in engines:
            turns = runs[engine].turns
            if index >= len(turns):
                out.append("<td>-</td>")
                continue
            row = turns[index]
            mark = f" ({row.compactions}c)" if row.compactions else ""
            out.append(f"<td>{row.request_tokens:,}{mark}</td>")
        out.append("</tr>")
    out.append("</table>")
    return out


def _call_table(runs: dict[str, ReplayReport], max_rows: int = 120) -> list[str]:
    """Request tokens per provider call, side by side (every n-th call when long)."""
    engines = list(runs)
    count = max((len(r.calls) for r in runs.values()), default=0)
    if not count:
        return []
    step = max(1, -(-count // max_rows))
    which = "every call" if step == 1 else f"every {step} calls"
    out = [
        f"<h3>Per provider call ({which}): request tokens, (c) compacted, (cut) cut by the "
        "host</h3>",
        "<table><tr><th>call</th>",
    ]
    out += [f"<th>{escape(e)} (turn)</th>" for e in engines]
    out.append("</tr>")
    for index in range(step - 1, count, step):
        out.append(f"<tr><td>{index + 1}</td>")
        for engine in engines:
            calls = runs[engine].calls
            if index >= len(calls):
                out.append("<td>-</td>")
                continue
            row = calls[index]
            mark = (" (c)" if row.compacted else "") + (" (cut)" if row.substituted else "")
            out.append(f"<td>{row.request_tokens:,}{mark} ({row.turn})</td>")
        out.append("</tr>")
    out.append("</table>")
    return out


def _probe_table(runs: dict[str, ReplayReport]) -> list[str]:
    engines = list(runs)
    probes: dict[str, Any] = {}
    for engine, report in runs.items():
        for p in report.probes:
            probes.setdefault(p.id, {"probe": p, "by": {}})["by"][engine] = p
    if not probes:
        return []
    out = ["<h3>Probes (answer in the final context / found by the engine's search)</h3>"]
    out.append("<table><tr><th>probe</th><th>turn</th><th>question</th>")
    out += [f"<th>{escape(e)}</th>" for e in engines]
    out.append("</tr>")
    for pid, item in probes.items():
        p = item["probe"]
        out.append(
            f'<tr><td class="name">{escape(pid)}</td><td>{p.planted_turn}</td>'
            f'<td class="name">{escape(p.question)}</td>'
        )
        for engine in engines:
            result = item["by"].get(engine)
            cell = "-"
            if result is not None:
                cell = "yes" if result.in_context else "no"
                if result.search_found is not None:
                    cell += " / " + ("yes" if result.search_found else "no")
            out.append(f"<td>{cell}</td>")
        out.append("</tr>")
    out.append("</table>")
    return out

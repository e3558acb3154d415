"""Text output of a replay: the per-turn table, the summary, a progress bar for terminals."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from .model import ReplayReport, TurnRow

COLUMNS = (
    ("turn", 5),
    ("live", 6),
    ("stored", 7),
    ("request", 8),
    ("budget", 7),
    ("calls", 5),
    ("engine", 22),
    ("summary", 9),
    ("latency", 9),
)


def turn_line(row: TurnRow) -> str:
    """One row of the per-turn table."""
    if row.compactions:
        levels = ",".join(f"L{lv}" for lv in sorted(set(row.summary_levels))) or "-"
        did = f"compact x{row.compactions} {'/'.join(sorted(set(row.compaction_reasons)))}"
        summary = f"{levels} {row.summary_tokens}t" if row.summary_levels else "-"
    else:
        did, summary = "-", "-"
    if row.compaction_failures:
        did += f" fail x{row.compaction_failures}"
    if row.host_substitutions:
        did += f" host-cut x{row.host_substitutions}"
    if row.omitted_messages:
        did += f" OMITTED x{row.requests_with_omissions}"
    if row.quarantine_started:
        did += " QUARANTINED"
    elif row.mode != "normal":
        did = f"({row.mode})" if did == "-" else f"{did} ({row.mode})"
    if not row.within_budget:
        did += " OVER"
    values = (
        row.turn,
        row.live_messages,
        row.stored_messages,
        row.request_tokens,
        row.budget_tokens,
        row.provider_calls,
        did,
        summary,
        f"{row.engine_ms:.1f}ms",
    )
    return " ".join(_cell(v, width) for v, (_, width) in zip(values, COLUMNS, strict=True))


def table_header() -> str:
    return " ".join(_cell(name, width) for name, width in COLUMNS)


def _cell(value: Any, width: int) -> str:
    text = str(value)
    return text.rjust(width) if isinstance(value, int) else text.ljust(width)


def summary_lines(report: ReplayReport) -> list[str]:
    """The summary block printed after the table."""
    s = report.summary()
    first_quarantine = next((r.turn for r in report.turns if r.quarantine_started), None)
    lines = [
        f"session   {report.session_file} ({report.messages} messages, {s['turns']} turns)",
        f"engine    {report.engine}"
        + (
            f" (fallback from {report.engine_requested}: {report.engine_reason})"
            if report.engine_fallback
            else ""
        ),
        f"model     {report.model}, window {report.context_length} tokens, "
        f"budget {s['budget_tokens']} tokens",
        f"sent      {s['tokens_sent_total']:,} tokens in {s['provider_calls']} calls vs "
        f"{s['raw_tokens_capped_total']:,} for the raw history capped at the window "
        f"({s['tokens_saved_ratio']:.1%} saved)",
        f"largest   {s['max_request_tokens']:,} tokens; turns over the window: "
        f"{s['turns_over_budget']}; overflow retries: {s['overflow_retries']}",
        f"compacted {s['compactions']} times in {s['compress_calls']} attempts "
        f"({s['compaction_failures']} failed), {s['summary_tokens_total']:,} summary tokens "
        f"written; {s['host_substitutions']} requests cut by the host",
        f"messages  {s['final_live_messages']} live, {s['final_sent_messages']} in the last "
        f"request (the rest represented by summaries); {s['omitted_without_cover']} left out "
        "without a summary",
        f"faults    {s['quarantines']} quarantines"
        + (f" (first at turn {first_quarantine})" if first_quarantine else "")
        + f", {s['fallback_turns']} turns in fallback mode (the default engine ran)",
        f"time      {s['wall_seconds']:.2f}s wall, {s['engine_ms_total']:.0f}ms in the engine",
    ]
    if s["window_too_small"]:
        lines.append(
            "note      the window is too small for this session: the engine could not bring "
            "every request under the budget (requests cut by the host or over the window); "
            "raise --context-length"
        )
    lines += [f"ERROR     {error}" for error in report.errors()]
    if s["probes_total"]:
        line = (
            f"probes    {s['probes_in_context']}/{s['probes_total']} answers in the final context"
        )
        if s["probes_searched"]:
            line += (
                f"; search found {s['probes_search_found']}/{s['probes_searched']}"
                f"; expand verbatim {s['probes_expand_verbatim']}/{s['probes_expanded']}"
            )
        lines.append(line)
    else:
        lines.append("probes    none (no NAME.probes.json beside the session)")
    return lines


def probe_lines(report: ReplayReport) -> list[str]:
    out = []
    for p in report.probes:
        mark = "yes" if p.in_context else "no "
        tool = ""
        if p.search_found is not None:
            tool = f" search={'yes' if p.search_found else 'no'}"
            if p.expand_verbatim is not None:
                tool += f" expand={'yes' if p.expand_verbatim else 'no'}"
        out.append(f"  {p.id} turn {p.planted_turn:>5} in-context={mark}{tool}  {p.question}")
    return out


def render_text(report: ReplayReport, *, every: int = 1) -> str:
    """The whole text report; ``every`` > 1 shows every n-th turn plus turns that compacted."""
    lines = [table_header()]
    for row in report.turns:
        if every <= 1 or row.turn % every == 0 or row.compactions or not row.within_budget:
            lines.append(turn_line(row))
    lines.append("")
    lines += summary_lines(report)
    lines += probe_lines(report)
    return "\n".join(lines)


class ProgressBar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / total) if total else width
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} turns")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()

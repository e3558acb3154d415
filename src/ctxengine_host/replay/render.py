"""Text output of a replay: the per-turn table, the summary, a progress bar for terminals."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from .model import CallRow, ReplayReport, TurnRow

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


CALL_COLUMNS = (
    ("call", 6),
    ("turn", 5),
    ("request", 8),
    ("conv", 7),
    ("budget", 7),
    ("msgs", 5),
    ("sent so far", 12),
    ("engine", 20),
)


def call_line(row: CallRow) -> str:
    """One row of the per-call table."""
    flags = [
        name
        for name, on in (
            ("compacted", row.compacted),
            ("selected", row.selected),
            ("host-cut", row.substituted),
            (f"retry x{row.overflow_retries}", row.overflow_retries),
            ("OVER", not row.within_window),
        )
        if on
    ]
    values = (
        row.call,
        row.turn,
        row.request_tokens,
        row.conversation_tokens,
        row.budget_tokens,
        row.messages_sent,
        row.cumulative_sent_tokens,
        " ".join(flags) or "-",
    )
    return " ".join(_cell(v, width) for v, (_, width) in zip(values, CALL_COLUMNS, strict=True))


def call_table(report: ReplayReport, *, every: int = 1) -> list[str]:
    """The per-call table; ``every`` > 1 shows every n-th call plus calls that compacted,
    were cut by the host or went over the window."""
    lines = [" ".join(_cell(name, width) for name, width in CALL_COLUMNS)]
    for row in report.calls:
        flagged = row.compacted or row.substituted or not row.within_window
        if every <= 1 or row.call % every == 0 or flagged:
            lines.append(call_line(row))
    return lines


def per_call_by_default(report: ReplayReport) -> bool:
    """A tool loop (at least 4 calls per turn on average) reads better call by call."""
    return len(report.calls) >= 4 * max(1, len(report.turns))


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
        + (
            f", every turn on the default engine ({report.engine_requested} was not used)"
            if report.engine_fallback
            else f", {s['fallback_turns']} turns in fallback mode (the default engine ran)"
        ),
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


def turn_table(report: ReplayReport, *, every: int = 1) -> list[str]:
    """The per-turn table; ``every`` > 1 shows every n-th turn plus turns that compacted."""
    lines = [table_header()]
    for row in report.turns:
        if every <= 1 or row.turn % every == 0 or row.compactions or not row.within_budget:
            lines.append(turn_line(row))
    return lines


def render_text(report: ReplayReport, *, every: int = 1, per: str = "turn") -> str:
    """The whole text report; ``every`` > 1 shows every n-th turn (or call, ``per="call"``)
    plus the ones that compacted or went over."""
    table = call_table if per == "call" else turn_table
    lines = table(report, every=every)
    lines.append("")
    lines += summary_lines(report)
    lines += probe_lines(report)
    return "\n".join(lines)


class ProgressBar:
    """Progress on stderr: a redrawn bar on a terminal; with ``log_when_piped``, plain
    lines (the start, every tenth, the end) when stderr is a file or a pipe."""

    def __init__(
        self, label: str, stream: TextIO | None = None, *, log_when_piped: bool = False
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.log_when_piped = log_when_piped
        self.label = label
        self._last = 0.0
        self._logged_tenth = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            if self.log_when_piped:
                self._log(done, total)
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

    def _log(self, done: int, total: int) -> None:
        tenth = 10 * done // total if total else 10
        if tenth == self._logged_tenth:
            return
        self._logged_tenth = tenth
        self.stream.write(f"{self.label}: {done}/{total} turns ({tenth * 10}%)\n")
        self.stream.flush()

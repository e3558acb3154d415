"""The replay report: per-turn rows, probe results and the summary.

Field names here are the stable names of ``ctxengine replay --json`` (documented in
docs/replay.md); add fields, never rename or remove them without bumping SCHEMA.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

SCHEMA = "ctxengine.replay/1"


@dataclass
class TurnRow:
    """What one turn cost and what the engine did during it."""

    turn: int
    provider_calls: int = 0
    live_messages: int = 0
    stored_messages: int = 0
    request_tokens: int = 0  # the largest request of the turn
    sent_tokens: int = 0  # every request of the turn added up
    budget_tokens: int = 0
    raw_tokens: int = 0  # the whole history at the turn's last call, uncapped
    raw_capped_tokens: int = 0  # per call, the raw history capped at the window, added up
    within_budget: bool = True
    overflow_retries: int = 0
    compress_calls: int = 0  # every compaction attempt, whether it changed anything or not
    compactions: int = 0  # attempts that changed the live view
    compaction_reasons: list[str] = field(default_factory=list)
    compaction_failures: int = 0
    host_substitutions: int = 0  # requests the host itself had to cut to fit the budget
    sent_messages: int = 0  # messages of the turn's last request (system head included)
    omitted_messages: int = 0  # live messages left out uncovered (marked), over the requests
    requests_with_omissions: int = 0
    summary_levels: list[int] = field(default_factory=list)
    summary_tokens: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None
    compaction_ms: float = 0.0
    select_ms: float = 0.0
    compress_ms: float = 0.0
    engine_ms: float = 0.0
    turn_ms: float = 0.0
    quarantined: bool = False  # the session's engine is quarantined at the end of the turn
    quarantine_started: bool = False  # ... and it happened during this turn
    mode: str = "normal"


@dataclass
class CallRow:
    """One provider call: what its request held (the per-call view beside the per-turn one).

    A single-task agent session is one turn of hundreds of calls; these rows are what
    shows how its requests grow and shrink.
    """

    call: int  # 1-based over the whole session
    turn: int
    request_tokens: int  # the whole prompt: messages and tool schemas
    conversation_tokens: int  # what must fit in the budget
    budget_tokens: int
    messages_sent: int
    cumulative_sent_tokens: int  # request tokens of this call and every call before it
    compacted: bool = False  # a compaction ran while building this request
    selected: bool = False  # the engine's select_context chose the messages
    substituted: bool = False  # the host cut this request to fit
    overflow_retries: int = 0
    within_window: bool = True


@dataclass
class ProbeResult:
    """Whether a planted fact survived: in the final context, and through engine tools."""

    id: str
    kind: str
    question: str
    answer: str
    planted_turn: int
    in_context: bool
    search_tool: str | None = None
    search_query: str | None = None
    search_found: bool | None = None
    expand_tool: str | None = None
    expand_verbatim: bool | None = None
    detail: str | None = None


@dataclass
class ReplayReport:
    """Everything one replay measured; ``to_dict`` is the ``--json`` document."""

    session_file: str
    engine: str
    engine_requested: str | None
    engine_fallback: bool
    engine_reason: str | None
    model: str
    context_length: int
    messages: int
    turns: list[TurnRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    probes: list[ProbeResult] = field(default_factory=list)
    probes_file: str | None = None
    engine_tools: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    store_path: str | None = None
    # The final request's messages, kept in memory for analyses such as
    # benchmarks/bench_quality.py; not part of the --json document.
    final_messages: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        rows = self.turns
        sent = sum(r.sent_tokens for r in rows)
        raw_capped = sum(r.raw_capped_tokens for r in rows)
        searched = [p for p in self.probes if p.search_found is not None]
        expanded = [p for p in self.probes if p.expand_verbatim is not None]
        return {
            "turns": len(rows),
            "provider_calls": sum(r.provider_calls for r in rows),
            "tokens_sent_total": sent,
            "raw_tokens_capped_total": raw_capped,
            "tokens_saved_ratio": round(1 - sent / raw_capped, 4) if raw_capped else 0.0,
            "max_request_tokens": max((r.request_tokens for r in rows), default=0),
            "budget_tokens": min((r.budget_tokens for r in rows if r.budget_tokens), default=0),
            "turns_over_budget": sum(1 for r in rows if not r.within_budget),
            "overflow_retries": sum(r.overflow_retries for r in rows),
            "compress_calls": sum(r.compress_calls for r in rows),
            "compactions": sum(r.compactions for r in rows),
            "compaction_failures": sum(r.compaction_failures for r in rows),
            "host_substitutions": sum(r.host_substitutions for r in rows),
            "summary_tokens_total": sum(r.summary_tokens for r in rows),
            "omitted_without_cover": sum(r.omitted_messages for r in rows),
            "requests_with_omissions": sum(r.requests_with_omissions for r in rows),
            "window_too_small": any(r.host_substitutions or not r.within_budget for r in rows),
            "quarantines": sum(1 for r in rows if r.quarantine_started),
            "quarantined_turns": sum(1 for r in rows if r.quarantined),
            "fallback_turns": sum(1 for r in rows if r.mode != "normal"),
            "final_live_messages": rows[-1].live_messages if rows else 0,
            # The last request sent: a transcript may end on a turn with no call (a task
            # given but not answered, a trajectory ending on a tool's output).
            "final_sent_messages": next(
                (r.sent_messages for r in reversed(rows) if r.provider_calls), 0
            ),
            "final_stored_messages": rows[-1].stored_messages if rows else 0,
            "engine_ms_total": round(sum(r.engine_ms for r in rows), 1),
            "wall_seconds": round(self.wall_seconds, 3),
            "probes_total": len(self.probes),
            "probes_in_context": sum(1 for p in self.probes if p.in_context),
            "probes_searched": len(searched),
            "probes_search_found": sum(1 for p in searched if p.search_found),
            "probes_expanded": len(expanded),
            "probes_expand_verbatim": sum(1 for p in expanded if p.expand_verbatim),
        }

    def errors(self) -> list[str]:
        """Broken guarantees: live messages left out of requests with nothing covering them."""
        rows = [r for r in self.turns if r.omitted_messages]
        if not rows:
            return []
        total = sum(r.omitted_messages for r in rows)
        requests = sum(r.requests_with_omissions for r in rows)
        return [
            f"{requests} requests left live messages out without a summary ({total} message "
            f"slots in all, first at turn {rows[0].turn}); the host marked each gap"
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "session_file": self.session_file,
            "probes_file": self.probes_file,
            "engine": {
                "name": self.engine,
                "requested": self.engine_requested,
                "fallback": self.engine_fallback,
                "reason": self.engine_reason,
                "tools": list(self.engine_tools),
            },
            "model": self.model,
            "context_length": self.context_length,
            "messages": self.messages,
            "store_path": self.store_path,
            "summary": self.summary(),
            "errors": self.errors(),
            "turns": _rows(self.turns),
            "calls": _rows(self.calls),
            "probes": _rows(self.probes),
        }


def _rows(rows: list[Any]) -> list[dict[str, Any]]:
    """Flat dataclass rows as dicts, their lists copied (``asdict`` without its deep walk,
    which took half a second for a 2,000-turn report)."""
    if not rows:
        return []
    names = [f.name for f in fields(rows[0])]
    return [
        {n: list(v) if isinstance(v := getattr(r, n), list) else v for n in names} for r in rows
    ]

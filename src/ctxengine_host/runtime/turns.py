"""What a turn produces: the provider request, compaction events, the turn report, errors.

Plain data shared by the session's modules (``session``, ``assembly``,
``compaction``); ``ctxengine_host.runtime.session`` re-exports every public name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]

COMPACTION_REASONS = ("threshold", "preflight", "overflow", "manual")


class BudgetError(ValueError):
    """The token budget left for the conversation is zero or negative."""


class SessionClosedError(RuntimeError):
    """The session was ended; open it again with ``ContextHost.open_session``."""


@dataclass
class CompactionEvent:
    """One compaction: why, how much it saved, how long it took, what the summarizer did."""

    reason: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    latency_ms: float
    summary_levels: list[int] = field(default_factory=list)
    summary_tokens: int = 0
    ok: bool = True
    detail: str | None = None
    engine: str = ""
    compacted: bool = False


@dataclass
class ProviderRequest:
    """What to send to the provider for the next call.

    ``estimated_tokens`` is the whole prompt (messages and tool schemas);
    ``conversation_tokens`` the part that must fit in ``budget_tokens`` (the
    messages other than the session's system prompt).
    """

    messages: list[Message]
    tools: list[dict[str, Any]]
    estimated_tokens: int
    conversation_tokens: int
    budget_tokens: int
    compacted: bool = False
    selected: bool = False
    over_budget: bool = False
    system_prompt_addition: str | None = None
    prompt_authority: str = "assembled"
    compactions: list[CompactionEvent] = field(default_factory=list)
    substituted: bool = False
    precheck_tokens: int = 0
    #: The session's message shape, and the internal messages behind ``messages`` (with
    #: their source records) when the shape is not ``chat``; see :meth:`provider_kwargs`.
    shape: str = "chat"
    originals: list[Message] | None = None
    #: Live messages left out that the request declares covered (``AssembleResult.covers``).
    covers: list[Any] = field(default_factory=list)
    #: Live messages left out and covered by nothing: the host marked them in the request.
    omitted: int = 0
    sent_messages: int = 0
    #: The uid-bearing messages the request's non-system part was built from (selections).
    sources: list[Message] | None = field(default=None, repr=False)
    #: The live position of each of ``sources`` (None: not live), found while resolving them.
    source_positions: list[int | None] | None = field(default=None, repr=False)

    def provider_kwargs(self) -> dict[str, Any]:
        """The request as keyword arguments of the session shape's SDK call.

        ``chat``: ``{"messages", "tools"}`` for ``chat.completions.create``;
        ``responses``: ``{"input", "instructions", "tools"}`` for ``responses.create``;
        ``anthropic``: ``{"system", "messages", "tools"}`` for ``messages.create``.
        """
        from ..shapes import to_provider

        if self.shape == "chat":
            return {"messages": self.messages, **({"tools": self.tools} if self.tools else {})}
        return to_provider(self.originals or self.messages, self.tools, self.shape)


@dataclass
class TurnReport:
    """What one turn did; returned by :meth:`Session.finish_turn`."""

    turn: int
    live_messages: int
    stored_messages: int
    request_tokens: int
    budget_tokens: int
    compactions: list[CompactionEvent]
    select_ms: float
    compress_ms: float
    engine_ms: float
    quarantined: bool
    mode: str
    engine: str = ""
    usage: dict[str, Any] | None = None
    invalid_results: int = 0
    host_ms: float = 0.0
    omitted_messages: int = 0  # live messages left out uncovered, summed over the requests
    requests_with_omissions: int = 0
    sent_messages: int = 0  # messages of the turn's last request (system head included)


@dataclass
class TurnStats:
    """Figures gathered during one turn, for its :class:`TurnReport`."""

    compactions: list[CompactionEvent] = field(default_factory=list)
    select_ms: float = 0.0
    compress_ms: float = 0.0
    engine_ms: float = 0.0
    usage: dict[str, Any] | None = None
    request_tokens: int = 0
    busy_ms: float = 0.0
    omitted_messages: int = 0
    requests_with_omissions: int = 0
    sent_messages: int = 0

"""The ``ContextEngine`` base class: the contract's info attributes and defaults.

Engines subclass it and implement the four abstract members. The host treats a
method as implemented only when the engine's class overrides the default
defined here (an identity check), so defaults cost nothing per request.
"""

from __future__ import annotations

import abc
import copy
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .thresholds import resolve_model_threshold

if TYPE_CHECKING:
    from .context import EngineContext
    from .models import CompactResult, HostRequirement


class ContextEngine(abc.ABC):
    """Base class for context engines.

    Construction: the host calls the class (or factory) with the keyword
    arguments it declares, out of ``config`` (the validated ``[engines.<name>]``
    block or None) and ``context`` (an :class:`EngineContext`).
    """

    # Info attributes.
    version: ClassVar[str] = "0"
    display_name: ClassVar[str] = ""
    owns_compaction: ClassVar[bool] = False
    turn_maintenance_mode: ClassVar[str] = "foreground"
    host_requirements: ClassVar[dict[str, HostRequirement | dict[str, Any]]] = {}
    config_model: ClassVar[type | None] = None
    #: The smallest conversation budget the engine can work with; the host refuses a
    #: session below it (or below its own floor), naming the numbers and the fix.
    min_budget_tokens: int = 0

    # Budget attributes the host reads.
    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75
    model_thresholds: dict[str, float] = {}
    # Read by the framework's host (current ABC): head and tail kept verbatim by its
    # preflight, and whether automatic compactions announce themselves.
    protect_first_n: int = 3
    protect_last_n: int = 6
    emit_automatic_compaction_status: bool = True

    def __init__(self, config: Any = None, context: EngineContext | None = None) -> None:
        self.config = config
        self.context = context
        self.model_thresholds = dict(type(self).model_thresholds)

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The engine id; equals its entry point name."""

    # Required methods.

    @abc.abstractmethod
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Record the token usage of the last provider call."""

    @abc.abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Say whether ``compress`` should run now."""

    @abc.abstractmethod
    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> list[dict[str, Any]] | CompactResult:
        """Return a shorter valid message list (or a ``CompactResult``)."""

    # Optional methods: defaults of the contract table.

    # Members of the framework's current ABC that ctxengine's runtime does not call;
    # the defaults are the framework's, so ABC plugins that rely on them keep working.

    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """``(should_compress, reason it is blocked or None)``."""
        return self.should_compress(prompt_tokens), None

    def prune_tool_results_only(
        self, messages: list[dict[str, Any]], current_tokens: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """No pruning by default: the messages and 0 pruned."""
        return messages, 0

    def cache_plan(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any
    ) -> Any:
        """None by default: the host keeps its prompt-cache plan."""
        return None

    def pending_compression_operation(self, messages: list[dict[str, Any]]) -> str | None:
        """None by default: the next compression is a generic one."""
        return None

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """False by default: preflight trusts its rough estimate."""
        return False

    def get_automatic_compaction_status_message(
        self, *, phase: str, default_message: str, **context: Any
    ) -> str | None:
        """The host's message, or None when the engine keeps compactions silent."""
        return default_message if self.emit_automatic_compaction_status else None

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        """True by default."""
        return True

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """No-op by default."""

    def bootstrap(
        self, session_id: str, messages: list[dict[str, Any]], runtime_settings: Any
    ) -> Any:
        """No-op by default."""
        return None

    def ingest(self, session_id: str, messages: list[dict[str, Any]]) -> Any:
        """No-op by default."""
        return None

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: Sequence[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
        runtime_settings: Any = None,
    ) -> Any:
        """No change by default."""
        return None

    def on_turn_complete(
        self, messages: Sequence[dict[str, Any]], usage: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """No-op by default."""

    def maintain(self, session_id: str, runtime_settings: Any, transcript: Any) -> Any:
        """No-op by default."""
        return None

    def should_compress_preflight(self, messages: Sequence[dict[str, Any]]) -> bool:
        """False by default."""
        return False

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        """Set the window and the threshold for ``model``.

        The configured ``threshold_percent`` is remembered on the first call so
        that a later model without a matching ``model_thresholds`` key returns to it.
        """
        if "_configured_threshold_percent" not in self.__dict__:
            self._configured_threshold_percent = self.threshold_percent
        self.context_length = int(context_length)
        matched = resolve_model_threshold(model, self.model_thresholds, provider)
        self.threshold_percent = (
            matched if matched is not None else self._configured_threshold_percent
        )
        self.threshold_tokens = int(self.context_length * self.threshold_percent)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """No tools by default."""
        return []

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Every tool is unknown by default."""
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def get_status(self) -> dict[str, Any]:
        """The standard token and threshold figures."""
        used = max(0, int(self.last_prompt_tokens or 0))
        percent = min(100.0, 100.0 * used / self.context_length) if self.context_length else 0.0
        return {
            "last_prompt_tokens": used,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": percent,
            "compression_count": self.compression_count,
        }

    def on_session_reset(self) -> None:
        """Zero the token counters and the compaction count."""
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """No-op by default."""

    def prepare_subagent_spawn(
        self, parent_session_id: str, child_session_id: str, context_mode: str, ttl_s: float | None
    ) -> Any:
        """No rollback needed by default. ``ttl_s``: the grant's time to live in seconds,
        None or 0 for no expiry (the host passes nothing else: :func:`ttl_problem`)."""
        return None

    def on_subagent_ended(self, child_session_id: str, reason: str) -> None:
        """No-op by default."""

    def clone_for_agent(self) -> ContextEngine:
        """A deep copy by default; override when holding connections or locks."""
        return copy.deepcopy(self)

    def dispose(self) -> None:
        """No-op by default."""


def ttl_problem(ttl: object) -> str | None:
    """Why ``ttl`` cannot be a sub-agent grant's time to live, or None. None and 0 mean
    no expiry; NaN, an infinity or a negative number has no meaning, and the stores
    disagreed on it (SQLite keeps NaN as no expiry, PostgreSQL as never active)."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        return f"must be a number (got {type(ttl).__name__})"
    if not math.isfinite(ttl) or ttl < 0:
        return f"must be finite and 0 or more (got {ttl!r}; 0 or none: no expiry)"
    return None

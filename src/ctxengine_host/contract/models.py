"""Pydantic models exchanged between the host and engines.

Results are what engines may return (the host also accepts plain lists where
the contract allows); settings and info models describe the run to the engine.
Every model ignores unknown fields so older hosts accept newer engines' results.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

Message = dict[str, Any]

#: Fields the host stores with a message that never go to a provider.
PERSISTENCE_ONLY_FIELDS: frozenset[str] = frozenset(
    {"message_uid", "_absorbed_message_uids", "_tool_call_uids", "_tool_call_uid"}
)

#: Capabilities the full ctxengine runtime offers engines.
HOST_CAPABILITIES: frozenset[str] = frozenset(
    {
        "bootstrap",
        "assemble-before-prompt",
        "after-turn",
        "maintain",
        "compact",
        "summarizer",
        "subagents",
    }
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)


class AssembleResult(_Model):
    """What ``select_context`` may return: the messages of one request."""

    messages: list[Message]
    estimated_tokens: NonNegativeInt = 0
    system_prompt_addition: str | None = None
    prompt_authority: Literal["assembled", "preassembly_may_overflow"] = "assembled"
    #: Live messages left out of ``messages`` that the request still represents (in a
    #: summary it sends): message uids, or inclusive ``(first_uid, last_uid)`` ranges in
    #: live order. Live messages neither sent nor covered get the host's omission marker.
    covers: list[str | tuple[str, str]] = Field(default_factory=list)


class CompactResult(_Model):
    """What ``compress`` may return instead of a bare list.

    When ``messages`` is set it replaces the live view; when it is None the
    engine keeps the history itself (``owns_compaction`` engines).
    """

    ok: bool = True
    compacted: bool = False
    reason: str | None = None
    tokens_before: NonNegativeInt | None = None
    tokens_after: NonNegativeInt | None = None
    messages: list[Message] | None = None


class IngestResult(_Model):
    """What ``ingest`` may return."""

    ingested: bool = True
    count: NonNegativeInt = 0


class BootstrapResult(_Model):
    """What ``bootstrap`` may return."""

    bootstrapped: bool = True
    imported_messages: NonNegativeInt = 0
    reason: str | None = None


class MaintenanceResult(_Model):
    """What ``maintain`` may return."""

    changed: bool = False
    bytes_freed: NonNegativeInt = 0
    rewritten_entries: NonNegativeInt = 0
    reason: str | None = None


class HostRequirement(_Model):
    """An engine's requirement for one operation: capabilities it cannot do without."""

    capabilities: list[str]
    message: str = ""


class RuntimeInfo(_Model):
    mode: Literal["normal", "fallback", "degraded"] = "normal"


class ModelInfo(_Model):
    name: str | None = None
    provider: str | None = None
    context_length: int | None = None


class EngineSelection(_Model):
    selected: str | None = None
    source: Literal["flag", "env", "config", "default", "explicit"] | None = None


class Limits(_Model):
    budget_tokens: int | None = None
    max_output_tokens: int | None = None


class RuntimeSettings(_Model):
    """What the host tells an engine about the run; unknown values are None."""

    schema_version: Literal[1] = 1
    runtime: RuntimeInfo = Field(default_factory=RuntimeInfo)
    model: ModelInfo = Field(default_factory=ModelInfo)
    engine_selection: EngineSelection = Field(default_factory=EngineSelection)
    execution_host: str | None = None
    limits: Limits = Field(default_factory=Limits)
    diagnostics: dict[str, Any] | None = None


class EngineInfo(_Model):
    """The info attributes of an engine, as read from its instance."""

    name: str
    version: str = "0"
    display_name: str = ""
    owns_compaction: bool = False
    turn_maintenance_mode: Literal["foreground", "background"] = "foreground"
    host_requirements: dict[str, HostRequirement] = Field(default_factory=dict)
    has_config_model: bool = False


class SummaryResult(_Model):
    """What the summarizer service returns: the text and the escalation level used.

    Levels: 0 normal, 1 aggressive, 2 deterministic truncation.
    """

    text: str
    level: Literal[0, 1, 2] = 0
    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    backend: str = ""

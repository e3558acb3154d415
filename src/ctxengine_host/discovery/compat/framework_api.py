"""Module-level helpers of the framework's ABC modules, with the framework's signatures.

Plugins import these from ``agent.context_engine`` and ``agent.context_compressor``
(hermes-agent, ``agent/context_engine.py`` and ``agent/context_compressor.py`` at
commit 114a56dca2ef; docs/compat.md). The shim modules export them when the
framework is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...contract.thresholds import resolve_model_threshold as _match_threshold

#: Longest memory-provider text handed to an engine (head and tail kept).
MEMORY_CONTEXT_MAX_CHARS = 6_000
_HEAD_CHARS = 4_000
_TAIL_CHARS = 1_500
_ELISION = "\n...[memory provider context truncated]...\n"


def resolve_model_threshold(
    model: str,
    model_thresholds: Mapping[str, float] | None,
    default: float,
    provider: str = "",
) -> float:
    """The threshold of the longest ``model_thresholds`` key found in ``model``, else ``default``
    (``provider:substring`` keys apply on that provider only)."""
    matched = _match_threshold(model, model_thresholds, (provider or "").strip().lower())
    return default if matched is None else matched


def sanitize_memory_context(memory_context: str) -> str:
    """The memory-provider text, stripped and cut to :data:`MEMORY_CONTEXT_MAX_CHARS`."""
    text = (memory_context or "").strip()
    if len(text) <= MEMORY_CONTEXT_MAX_CHARS:
        return text
    return text[:_HEAD_CHARS] + _ELISION + text[-_TAIL_CHARS:]


def automatic_compaction_status_message(
    engine: Any, *, phase: str, default_message: str, **context: Any
) -> str | None:
    """The status line a host shows for an automatic compaction, or None to show nothing."""
    if not getattr(engine, "emit_automatic_compaction_status", True):
        return None
    formatter = getattr(engine, "get_automatic_compaction_status_message", None)
    message = (
        formatter(phase=phase, default_message=default_message, **context)
        if callable(formatter)
        else default_message
    )
    if message is None:
        return None
    return str(message).strip() or None

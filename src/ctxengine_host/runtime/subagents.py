"""Sub-agent sessions: spawning a child (``isolated`` or ``fork``) and telling the parent it ended.

The parent's engine may prepare the spawn and return a rollback callable; the
rollback runs when opening the child fails, and the error is raised. Locks are
taken parent → child only: a child tells its parent it ended outside its own lock.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, TypeVar

from ..contract.engine import ttl_problem
from .parts import SubagentParent

log = logging.getLogger("ctxengine.runtime")

SUBAGENT_MODES = ("isolated", "fork")

Child = TypeVar("Child")


def spawn_subagent(
    parent: SubagentParent[Child],
    mode: str,
    ttl_s: float | None,
    *,
    system_prompt: str | None,
    tools: list[dict[str, Any]] | None,
) -> Child:
    """Open a child session of ``parent`` (the caller holds the parent's lock)."""
    if mode not in SUBAGENT_MODES:
        raise ValueError(f"sub-agent mode must be 'isolated' or 'fork', got {mode!r}")
    if (problem := ttl_problem(ttl_s)) is not None:
        raise ValueError(f"ttl_s {problem}")
    guard = parent.guard
    child_id = f"{parent.session_id}/sub-{uuid.uuid4().hex[:12]}"
    rollback = None
    if guard.implements("prepare_subagent_spawn"):
        rollback = parent.engine_call(
            "prepare_subagent_spawn",
            parent_session_id=parent.session_id,
            child_session_id=child_id,
            context_mode=mode,
            ttl_s=ttl_s,
        )
        if rollback is not None and not callable(rollback):
            guard.note_invalid("prepare_subagent_spawn", "not callable or None")
            rollback = None
    try:
        return parent.host._open(
            child_id,
            system_prompt=parent.system_prompt if system_prompt is None else system_prompt,
            tools=parent.caller_tools if tools is None else tools,
            parent=parent,
            fork_from=[e.message for e in parent.live.entries] if mode == "fork" else None,
        )
    except BaseException:
        if callable(rollback):
            try:
                rollback()
            except Exception:
                log.exception("sub-agent rollback of %s raised", child_id)
        raise


def notify_child_ended(parent: SubagentParent[Any], child_id: str, reason: str) -> None:
    """The parent's side of a child ending: ``on_subagent_ended`` unless the parent ended."""
    if not parent.ended and parent.guard.implements("on_subagent_ended"):
        parent.engine_call("on_subagent_ended", child_session_id=child_id, reason=reason)

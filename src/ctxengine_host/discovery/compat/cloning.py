"""Per-agent engine instances where the framework makes fresh ones.

The framework's directory loader imports a plugin and runs its ``register(ctx)``
for each agent, so every agent gets a newly constructed engine; only engines
registered through the general plugin system are deep-copied. Engines holding
a database connection or a lock cannot be deep-copied, and were quarantined at
every session open here. So:

* a directory engine's ``clone_for_agent()`` constructs a fresh instance with
  its factory (as the framework's directory loader does);
* an engine that keeps the inherited deep-copy ``clone_for_agent`` gets a fresh
  instance when the copy fails.

An engine that overrides ``clone_for_agent`` itself is left alone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("ctxengine.compat")


def _inherits_default_clone(engine: Any) -> bool:
    """True when ``clone_for_agent`` is a ``ContextEngine`` base's deep copy (ours or the
    framework's), or absent."""
    owner = next((k for k in type(engine).__mro__ if "clone_for_agent" in vars(k)), None)
    return owner is None or owner.__name__ == "ContextEngine"


def give_fresh_clones(engine: Any, remake: Callable[[], Any], *, always: bool) -> None:
    """Make ``engine.clone_for_agent()`` construct with ``remake`` (``always``) or fall
    back to it when the inherited deep copy fails."""
    if not always and not _inherits_default_clone(engine):
        return
    method = getattr(type(engine), "clone_for_agent", None)  # the class's, not a wrapper
    inherited = method.__get__(engine) if callable(method) else None

    def clone_for_agent() -> Any:
        if not always and inherited is not None:
            try:
                clone = inherited()
            except Exception as exc:  # deepcopy of a connection, a lock, a client
                log.info(
                    "engine %s cannot be deep-copied (%s: %s); constructing a fresh one",
                    type(engine).__name__,
                    type(exc).__name__,
                    exc,
                )
            else:
                if clone is not engine:
                    give_fresh_clones(clone, remake, always=False)
                return clone
        fresh = remake()
        give_fresh_clones(fresh, remake, always=always)
        return fresh

    # With __slots__ or a read-only attribute the engine's own clone is used.
    with contextlib.suppress(AttributeError, TypeError):
        engine.clone_for_agent = clone_for_agent


def clone_problems(engine: Any) -> list[str]:
    """Problems making a per-agent clone, as a session open would (the clone is disposed)."""
    try:
        clone = engine.clone_for_agent()
    except Exception as exc:
        return [
            f"clone_for_agent() raised {type(exc).__name__}: {exc}; override clone_for_agent "
            f"to return a fresh engine sharing the backend (a deep copy cannot copy "
            f"connections or locks)"
        ]
    from ...contract.signatures import missing_required

    if clone is None or missing_required(clone):
        return [f"clone_for_agent() returned {type(clone).__name__}, not an engine"]
    if clone is not engine:
        dispose = getattr(clone, "dispose", None)
        if callable(dispose):
            try:
                dispose()
            except Exception as exc:
                return [f"dispose() of a clone raised {type(exc).__name__}: {exc}"]
    return []

"""The contract test kit for engine authors (``pip install ctxengine-host[testing]``).

Subclass :class:`ContextEngineContract` and override its ``engine`` fixture;
every rule of the contract an engine is responsible for becomes a test whose
failure message starts with ``[contract: <rule>]``. See docs/authoring.md.

The names below are imported on first use (PEP 562): a host or benchmark that only
wants :func:`~ctxengine_host.testing.context.kit_engine_context` does not load pytest,
the host runtime and what they import (~16 MiB of resident memory).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .contract import ContextEngineContract
    from .rules import RULES, ContractViolation
    from .schemas import tool_schema_problems

__all__ = ["RULES", "ContextEngineContract", "ContractViolation", "tool_schema_problems"]

#: Where each public name lives (a submodule of this package).
_HOMES = {
    "ContextEngineContract": "contract",
    "RULES": "rules",
    "ContractViolation": "rules",
    "tool_schema_problems": "schemas",
}


def __getattr__(name: str) -> Any:
    """Import a public name's submodule when the name is first asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value

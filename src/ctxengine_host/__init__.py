"""ctxengine host: the context-engine contract, discovery, the slot and the runtime.

Importing this package is cheap: public names are imported on first use
(``_LAZY`` maps each name to its module), so ``ctxengine engines`` does not pay
for pydantic, pluggy or tiktoken.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:  # what a type checker sees; at run time ``__getattr__`` imports lazily
    from .aio import AsyncContextHost, AsyncSession
    from .config import ConfigError, LoadedConfig, load_config
    from .context import EngineContext
    from .discovery import EngineEntry, list_engines
    from .engine import ContextEngine
    from .hookspecs import hookimpl
    from .host import ContextHost
    from .models import (
        HOST_CAPABILITIES,
        PERSISTENCE_ONLY_FIELDS,
        AssembleResult,
        BootstrapResult,
        CompactResult,
        EngineInfo,
        HostRequirement,
        IngestResult,
        MaintenanceResult,
        RuntimeSettings,
        SummaryResult,
    )
    from .session import CompactionEvent, ProviderRequest, Session, TurnReport
    from .slot import EngineSelectionError, ResolvedEngine, SlotChoice, choose_slot, resolve_engine
    from .tokens import TokenCounter
    from .validation import validate_engine

_LAZY: dict[str, str] = {
    "ContextEngine": "ctxengine_host.engine",
    "EngineContext": "ctxengine_host.context",
    "hookimpl": "ctxengine_host.hookspecs",
    "AssembleResult": "ctxengine_host.models",
    "BootstrapResult": "ctxengine_host.models",
    "CompactResult": "ctxengine_host.models",
    "EngineInfo": "ctxengine_host.models",
    "HostRequirement": "ctxengine_host.models",
    "IngestResult": "ctxengine_host.models",
    "MaintenanceResult": "ctxengine_host.models",
    "RuntimeSettings": "ctxengine_host.models",
    "SummaryResult": "ctxengine_host.models",
    "HOST_CAPABILITIES": "ctxengine_host.models",
    "PERSISTENCE_ONLY_FIELDS": "ctxengine_host.models",
    "TokenCounter": "ctxengine_host.tokens",
    "load_config": "ctxengine_host.config",
    "LoadedConfig": "ctxengine_host.config",
    "ConfigError": "ctxengine_host.config",
    "EngineEntry": "ctxengine_host.discovery",
    "list_engines": "ctxengine_host.discovery",
    "SlotChoice": "ctxengine_host.slot",
    "ResolvedEngine": "ctxengine_host.slot",
    "EngineSelectionError": "ctxengine_host.slot",
    "choose_slot": "ctxengine_host.slot",
    "resolve_engine": "ctxengine_host.slot",
    "validate_engine": "ctxengine_host.validation",
    "ContextHost": "ctxengine_host.host",
    "AsyncContextHost": "ctxengine_host.aio",
    "AsyncSession": "ctxengine_host.aio",
    "Session": "ctxengine_host.session",
    "ProviderRequest": "ctxengine_host.session",
    "TurnReport": "ctxengine_host.session",
    "CompactionEvent": "ctxengine_host.session",
}

# Written out (not derived from _LAZY) so that linters and type checkers see it;
# tests/host_core checks the two agree.
__all__ = [
    "HOST_CAPABILITIES",
    "PERSISTENCE_ONLY_FIELDS",
    "AssembleResult",
    "AsyncContextHost",
    "AsyncSession",
    "BootstrapResult",
    "CompactResult",
    "CompactionEvent",
    "ConfigError",
    "ContextEngine",
    "ContextHost",
    "EngineContext",
    "EngineEntry",
    "EngineInfo",
    "EngineSelectionError",
    "HostRequirement",
    "IngestResult",
    "LoadedConfig",
    "MaintenanceResult",
    "ProviderRequest",
    "ResolvedEngine",
    "RuntimeSettings",
    "Session",
    "SlotChoice",
    "SummaryResult",
    "TokenCounter",
    "TurnReport",
    "__version__",
    "choose_slot",
    "hookimpl",
    "list_engines",
    "load_config",
    "resolve_engine",
    "validate_engine",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxengine_host' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

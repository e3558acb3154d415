"""ctxengine host: the context-engine contract, discovery, the slot and the runtime.

Importing this package is cheap: public names are imported on first use
(``_LAZY`` maps each name to its module), so ``ctxengine engines`` does not pay
for pydantic, pluggy or tiktoken.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import _moved
from ._version import __version__

_moved.install()  # old module paths (before the subpackages) keep working until 0.2.0

if TYPE_CHECKING:  # what a type checker sees; at run time ``__getattr__`` imports lazily
    from .config import ConfigError, LoadedConfig, load_config
    from .contract.context import EngineContext
    from .contract.engine import ContextEngine
    from .contract.hookspecs import hookimpl
    from .contract.models import (
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
    from .discovery.engines import EngineEntry, list_engines
    from .discovery.slot import (
        EngineSelectionError,
        ResolvedEngine,
        SlotChoice,
        choose_slot,
        resolve_engine,
    )
    from .discovery.validation import validate_engine
    from .runtime.aio import AsyncContextHost, AsyncSession
    from .runtime.host import ContextHost
    from .runtime.session import CompactionEvent, ProviderRequest, Session, TurnReport
    from .tokens import TokenCounter

_LAZY: dict[str, str] = {
    "ContextEngine": "ctxengine_host.contract.engine",
    "EngineContext": "ctxengine_host.contract.context",
    "hookimpl": "ctxengine_host.contract.hookspecs",
    "AssembleResult": "ctxengine_host.contract.models",
    "BootstrapResult": "ctxengine_host.contract.models",
    "CompactResult": "ctxengine_host.contract.models",
    "EngineInfo": "ctxengine_host.contract.models",
    "HostRequirement": "ctxengine_host.contract.models",
    "IngestResult": "ctxengine_host.contract.models",
    "MaintenanceResult": "ctxengine_host.contract.models",
    "RuntimeSettings": "ctxengine_host.contract.models",
    "SummaryResult": "ctxengine_host.contract.models",
    "HOST_CAPABILITIES": "ctxengine_host.contract.models",
    "PERSISTENCE_ONLY_FIELDS": "ctxengine_host.contract.models",
    "TokenCounter": "ctxengine_host.tokens",
    "load_config": "ctxengine_host.config",
    "LoadedConfig": "ctxengine_host.config",
    "ConfigError": "ctxengine_host.config",
    "EngineEntry": "ctxengine_host.discovery.engines",
    "list_engines": "ctxengine_host.discovery.engines",
    "SlotChoice": "ctxengine_host.discovery.slot",
    "ResolvedEngine": "ctxengine_host.discovery.slot",
    "EngineSelectionError": "ctxengine_host.discovery.slot",
    "choose_slot": "ctxengine_host.discovery.slot",
    "resolve_engine": "ctxengine_host.discovery.slot",
    "validate_engine": "ctxengine_host.discovery.validation",
    "ContextHost": "ctxengine_host.runtime.host",
    "AsyncContextHost": "ctxengine_host.runtime.aio",
    "AsyncSession": "ctxengine_host.runtime.aio",
    "Session": "ctxengine_host.runtime.session",
    "ProviderRequest": "ctxengine_host.runtime.session",
    "TurnReport": "ctxengine_host.runtime.session",
    "CompactionEvent": "ctxengine_host.runtime.session",
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

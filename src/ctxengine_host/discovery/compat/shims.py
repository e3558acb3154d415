"""The framework's import paths, for plugins written against its ABC.

Framework-style engines do ``from agent.context_engine import ContextEngine``,
``from agent.context_compressor import resolve_model_threshold`` and
``from agent.auxiliary_client import call_llm``. A meta-path finder placed
*last* on ``sys.meta_path`` answers the first two only when no real module of
that name can be found, so an installed framework's ABC always wins; the
auxiliary client is always ours (:func:`route_auxiliary_client`), so a plugin's
summaries go through our summarizer, never to a provider. The shim's
``ContextEngine`` is ours: the host's identity check of
inherited defaults then works for such engines too.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType

SHIM_MARKER = "__ctxengine_shim__"
AUXILIARY_CLIENT = "agent.auxiliary_client"
ROUTED_MARKER = "__ctxengine_routed__"


def _fill_context_engine(module: ModuleType) -> None:
    from ...contract.engine import ContextEngine
    from . import framework_api

    vars(module).update(
        ContextEngine=ContextEngine,
        sanitize_memory_context=framework_api.sanitize_memory_context,
        automatic_compaction_status_message=framework_api.automatic_compaction_status_message,
        MEMORY_CONTEXT_MAX_CHARS=framework_api.MEMORY_CONTEXT_MAX_CHARS,
    )


def _fill_context_compressor(module: ModuleType) -> None:
    from . import framework_api

    vars(module).update(resolve_model_threshold=framework_api.resolve_model_threshold)


def _fill_auxiliary_client(module: ModuleType) -> None:
    from . import auxiliary

    for name in auxiliary.EXPORTS:
        setattr(module, name, getattr(auxiliary, name))


_SHIMS = {
    "agent": None,
    "agent.context_engine": _fill_context_engine,
    "agent.context_compressor": _fill_context_compressor,
    "agent.auxiliary_client": _fill_auxiliary_client,
}


class _ShimLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        setattr(module, SHIM_MARKER, True)
        fill = _SHIMS[module.__name__]
        if fill is not None:
            fill(module)


class FrameworkShimFinder(importlib.abc.MetaPathFinder):
    """Finds the shim modules; asked only after every real finder said no."""

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[override]
        if fullname not in _SHIMS:
            return None
        return importlib.util.spec_from_loader(
            fullname, _ShimLoader(), is_package=fullname == "agent"
        )


_lock = threading.Lock()


def install_framework_shims() -> None:
    """Make the framework's import paths importable (idempotent; real modules win)."""
    with _lock:
        if not any(isinstance(f, FrameworkShimFinder) for f in sys.meta_path):
            sys.meta_path.append(FrameworkShimFinder())


def route_auxiliary_client() -> None:
    """Make ``agent.auxiliary_client``'s LLM calls ours, so plugins loaded by ctxengine
    summarize through our summarizer and never reach a framework provider.

    Without the framework, the shim module is ours. With it, the framework's module
    stays (its other members are imported by the framework's own modules) and its
    ``call_llm`` / ``async_call_llm`` are replaced by ours in this process.
    """
    install_framework_shims()
    with _lock:
        module = importlib.import_module(AUXILIARY_CLIENT)
        if is_shim(module) or getattr(module, ROUTED_MARKER, False):
            return
        from . import auxiliary

        for name in auxiliary.ROUTED:
            setattr(module, name, getattr(auxiliary, name))
        setattr(module, ROUTED_MARKER, True)


def fill_framework_gaps() -> None:
    """Give an installed framework the module-level helpers of the current ABC it lacks.

    The released package (0.19.0) has no ``agent.context_compressor.resolve_model_threshold``;
    plugins written for the current ABC import it. Existing members are never replaced.
    """
    from . import framework_api

    for module_name, members in _CURRENT_HELPERS.items():
        module = importlib.import_module(module_name)
        if is_shim(module):
            continue
        for member in members:
            if not hasattr(module, member):
                setattr(module, member, getattr(framework_api, member))


_CURRENT_HELPERS = {
    "agent.context_compressor": ("resolve_model_threshold",),
    "agent.context_engine": ("sanitize_memory_context", "automatic_compaction_status_message"),
}


def uninstall_framework_shims() -> None:
    """Remove the finder and any shim modules already imported (for tests)."""
    with _lock:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, FrameworkShimFinder)]
        for name in list(_SHIMS):
            if getattr(sys.modules.get(name), SHIM_MARKER, False):
                del sys.modules[name]


def is_shim(module: ModuleType | None) -> bool:
    """True when ``module`` is one of our stand-ins rather than the real framework."""
    return bool(getattr(module, SHIM_MARKER, False))

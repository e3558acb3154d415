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


def _fill_context_engine(module: ModuleType) -> None:
    from ..engine import ContextEngine
    from . import framework_api

    module.ContextEngine = ContextEngine
    module.sanitize_memory_context = framework_api.sanitize_memory_context
    module.automatic_compaction_status_message = framework_api.automatic_compaction_status_message
    module.MEMORY_CONTEXT_MAX_CHARS = framework_api.MEMORY_CONTEXT_MAX_CHARS


def _fill_context_compressor(module: ModuleType) -> None:
    from . import framework_api

    module.resolve_model_threshold = framework_api.resolve_model_threshold


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
    """Put our ``agent.auxiliary_client`` in place of any other, so plugins loaded by
    ctxengine summarize through our summarizer and never reach a framework provider."""
    with _lock:
        current = sys.modules.get(AUXILIARY_CLIENT)
        if current is not None and is_shim(current):
            return
        spec = importlib.util.spec_from_loader(AUXILIARY_CLIENT, _ShimLoader())
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        sys.modules[AUXILIARY_CLIENT] = module
        parent = sys.modules.get("agent")
        if parent is not None:
            parent.auxiliary_client = module  # type: ignore[attr-defined]


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

"""The framework's import paths, for plugins written against its ABC.

Framework-style engines do ``from agent.context_engine import ContextEngine``
(and sometimes ``from agent.context_compressor import resolve_model_threshold``).
A meta-path finder placed *last* on ``sys.meta_path`` answers those names only
when no real module of that name can be found, so an installed framework
always wins. The shim's ``ContextEngine`` is ours: the host's identity check of
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


def _fill_context_engine(module: ModuleType) -> None:
    from ..engine import ContextEngine

    module.ContextEngine = ContextEngine


def _fill_context_compressor(module: ModuleType) -> None:
    from ..thresholds import resolve_model_threshold

    module.resolve_model_threshold = resolve_model_threshold


_SHIMS = {
    "agent": None,
    "agent.context_engine": _fill_context_engine,
    "agent.context_compressor": _fill_context_compressor,
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

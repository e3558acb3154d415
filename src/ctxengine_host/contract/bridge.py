"""Registering an engine instance with pluggy.

Engines are plain classes: their methods are not decorated and may declare a
subset of a hookspec's parameters, keyword-only ones included, which pluggy
alone would not pass. For each method an engine implements, a bridge function
is generated with the hookspec's full parameter list; it forwards to the
engine method with exactly the parameters that method declares
(:func:`ctxengine_host.contract.signatures.call_declared`).

Going through a ``PluginManager`` lets plugins of the ``ctxengine.plugins``
group observe every engine call with ``wrapper=True`` hook implementations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from .hookspecs import PROJECT_NAME, ContractSpec, hookimpl
from .signatures import call_declared, implemented_methods, spec_parameters


def _make_forwarder(method: str, target: Callable[..., Any]) -> Callable[..., Any]:
    """A function named like the hook, with the hookspec's parameters, calling ``target``."""
    params = spec_parameters(method)
    arglist = ", ".join(params)
    mapping = ", ".join(f"{p!r}: {p}" for p in params)
    namespace: dict[str, Any] = {"_call": call_declared, "_target": target}
    source = f"def {method}({arglist}):\n    return _call(_target, {{{mapping}}})\n"
    exec(compile(source, f"<ctxengine bridge {method}>", "exec"), namespace)
    return hookimpl(namespace[method])


class EngineBridge:
    """A pluggy plugin object exposing one engine's implemented methods as hookimpls."""

    def __init__(self, engine: object, methods: Iterable[str]) -> None:
        self.engine = engine
        for method in methods:
            setattr(self, method, _make_forwarder(method, getattr(engine, method)))


def engine_plugin_manager(
    engine: object, observers: Iterable[object] = (), methods: Iterable[str] | None = None
) -> pluggy.PluginManager:
    """A plugin manager whose contract hooks reach ``engine``, observed by ``observers``.

    ``methods`` defaults to the methods the engine implements; the host adds
    the base-class defaults it wants routed through hooks too.
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(ContractSpec)
    chosen = implemented_methods(engine) if methods is None else frozenset(methods)
    pm.register(EngineBridge(engine, sorted(chosen)), name="engine")
    for index, observer in enumerate(observers):
        pm.register(observer, name=f"observer-{index}")
    return pm

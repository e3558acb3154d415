"""The ``ctxengine.plugins`` entry point group: observers and summarizer backends.

A plugin is a module (or a class, instantiated without arguments) with pluggy
hook implementations marked by :data:`ctxengine_host.contract.hookspecs.hookimpl`:

* ``wrapper=True`` (or old-style ``hookwrapper=True``) implementations of the
  contract hooks observe every engine call (timing, tracing). A plugin that
  implements a contract hook any other way is rejected: only the slot's engine
  owns context.
* ``ctxengine_summarize`` provides a summarizer
  (:class:`~ctxengine_host.contract.hookspecs.PluginSpec`).

``CTXENGINE_LOAD_PLUGINS`` / ``CTXENGINE_BLOCK_PLUGINS`` apply here as to engines.
A plugin that fails to import is skipped with a warning; the host carries on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .engines import PLUGIN_GROUP, EntryPointRecord, PluginPolicy, scan_entry_points

logger = logging.getLogger("ctxengine.plugins")


@dataclass
class LoadedPlugins:
    """Plugins imported and accepted, and one message per plugin that was not."""

    plugins: list[tuple[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def objects(self) -> list[Any]:
        return [obj for _, obj in self.plugins]


_cache: dict[tuple[Any, ...], LoadedPlugins] = {}


def clear_cache() -> None:
    """Forget loaded plugins (tests, or after installing plugins in-process)."""
    _cache.clear()


def plugin_entries(
    path: Sequence[str] | None = None, policy: PluginPolicy | None = None
) -> list[tuple[EntryPointRecord, str | None]]:
    """Every ``ctxengine.plugins`` entry point and why it may not load (None: it may)."""
    policy = policy or PluginPolicy.from_env()
    return [
        (rec, policy.refusal(rec.name, rec.distribution))
        for rec in scan_entry_points(PLUGIN_GROUP, path)
    ]


def load_plugins(
    path: Sequence[str] | None = None, policy: PluginPolicy | None = None
) -> LoadedPlugins:
    """Import every allowed plugin once per process."""
    policy = policy or PluginPolicy.from_env()
    key = (None if path is None else tuple(path), policy)
    if key not in _cache:
        _cache[key] = _load(plugin_entries(path, policy))
    return _cache[key]


def _load(entries: list[tuple[EntryPointRecord, str | None]]) -> LoadedPlugins:
    import importlib.metadata
    import inspect

    result = LoadedPlugins()
    for rec, refusal in entries:
        label = f"plugin '{rec.name}' ({rec.distribution})"
        if refusal is not None:
            logger.info("%s not loaded: %s", label, refusal)
            continue
        try:
            obj = importlib.metadata.EntryPoint(rec.name, rec.value, PLUGIN_GROUP).load()
            if inspect.isclass(obj):
                obj = obj()
        except Exception as exc:
            problem = f"{label} failed to load {rec.value}: {type(exc).__name__}: {exc}"
            logger.warning(problem)
            result.problems.append(problem)
            continue
        owning = context_owning_hooks(obj)
        if owning:
            problem = (
                f"{label} rejected: it implements {', '.join(owning)} without wrapper=True; "
                f"plugins may only observe contract hooks (only the slot's engine owns context)"
            )
            logger.warning(problem)
            result.problems.append(problem)
            continue
        result.plugins.append((rec.name, obj))
    return result


def context_owning_hooks(plugin: Any) -> list[str]:
    """Contract hooks ``plugin`` implements other than as a wrapper."""
    import pluggy

    from ..contract.hookspecs import CONTRACT_METHODS, PROJECT_NAME

    parser = pluggy.PluginManager(PROJECT_NAME)
    owning = []
    for name in CONTRACT_METHODS:
        opts = parser.parse_hookimpl_opts(plugin, name)
        if opts is not None and not (opts.get("wrapper") or opts.get("hookwrapper")):
            owning.append(name)
    return owning


def summarizer_plugin_manager(plugins: LoadedPlugins | None = None) -> Any:
    """A plugin manager for :class:`PluginSpec` hooks (``ctxengine_summarize``)."""
    import pluggy

    from ..contract.hookspecs import PROJECT_NAME, PluginSpec

    plugins = load_plugins() if plugins is None else plugins
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(PluginSpec)
    for name, obj in plugins.plugins:
        pm.register(obj, name=name)
    return pm


def observers(plugins: LoadedPlugins | None = None) -> list[Any]:
    """Plugin objects to pass as ``observers`` to ``bridge.engine_plugin_manager``."""
    return (load_plugins() if plugins is None else plugins).objects

"""Loading framework-style plugin directories unchanged.

Such a directory holds ``plugin.yaml`` (or ``plugin.toml``) and an
``__init__.py`` that either exports a ``ContextEngine`` subclass or defines
``register(ctx)``. Its name may contain hyphens and its modules use relative
imports, so it is imported as a package under a synthetic, valid module name.
``register(ctx)`` may also make registration calls for things ctxengine does
not have (hooks, commands, tools, ...): those are accepted and noted in the log.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from ..loading import EngineLoadError, EngineRegistrar
from ..manifest import read_manifest
from .shims import fill_framework_gaps, install_framework_shims, route_auxiliary_client

log = logging.getLogger("ctxengine.compat")

#: The package every directory plugin is imported under.
PLUGIN_PACKAGE = "ctxengine_dir_plugins"
MANIFESTS = ("plugin.toml", "plugin.yaml")


def synthetic_module_name(name: str) -> str:
    """A valid dotted module name for a plugin called ``name`` (hyphens and all)."""
    safe = re.sub(r"\W", "_", name)
    if safe[:1].isdigit():
        safe = "_" + safe
    return f"{PLUGIN_PACKAGE}.{safe}"


def _parent_package() -> ModuleType:
    parent = sys.modules.get(PLUGIN_PACKAGE)
    if parent is None:
        parent = ModuleType(PLUGIN_PACKAGE, "Framework-style plugin directories, imported.")
        parent.__path__ = []  # a package with no files of its own
        sys.modules[PLUGIN_PACKAGE] = parent
    return parent


def import_plugin_package(directory: Path, name: str | None = None) -> ModuleType:
    """Import ``directory`` as a package, with the framework's import paths available.

    Importing the same directory twice returns the module already imported.
    """
    directory = Path(directory).resolve()
    init = directory / "__init__.py"
    if not init.is_file():
        raise EngineLoadError(
            f"{directory}: no __init__.py; it must export the engine class or define register(ctx)"
        )
    install_framework_shims()
    route_auxiliary_client()
    fill_framework_gaps()
    module_name = synthetic_module_name(name or directory.name)
    existing = sys.modules.get(module_name)
    if existing is not None:
        if Path(getattr(existing, "__file__", "")).resolve() == init:
            return existing
        _forget(module_name)  # another directory under the same name: drop its modules
    spec = importlib.util.spec_from_file_location(
        module_name, init, submodule_search_locations=[str(directory)]
    )
    if spec is None or spec.loader is None:
        raise EngineLoadError(f"{directory}: cannot be imported as a package")
    _parent_package()
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        _forget(module_name)
        raise
    setattr(_parent_package(), module_name.rpartition(".")[2], module)
    return module


def _forget(module_name: str) -> None:
    """Remove a plugin package and its submodules from ``sys.modules``."""
    for name in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
        del sys.modules[name]


#: The registration calls of the framework's plugin ``ctx`` (hermes-agent 0.19.0,
#: ``hermes_cli/plugins.py`` ``PluginContext``); all but ``register_context_engine``
#: are accepted and noted, since ctxengine has no use for them.
FRAMEWORK_REGISTRATIONS = (
    "register_tool",
    "register_cli_command",
    "register_command",
    "register_image_gen_provider",
    "register_dashboard_auth_provider",
    "register_video_gen_provider",
    "register_web_search_provider",
    "register_browser_provider",
    "register_secret_source",
    "register_tts_provider",
    "register_transcription_provider",
    "register_platform",
    "register_slack_action_handler",
    "register_auxiliary_task",
    "register_hook",
    "register_middleware",
    "register_skill",
    "register_memory_provider",
)


class PluginRegistrar(EngineRegistrar):
    """The ``ctx`` a plugin's ``register(ctx)`` receives.

    ``register_context_engine`` is the call that matters; every other call of the
    framework's plugin context (:data:`FRAMEWORK_REGISTRATIONS`, ``inject_message``,
    ``dispatch_tool``, and any later ``register_*``) is accepted and noted.
    """

    def __init__(
        self,
        name: str,
        config: Any = None,
        context: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(name, config, context)
        self.notes: list[str] = []
        self.logger = logging.getLogger(f"ctxengine.plugin.{name}")
        data = dict(manifest or {})
        self.manifest = SimpleNamespace(
            name=data.get("name") or name,
            key=name,
            version=str(data.get("version") or ""),
            description=data.get("description") or "",
            author=data.get("author") or "",
            provides_tools=list(data.get("provides_tools") or []),
            provides_hooks=list(data.get("provides_hooks") or []),
            requires_env=list(data.get("requires_env") or []),
            source="user",
            kind=data.get("kind") or "standalone",
            path=data.get("path"),
        )

    def _ignored(self, call: str, what: Any) -> None:
        note = (
            f"plugin '{self.name}' called ctx.{call}({what!r}); ctxengine does not use "
            f"this registration, so it is ignored (only register_context_engine matters)"
        )
        self.notes.append(note)
        log.info(note)

    @property
    def profile_name(self) -> str:
        return "default"

    @property
    def llm(self) -> Any:
        """The host-owned LLM access: under ctxengine, the summarizer service."""
        from . import auxiliary

        return auxiliary.PluginLlm()

    def inject_message(self, content: str, role: str = "user") -> bool:
        self._ignored("inject_message", role)
        return False

    def dispatch_tool(self, tool_name: str, args: dict | None = None, **kwargs: Any) -> str:
        import json

        self._ignored("dispatch_tool", tool_name)
        return json.dumps({"error": f"ctxengine runs no agent tools; {tool_name} is unavailable"})

    def get_config(self, key: str | None = None, default: Any = None) -> Any:
        """The plugin's config block (``[engines.<name>]``), or one key of it."""
        block = self.config
        if hasattr(block, "model_dump"):
            block = block.model_dump()
        block = dict(block or {})
        return block if key is None else block.get(key, default)

    def __getattr__(self, attr: str) -> Callable[..., None]:
        if attr.startswith("register_"):

            def ignored(*args: Any, **kwargs: Any) -> None:
                what = args[0] if args else kwargs
                if isinstance(what, dict):
                    what = what.get("name", what)
                self._ignored(attr, getattr(what, "__name__", None) or what)

            return ignored
        raise AttributeError(attr)


def exported_engine_classes(module: ModuleType) -> list[type]:
    """Concrete ``ContextEngine`` subclasses the plugin package itself defines."""
    from ...contract.engine import ContextEngine

    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, ContextEngine)
        and obj is not ContextEngine
        and not inspect.isabstract(obj)
        and obj.__module__.startswith(module.__name__)
    ]


def plugin_name(directory: Path) -> str:
    """The plugin's name: ``name`` from its manifest, else the directory name."""
    for manifest in MANIFESTS:
        path = Path(directory) / manifest
        if path.is_file():
            return read_manifest(path).get("name") or Path(directory).name
    return Path(directory).name


def manifest_of(directory: Path) -> dict[str, Any]:
    """The directory's manifest (with its path), or ``{}`` when it has none."""
    for manifest in MANIFESTS:
        path = Path(directory) / manifest
        if path.is_file():
            return {**read_manifest(path), "path": str(directory)}
    return {"path": str(directory)}


def load_plugin_directory(directory: Path, *, config: Any = None, context: Any = None) -> list[Any]:
    """The engines a plugin directory provides: what ``register(ctx)`` registered
    (instances, usually), or else the engine classes it exports."""
    directory = Path(directory)
    name = plugin_name(directory)
    module = import_plugin_package(directory, name)
    register = getattr(module, "register", None)
    if callable(register):
        registrar = PluginRegistrar(name, config, context, manifest_of(directory))
        register(registrar)
        return [] if registrar.engine is None else [registrar.engine]
    return exported_engine_classes(module)

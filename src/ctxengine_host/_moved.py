"""Old module paths from before the subpackages, kept working until 0.2.0.

Up to 0.1.0 the host was one flat folder (``ctxengine_host.session``, ``ctxengine_host.pgstore``,
...). Those paths still import, with a DeprecationWarning naming the new path, and give the very
same module object (``ctxengine_host.session.Session is ctxengine_host.runtime.session.Session``).
One finder serves every old path, so no file is left at an old place: a move stays a pure
rename that git can follow. Installed by ``ctxengine_host/__init__.py``; see CHANGELOG.md.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

PACKAGE = "ctxengine_host"
REMOVED_IN = "0.2.0"

#: Old name -> new name, both relative to ``ctxengine_host``. An old package
#: (``generator``, ``importers``, ``compat``) covers its submodules; the longest match wins.
MOVED: dict[str, str] = {
    "hookspecs": "contract.hookspecs",
    "engine": "contract.engine",
    "models": "contract.models",
    "signatures": "contract.signatures",
    "context": "contract.context",
    "messages": "contract.messages",
    "thresholds": "contract.thresholds",
    "usage": "contract.usage",
    "bridge": "contract.bridge",
    "tasktext": "contract.tasktext",
    "directory_names": "discovery.directory_names",
    "manifest": "discovery.manifest",
    "slot": "discovery.slot",
    "validation": "discovery.validation",
    "plugins": "discovery.plugins",
    "fallback": "discovery.fallback",
    "host": "runtime.host",
    "session": "runtime.session",
    "live": "runtime.live",
    "views": "runtime.views",
    "turns": "runtime.turns",
    "compaction": "runtime.compaction",
    "assembly": "runtime.assembly",
    "coverage": "runtime.coverage",
    "isolation": "runtime.isolation",
    "process_engine": "runtime.process_engine",
    "process_worker": "runtime.process_worker",
    "maintenance": "runtime.maintenance",
    "subagents": "runtime.subagents",
    "validity": "runtime.validity",
    "coroutines": "runtime.coroutines",
    "aio": "runtime.aio",
    "store": "stores.transcript",
    "quarantine": "stores.quarantine",
    "pg": "stores.pg",
    "pgstore": "stores.pg_transcript",
    "pg_quarantine": "stores.pg_quarantine",
    "sqlite_schema": "stores.sqlite_schema",
    "sessionfile": "replay.sessionfile",
    "probes": "replay.probes",
    "generator": "replay.generator",
    "importers": "replay.importers",
    "compat": "discovery.compat",
    "compat.hermes": "integrations.hermes",
    "cli.support": "runtime.standalone",
}

#: Old modules whose name is now a package: the package's ``__getattr__`` forwards their
#: names (:func:`moved_attribute`), as the finder cannot alias a name that exists.
MODULES_NOW_PACKAGES: dict[str, str] = {"discovery": "discovery.engines"}

#: Names that left their module (``module.name`` -> new module), forwarded by the old
#: module's ``__getattr__`` (:func:`moved_attribute`).
NAMES_MOVED: dict[str, str] = {
    "stores.transcript.open_store": "stores.backends",
    "tokens.IMAGE_BASE_TOKENS": "shapes.images",
    "tokens.IMAGE_TILE_TOKENS": "shapes.images",
    "tokens.IMAGE_TILE_PX": "shapes.images",
    "tokens.IMAGE_WORST_CASE_TOKENS": "shapes.images",
    "tokens.image_tokens": "shapes.images",
    "tokens.image_part_tokens": "shapes.images",
    "tokens.data_url_image_size": "shapes.images",
    "tokens.image_header_size": "shapes.images",
}


def new_name(fullname: str) -> str | None:
    """The current name of module ``fullname`` if it is an old path, else None."""
    prefix = PACKAGE + "."
    if not fullname.startswith(prefix):
        return None
    parts = fullname[len(prefix) :].split(".")
    for end in range(len(parts), 0, -1):  # the longest old name wins
        new = MOVED.get(".".join(parts[:end]))
        if new is not None:
            return prefix + ".".join([new, *parts[end:]])
    return None


def _warn(old: str, new: str, stacklevel: int) -> None:
    warnings.warn(
        f"{old} moved to {new}; import it from there (the old path is removed in {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


class _Loader(importlib.abc.Loader):
    """Loads an old name as the module already at its new name."""

    def __init__(self, new: str) -> None:
        self.new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        _warn(spec.name, self.new, 2)  # the importing line (importlib's frames are skipped)
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the alias spec on the shared module; give it back its own.
        module.__spec__ = self._spec


class _Finder(importlib.abc.MetaPathFinder):
    """Answers only for old names; first on ``sys.meta_path`` so that an old package's
    submodule is never loaded a second time from the package's new folder."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per interpreter)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


_MISSING = object()


def moved_attribute(module: str, name: str) -> object:
    """For a module's ``__getattr__``: ``name`` if it moved out of ``module`` (with a
    DeprecationWarning naming its new place), else AttributeError as usual."""
    old = module[len(PACKAGE) + 1 :]
    target = NAMES_MOVED.get(f"{old}.{name}")
    if target is None and not name.startswith("__"):
        target = MODULES_NOW_PACKAGES.get(old)
    value = _MISSING
    if target is not None:
        value = getattr(importlib.import_module(f"{PACKAGE}.{target}"), name, _MISSING)
    if value is _MISSING:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    _warn(f"{module}.{name}", f"{PACKAGE}.{target}.{name}", 3)  # via the module's __getattr__
    return value

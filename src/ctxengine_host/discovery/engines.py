"""Finding engines without importing them.

Two sources, read as metadata only:

* installed distributions declaring the ``ctxengine.engines`` entry point group
  (their ``entry_points.txt``; name and version from the ``*.dist-info``
  directory name, so distribution names are shown in canonical form);
* directory engines: ``<plugins dir>/<dir>/`` holding ``plugin.toml`` or
  ``plugin.yaml`` and an ``__init__.py``. Such an engine is listed under its
  directory name (how the framework selects a directory engine); its manifest
  ``name`` and, once an import has shown it, its engine's ``name`` select it
  too (aliases; see :mod:`ctxengine_host.discovery.directory_names`).

The listing is cached once per process (per plugins directory and search path).
Only :func:`load_engine_factory` imports anything, and only the entry it is given.
This module must stay cheap to import: ``ctxengine engines`` runs on it alone.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .loading import EngineLoadError, EngineRegistrar
from .manifest import ManifestError, read_manifest

TYPE_CHECKING = False  # typing is not imported on the `ctxengine engines` path
if TYPE_CHECKING:
    from typing import Any, Literal

    Source = Literal["entry-point", "directory", "built-in"]

ENGINE_GROUP = "ctxengine.engines"
PLUGIN_GROUP = "ctxengine.plugins"
PLUGINS_DIR_ENV = "CTXENGINE_PLUGINS_DIR"
LOAD_PLUGINS_ENV = "CTXENGINE_LOAD_PLUGINS"
BLOCK_PLUGINS_ENV = "CTXENGINE_BLOCK_PLUGINS"
#: The built-in engine's id (as ``ctxengine_host.discovery.fallback``, not imported here).
LAST_RESORT_NAME = "builtin-last-resort"

#: Our own distributions: always allowed by ``CTXENGINE_LOAD_PLUGINS``.
OUR_DISTRIBUTIONS: frozenset[str] = frozenset(
    {"ctxengine", "ctxengine-host", "ctxengine-legacy", "ctxengine-lcm"}
)


def normalize_distribution(name: str) -> str:
    """A distribution name in its canonical form (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class PluginPolicy:
    """``CTXENGINE_LOAD_PLUGINS`` (allowlist) and ``CTXENGINE_BLOCK_PLUGINS`` (blocklist)."""

    allowed: frozenset[str] | None = None  # None: every distribution may load
    blocked: frozenset[str] = frozenset()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PluginPolicy:
        env = os.environ if environ is None else environ
        raw_allowed = env.get(LOAD_PLUGINS_ENV)
        allowed = None
        if raw_allowed is not None:
            allowed = frozenset(normalize_distribution(n) for n in _comma_list(raw_allowed))
        blocked = frozenset(_comma_list(env.get(BLOCK_PLUGINS_ENV, "")))
        return cls(allowed, blocked)

    def refusal(
        self, entry_name: str, distribution: str | None, aliases: Iterable[str] = ()
    ) -> str | None:
        """Why an entry may not be imported, or None when it may.

        ``distribution`` is the installed distribution read from its metadata; only such
        an entry can be one of ours. Directory engines (None) have no distribution: the
        allowlist names them by their directory name, and a directory engine that takes
        the name of one of our distributions (as its directory, manifest or engine name,
        ``aliases``) is never allowed by an allowlist (it would pass for ours).
        """
        if entry_name in self.blocked:
            return f"blocked by {BLOCK_PLUGINS_ENV}; remove '{entry_name}' from it to allow it"
        if self.allowed is None:
            return None
        if distribution is None:
            key = normalize_distribution(entry_name)
            for claimed in (entry_name, *aliases):
                if normalize_distribution(claimed) in OUR_DISTRIBUTIONS:
                    return (
                        f"directory engine '{entry_name}' takes the name of the installed "
                        f"distribution '{normalize_distribution(claimed)}'; rename it and add "
                        f"the new name to {LOAD_PLUGINS_ENV}"
                    )
            if key in self.allowed:
                return None
        elif normalize_distribution(distribution) in OUR_DISTRIBUTIONS | self.allowed:
            return None
        return (
            f"'{distribution or entry_name}' is not in {LOAD_PLUGINS_ENV}; "
            f"add it to that comma-separated list to allow it"
        )


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@dataclass
class EngineEntry:
    """One engine found: where it comes from and how to load it.

    ``error`` is set when the entry is known to be unusable without importing
    it (blocked, not allowed, malformed manifest); ``warnings`` are shown but do
    not stop it from loading.
    """

    name: str
    distribution: str | None
    version: str | None
    source: Source
    value: str
    warnings: list[str] = field(default_factory=list)
    location: str | None = None
    error: str | None = None
    #: Other names that select this entry (a directory engine's manifest and engine names).
    aliases: list[str] = field(default_factory=list)

    @property
    def loadable(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "source": self.source,
            "value": self.value,
            "location": self.location,
            "warnings": list(self.warnings),
            "error": self.error,
            "aliases": list(self.aliases),
        }


@dataclass(frozen=True)
class EntryPointRecord:
    """An entry point of one group, with the distribution that declares it."""

    name: str
    value: str
    group: str
    distribution: str
    version: str
    location: str | None


# ---------------------------------------------------------------------------
# Installed distributions (metadata only)


def scan_entry_points(group: str, path: Sequence[str] | None = None) -> list[EntryPointRecord]:
    """Entry points of ``group`` from every distribution on ``path`` (default: sys.path).

    A distribution found twice on the path counts once (the first wins, as for
    imports). Only files are read: nothing is imported.
    """
    header = f"[{group}]"
    seen: set[str] = set()
    records: list[EntryPointRecord] = []
    for dist in iter_distributions(path):
        text = dist.read_text("entry_points.txt")
        if not text or header not in text:
            continue
        name, version = _name_and_version(dist)
        key = normalize_distribution(name)
        if key in seen:
            continue
        seen.add(key)
        location = dist.location
        for ep_name, value in _section_items(text, group):
            records.append(EntryPointRecord(ep_name, value, group, name, version, location))
    return records


class _MetadataDir:
    """A ``*.dist-info`` or ``*.egg-info`` directory, read like a Distribution."""

    __slots__ = ("location",)

    def __init__(self, location: str) -> None:
        self.location = location

    def read_text(self, filename: str) -> str | None:
        try:
            with open(os.path.join(self.location, filename), encoding="utf-8") as fh:
                return fh.read()
        except (OSError, UnicodeDecodeError):
            return None


class _StdlibDist:
    """An importlib.metadata distribution (from a zip or other non-directory path entry)."""

    __slots__ = ("dist", "location")

    def __init__(self, dist: Any) -> None:
        self.dist = dist
        self.location = str(getattr(dist, "_path", "")) or None

    def read_text(self, filename: str) -> str | None:
        return self.dist.read_text(filename)


def iter_distributions(path: Sequence[str] | None = None) -> Iterator[_MetadataDir | _StdlibDist]:
    """Installed distributions on ``path``, in path order.

    Plain directories are listed directly (what importlib.metadata does, without
    the cost of importing it on the ``ctxengine engines`` path); other entries
    (zip files) go through importlib.metadata.
    """
    for entry in sys.path if path is None else path:
        root = entry or "."
        try:
            names = sorted(os.listdir(root))
        except NotADirectoryError:
            import importlib.metadata

            for dist in importlib.metadata.distributions(path=[root]):
                yield _StdlibDist(dist)
            continue
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                full = os.path.join(root, name)
                if os.path.isdir(full):
                    yield _MetadataDir(full)


def _name_and_version(dist: _MetadataDir | _StdlibDist) -> tuple[str, str]:
    """The distribution's name and version.

    A ``*.dist-info`` directory is named ``{name}-{version}.dist-info`` (the
    name normalized), which saves reading ``METADATA``; otherwise the metadata
    header is read (without the email parser).
    """
    folder = os.path.basename(dist.location or "")
    stem, _, version = folder.removesuffix(".dist-info").partition("-")
    if folder.endswith(".dist-info") and stem and version:
        return normalize_distribution(stem), version
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    name = version = ""
    for line in text.splitlines():
        if not line.strip():
            break
        if line.startswith("Name:") and not name:
            name = line[5:].strip()
        elif line.startswith("Version:") and not version:
            version = line[8:].strip()
    return name or "unknown", version or "unknown"


def installed_version(distribution: str, path: Sequence[str] | None = None) -> str | None:
    """The version of an installed distribution (first on the path), or None."""
    wanted = normalize_distribution(distribution)
    for dist in iter_distributions(path):
        folder = os.path.basename(dist.location or "")
        if normalize_distribution(re.split(r"-|\.(?:dist|egg)-info", folder)[0]) != wanted:
            continue
        name, version = _name_and_version(dist)
        if normalize_distribution(name) == wanted:
            return version
    return None


def _section_items(text: str, section: str) -> Iterable[tuple[str, str]]:
    """``name = value`` pairs of one ``[section]`` of an entry_points.txt."""
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == section
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            yield name.strip(), value.strip()


# ---------------------------------------------------------------------------
# Directory engines


def plugins_dir(configured: str | None = None) -> Path:
    """The plugins directory: ``CTXENGINE_PLUGINS_DIR``, then config, then the default."""
    env = os.environ.get(PLUGINS_DIR_ENV)
    if env:
        return Path(env).expanduser()
    if configured:
        return Path(configured).expanduser()
    from ..paths import default_plugins_dir

    return default_plugins_dir()


def scan_directory_engines(directory: Path) -> list[EngineEntry]:
    """Directory engines under ``directory``, one per directory, keyed by directory name.

    An alias (manifest or engine name) claimed by two directories selects neither:
    both keep their directory names and say so.
    """
    if not directory.is_dir():
        return []
    from .directory_names import recorded_engine_name

    entries: list[EngineEntry] = []
    for sub in sorted(p for p in directory.iterdir() if p.is_dir()):
        entry = _directory_entry(sub)
        if entry is None:
            continue
        engine_name = recorded_engine_name(sub)
        if engine_name and engine_name != entry.name and engine_name not in entry.aliases:
            entry.aliases.append(engine_name)
        entries.append(entry)
    owners: dict[str, list[EngineEntry]] = {}
    for entry in entries:
        for alias in entry.aliases:
            owners.setdefault(alias, []).append(entry)
    names = {e.name for e in entries}
    for alias, claims in owners.items():
        if len(claims) > 1 or alias in names:
            for entry in claims:
                entry.aliases.remove(alias)
                entry.warnings.append(
                    f"name '{alias}' is also claimed by another directory engine; select "
                    f"this one by its directory name '{entry.name}'"
                )
    return entries


def _directory_entry(sub: Path) -> EngineEntry | None:
    init = sub / "__init__.py"
    manifests = [sub / "plugin.toml", sub / "plugin.yaml"]
    manifest = next((m for m in manifests if m.is_file()), None)
    if manifest is None and not init.is_file():
        return None  # not a plugin directory (e.g. __pycache__)
    entry = EngineEntry(
        name=sub.name,
        distribution=None,
        version=None,
        source="directory",
        value=str(init),
        location=str(sub),
    )
    if manifest is None:
        entry.error = f"{sub}: no plugin.toml or plugin.yaml; add one with at least 'name'"
        return entry
    if not init.is_file():
        entry.error = f"{sub}: no __init__.py; it must export the engine class or register(ctx)"
        return entry
    try:
        data = read_manifest(manifest)
    except ManifestError as exc:
        entry.error = str(exc)
        return entry
    declared = data.get("name")
    if declared and declared != sub.name:
        entry.aliases.append(declared)
    entry.version = data.get("version")
    return entry


# ---------------------------------------------------------------------------
# The listing


_cache: dict[tuple[Any, ...], list[EngineEntry]] = {}


def clear_cache() -> None:
    """Forget cached listings (after installing or removing engines in-process)."""
    _cache.clear()


def list_engines(
    *,
    plugins_directory: Path | str | None = None,
    path: Sequence[str] | None = None,
    policy: PluginPolicy | None = None,
) -> list[EngineEntry]:
    """Every engine found, sorted by name; cached per process.

    ``plugins_directory`` is the configured ``[plugins] directory`` (the env
    var still wins, see :func:`plugins_dir`).
    """
    policy = policy or PluginPolicy.from_env()
    directory = plugins_dir(str(plugins_directory) if plugins_directory else None)
    key = (str(directory), tuple(sys.path if path is None else path), policy)
    cached = _cache.get(key)
    if cached is None:
        cached = _build_listing(directory, path, policy)
        _cache[key] = cached
    return [_copy(entry) for entry in cached]


def _copy(entry: EngineEntry) -> EngineEntry:
    return EngineEntry(**{**entry.__dict__, "warnings": list(entry.warnings)})


def _build_listing(
    directory: Path, path: Sequence[str] | None, policy: PluginPolicy
) -> list[EngineEntry]:
    installed = [
        EngineEntry(
            name=rec.name,
            distribution=rec.distribution,
            version=rec.version,
            source="entry-point",
            value=rec.value,
            location=rec.location,
        )
        for rec in scan_entry_points(ENGINE_GROUP, path)
    ]
    by_name: dict[str, list[EngineEntry]] = {}
    for entry in installed:
        by_name.setdefault(entry.name, []).append(entry)
    for claims in by_name.values():
        if len(claims) > 1:
            for entry in claims:
                others = ", ".join(repr(o.distribution) for o in claims if o is not entry)
                entry.warnings.append(
                    f"'{entry.name}' is also claimed by distribution {others}; selecting it is "
                    f"an error until all but one are uninstalled"
                )
    entries = list(installed)
    for entry in scan_directory_engines(directory):
        claimed = by_name.get(entry.name)
        if claimed:
            claimed[0].warnings.append(
                f"directory engine at {entry.location} also claims '{entry.name}'; "
                f"the installed distribution wins"
            )
            continue
        for alias in [a for a in entry.aliases if a in by_name]:
            entry.aliases.remove(alias)
            entry.warnings.append(
                f"its name '{alias}' is also an installed engine's, which '{alias}' selects; "
                f"select this one as '{entry.name}'"
            )
        entries.append(entry)
    if not any(e.name == LAST_RESORT_NAME for e in entries):
        entries.append(_builtin_entry(path))
    for entry in entries:
        if entry.error is None and entry.source != "built-in":
            entry.error = policy.refusal(entry.name, entry.distribution, entry.aliases)
    order = {"entry-point": 0, "directory": 1, "built-in": 2}
    return sorted(entries, key=lambda e: (e.name, order[e.source], e.distribution or ""))


def _builtin_entry(path: Sequence[str] | None) -> EngineEntry:
    return EngineEntry(
        name=LAST_RESORT_NAME,
        distribution="ctxengine-host",
        version=installed_version("ctxengine-host", path),
        source="built-in",
        value="ctxengine_host.discovery.fallback:LastResortEngine",
    )


def find_entries(name: str, entries: Iterable[EngineEntry]) -> list[EngineEntry]:
    """The entries registered under ``name`` (several only when distributions clash),
    else the directory engine that has ``name`` as an alias."""
    entries = list(entries)
    exact = [e for e in entries if e.name == name]
    return exact or [e for e in entries if name in e.aliases]


# ---------------------------------------------------------------------------
# Loading (imports exactly one entry)


def load_engine_factory(entry: EngineEntry) -> Callable[..., Any]:
    """Import ``entry`` and return its class or factory.

    A directory engine defining ``register(ctx)`` gets a factory that calls it
    and returns the first engine registered.
    """
    if entry.error is not None:
        raise EngineLoadError(entry.error)
    try:
        if entry.source == "directory":
            return _load_directory_factory(entry)
        import importlib.metadata

        return importlib.metadata.EntryPoint(entry.name, entry.value, ENGINE_GROUP).load()
    except EngineLoadError:
        raise
    except BaseException as exc:  # an engine's import may raise anything, even SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        where = entry.distribution or entry.location
        raise EngineLoadError(
            f"engine '{entry.name}' ({where}) failed to import {entry.value}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _load_directory_factory(entry: EngineEntry) -> Callable[..., Any]:
    # The import step is the compat loader's: it also provides the framework's
    # ``agent.context_engine`` import path that framework-style plugins use.
    from .compat.loader import import_plugin_package, manifest_of

    directory = Path(entry.location or "")
    module = import_plugin_package(directory, entry.name)
    register = getattr(module, "register", None)
    if callable(register):
        return _RegisterFactory(entry.name, register, manifest_of(directory))
    return _exported_engine_class(module, entry)


def _exported_engine_class(module: Any, entry: EngineEntry) -> type:
    import inspect

    from .compat.loader import exported_engine_classes

    candidates = exported_engine_classes(module)
    if len(candidates) > 1:
        named = [c for c in candidates if inspect.getattr_static(c, "name", None) == entry.name]
        candidates = named or candidates
    if len(candidates) != 1:
        found = ", ".join(c.__name__ for c in candidates) or "none"
        raise EngineLoadError(
            f"{entry.location}: __init__.py must export exactly one ContextEngine subclass "
            f"(found: {found}) or define register(ctx)"
        )
    return candidates[0]


class _RegisterFactory:
    """Calls a directory engine's ``register(ctx)`` and returns what it registered."""

    config_model = None

    def __init__(
        self,
        name: str,
        register: Callable[[EngineRegistrar], Any],
        manifest: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.register = register
        self.manifest = manifest

    def __call__(self, config: Any = None, context: Any = None) -> Any:
        from .compat import auxiliary
        from .compat.loader import PluginRegistrar  # also accepts hooks, commands, tools

        auxiliary.use_summarizer_of(context)
        registrar = PluginRegistrar(self.name, config, context, self.manifest)
        self.register(registrar)
        if registrar.engine is None:
            raise EngineLoadError(
                f"directory engine '{self.name}': register(ctx) did not call "
                f"ctx.register_context_engine(engine)"
            )
        return registrar.engine

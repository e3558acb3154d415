"""Directory-engine manifests: ``plugin.toml``, or ``plugin.yaml`` as real plugins write it.

A manifest names the plugin and describes it: ``name`` (defaults to the
directory name), ``version``, ``description``; other keys (``author``,
``provides_tools`` lists, ...) are kept but unused.

``plugin.yaml`` is parsed with PyYAML's safe loader, imported only when a YAML
manifest is read (``ctxengine engines`` with TOML manifests never pays for it).
The manifest is outside input, so the loader is bounded: at most
:data:`MAX_MANIFEST_BYTES`, at most :data:`MAX_YAML_DEPTH` levels of nesting,
and no anchors or aliases (they let a few bytes expand into gigabytes).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from ..limits import InputLimitError, loads_toml

_STRING_KEYS = ("name", "version", "description", "display_name")
#: A manifest is a few hundred bytes; anything past this is not one.
MAX_MANIFEST_BYTES = 64 * 1024
#: Real manifests nest two levels (a key holding a list); this leaves room and no more.
MAX_YAML_DEPTH = 8


class ManifestError(ValueError):
    """A manifest is malformed; the message names the file, the line and the fix."""


class ManifestRefusal(Exception):
    """Valid YAML the bounded loader will not read (anchors, aliases, deep nesting)."""


def read_manifest(path: Path) -> dict[str, Any]:
    """Parse and check ``plugin.toml`` or ``plugin.yaml``."""
    try:
        size = path.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise ManifestError(
                f"{path}: {size} bytes, over the {MAX_MANIFEST_BYTES}-byte limit for a "
                f"manifest; keep only name, version, description and short lists there"
            )
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot be read: {exc}") from exc
    if path.suffix == ".toml":
        try:
            data = loads_toml(text, what=str(path))
        except tomllib.TOMLDecodeError as exc:
            raise ManifestError(f"{path}: invalid TOML: {exc}; fix the syntax there") from exc
        except InputLimitError as exc:
            raise ManifestError(f"{exc}; a manifest needs only flat keys") from exc
    else:
        data = parse_yaml_manifest(text, str(path))
    for key in _STRING_KEYS:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            yaml_number = path.suffix != ".toml" and isinstance(value, int | float)
            if key == "version" and yaml_number and not isinstance(value, bool):
                data[key] = str(value)  # `version: 0.8` is how YAML manifests are written
                continue
            raise ManifestError(
                f"{path}: '{key}' must be a string (got {value!r}); quote it, e.g. {key} = \"1.0\""
            )
    name = data.get("name")
    if name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ManifestError(
            f"{path}: name {name!r} is not a valid engine id; use letters, digits, '.', '_', '-'"
        )
    return data


def parse_yaml_manifest(text: str, origin: str = "<manifest>") -> dict[str, Any]:
    """A YAML manifest as a dict: safe types only, bounded depth, no anchors or aliases."""
    import yaml  # only here: TOML-only installs never import it

    loader = _bounded_loader(yaml)(text)
    try:
        data = loader.get_single_data()
    except ManifestRefusal as exc:
        raise ManifestError(f"{origin}: refused: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{origin}: invalid YAML: {exc}; fix the syntax there") from exc
    finally:
        loader.dispose()
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ManifestError(
            f"{origin}: a manifest is a mapping of keys (name: ..., version: ...), "
            f"not a {type(data).__name__}"
        )
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise ManifestError(f"{origin}: keys must be strings (got {bad_keys[0]!r}); quote them")
    return data


_LOADER_CLASS: type | None = None


def _bounded_loader(yaml: Any) -> type:
    """A ``SafeLoader`` that refuses anchors, aliases and deep nesting, and duplicate keys."""
    global _LOADER_CLASS
    if _LOADER_CLASS is not None:
        return _LOADER_CLASS

    class BoundedSafeLoader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise ManifestRefusal(
                    f"anchors and aliases (&name, *name) are not allowed in a manifest "
                    f"({_where(event)}); write the value out"
                )
            self._depth += 1
            try:
                if self._depth > MAX_YAML_DEPTH:
                    raise ManifestRefusal(
                        f"nested deeper than {MAX_YAML_DEPTH} levels ({_where(event)}); "
                        f"a manifest is flat keys with short lists"
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise ManifestRefusal(f"'{key}' is given twice ({_where(key_node)}); keep one")
                if isinstance(key, str | int | float | bool) or key is None:
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    _LOADER_CLASS = BoundedSafeLoader
    return BoundedSafeLoader


def _where(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f"line {mark.line + 1}" if mark is not None else "somewhere"

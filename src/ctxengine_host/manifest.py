"""Directory-engine manifests: ``plugin.toml``, or ``plugin.yaml`` in a flat subset.

A manifest names the engine and describes it: ``name`` (defaults to the
directory name), ``version``, ``description``; other keys are kept but unused.

``plugin.yaml`` is read without a YAML library: only flat ``key: value`` lines,
``#`` comments and blank lines, with values optionally quoted. That covers the
manifests directory engines need and keeps PyYAML out of the host's
dependencies; anything richer (lists, nesting) is rejected with a message
pointing at ``plugin.toml``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from .limits import InputLimitError, loads_toml

_KEY_LINE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(?P<value>.*))?$")
_STRING_KEYS = ("name", "version", "description", "display_name")


class ManifestError(ValueError):
    """A manifest is malformed; the message names the file, the line and the fix."""


def read_manifest(path: Path) -> dict[str, str]:
    """Parse and check ``plugin.toml`` or ``plugin.yaml``."""
    try:
        text = path.read_text(encoding="utf-8")
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
        data = parse_flat_yaml(text, str(path))
    for key in _STRING_KEYS:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise ManifestError(
                f"{path}: '{key}' must be a string (got {value!r}); quote it, e.g. {key} = \"1.0\""
            )
    name = data.get("name")
    if name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ManifestError(
            f"{path}: name {name!r} is not a valid engine id; use letters, digits, '.', '_', '-'"
        )
    return data


def parse_flat_yaml(text: str, origin: str = "<manifest>") -> dict[str, str]:
    """The flat ``key: value`` subset of YAML, every value a string."""
    data: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#") or line.strip() == "---":
            continue
        match = _KEY_LINE.match(line)
        if match is None:
            raise ManifestError(
                f"{origin}, line {number}: expected 'key: value', got {raw.strip()!r}; "
                f"plugin.yaml supports flat key: value lines only (use plugin.toml for more)"
            )
        key, value = match["key"], _yaml_scalar(match["value"] or "", origin, number)
        if key in data:
            raise ManifestError(f"{origin}, line {number}: '{key}' is given twice; keep one")
        data[key] = value
    return data


def _yaml_scalar(value: str, origin: str, number: int) -> str:
    value = value.strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.find(quote, 1)
        rest = value[end + 1 :].strip() if end > 0 else ""
        if end < 0 or (rest and not rest.startswith("#")):
            raise ManifestError(
                f"{origin}, line {number}: unterminated or trailing text after {quote}"
            )
        return value[1:end]
    value = value.split(" #", 1)[0].strip()
    if value[:1] in ("[", "{", "|", ">", "&", "*", "!"):
        raise ManifestError(
            f"{origin}, line {number}: lists, maps and block scalars are not supported in "
            f"plugin.yaml; quote the value or use plugin.toml"
        )
    return value

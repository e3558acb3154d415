"""The engine names of directory engines, learnt when they are imported.

A framework plugin has two names: its directory (``hermes-lcm``, how the
framework selects a directory engine) and its engine's ``name`` (``lcm``, how it
selects an engine registered through ``register(ctx)``). The second is known
only after ``register(ctx)`` ran, and listing engines imports nothing; so each
import (``ctxengine engines --check``, a selection) records it here, and the
listing offers it as an alias from then on. A record is dropped when the
plugin's ``__init__.py`` changes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

NAMES_FILE = "directory-engine-names.json"


def _registry_path() -> Path:
    from ..paths import user_data_dir

    return user_data_dir() / NAMES_FILE


def _stamp(directory: Path) -> float | None:
    try:
        return (directory / "__init__.py").stat().st_mtime
    except OSError:
        return None


def _read() -> dict[str, dict]:
    try:
        data = json.loads(_registry_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded_engine_name(directory: Path) -> str | None:
    """The engine name an earlier import of ``directory`` found, if still current."""
    record = _read().get(str(Path(directory).resolve()))
    if not isinstance(record, dict) or record.get("stamp") != _stamp(Path(directory)):
        return None
    name = record.get("name")
    return name if isinstance(name, str) and name else None


def record_engine_name(directory: Path, name: str) -> bool:
    """Remember that ``directory``'s engine calls itself ``name`` (best effort).

    True when the name is new: cached listings no longer hold the alias (the caller
    clears them; this module sits below the listing and does not import it).
    """
    directory = Path(directory).resolve()
    if recorded_engine_name(directory) == name:
        return False
    data = _read()
    data[str(directory)] = {"name": name, "stamp": _stamp(directory)}
    path = _registry_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only data dir only costs the alias in the listing
    return True

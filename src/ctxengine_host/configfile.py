"""Finding the config file and reading it raw, without pydantic.

Kept apart from :mod:`ctxengine_host.config` (which validates every section
with pydantic) so that fast paths such as ``ctxengine engines`` can learn the
slot and the plugins directory without importing pydantic.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from .limits import InputLimitError, loads_toml

CONFIG_ENV = "CTXENGINE_CONFIG"
LOCAL_CONFIG_NAME = "ctxengine.toml"


class RawConfigError(ValueError):
    """The config file cannot be read or is not valid TOML; the message names the fix."""


def find_config_file(explicit: str | os.PathLike[str] | None = None) -> tuple[Path | None, str]:
    """The config file to use and how it was found (flag, env, local, user or none)."""
    if explicit:
        return Path(explicit).expanduser(), "flag"
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env).expanduser(), "env"
    local = Path.cwd() / LOCAL_CONFIG_NAME
    if local.is_file():
        return local, "local"
    from .paths import user_config_file

    user = user_config_file()
    if user.is_file():
        return user, "user"
    return None, "none"


def read_raw_config(path: Path | None, source: str = "flag") -> dict[str, Any]:
    """The parsed TOML of ``path`` (empty for None), unvalidated."""
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RawConfigError(
            f"config file {path} (from {source}) does not exist; create it or point "
            f"--config/{CONFIG_ENV} at an existing file"
        ) from exc
    except OSError as exc:
        raise RawConfigError(f"config file {path} cannot be read: {exc}") from exc
    try:
        return loads_toml(text, what=f"config file {path}")
    except tomllib.TOMLDecodeError as exc:
        raise RawConfigError(f"{path}: invalid TOML: {exc}. Fix the syntax at that spot.") from exc
    except InputLimitError as exc:
        raise RawConfigError(f"{exc}; flatten it") from exc


def raw_string(raw: dict[str, Any], section: str, key: str, origin: str) -> str | None:
    """``raw[section][key]`` when it is a string, None when absent; wrong types are errors."""
    table = raw.get(section)
    if table is None:
        return None
    if not isinstance(table, dict):
        raise RawConfigError(f"{origin}: '{section}' must be a table ([{section}])")
    value = table.get(key)
    if value is None or isinstance(value, str):
        return value
    raise RawConfigError(
        f"{origin}: key '{section}.{key}' must be a string (got {value!r}); quote the value"
    )

"""Where ctxengine keeps files by default (overridable by config and env)."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "ctxengine"


def user_config_dir() -> Path:
    """The per-user config directory (``$XDG_CONFIG_HOME/ctxengine`` on Linux)."""
    from platformdirs import user_config_path

    return user_config_path(APP_NAME)


def user_data_dir() -> Path:
    """The per-user data directory (stores, engine data); ``CTXENGINE_DATA_DIR`` wins."""
    override = os.environ.get("CTXENGINE_DATA_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_path

    return user_data_path(APP_NAME)


def user_config_file() -> Path:
    """The user-level config file."""
    return user_config_dir() / "config.toml"


def default_plugins_dir() -> Path:
    """Where directory engines live unless ``[plugins] directory`` or the env var says otherwise."""
    return user_config_dir() / "plugins"

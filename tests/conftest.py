"""Suite-wide isolation: no test reads or writes the real user's config or data.

Every test gets its own config dir, data dir and quarantine file, and starts
with none of the ctxengine environment variables a developer may have set.
"""

from __future__ import annotations

import pytest

CTXENGINE_ENV_VARS = (
    "CTXENGINE_ENGINE",
    "CTXENGINE_CONFIG",
    "CTXENGINE_LOAD_PLUGINS",
    "CTXENGINE_BLOCK_PLUGINS",
    "CTXENGINE_PLUGINS_DIR",
)


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Point the user config/data dirs and the quarantine file at a fresh temp dir."""
    home = tmp_path_factory.mktemp("home")
    for var in CTXENGINE_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("CTXENGINE_DATA_DIR", str(home / "data" / "ctxengine"))
    monkeypatch.setenv("CTXENGINE_QUARANTINE_FILE", str(home / "data" / "quarantine.jsonl"))
    return home

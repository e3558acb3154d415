"""The framework-style plugin the compat tests load: examples/framework_plugins/window-lite.

It is written exactly as engines for the framework's ABC are written:
hyphenated directory name, ``plugin.yaml``, relative imports between its
modules, ``from agent.context_engine import ContextEngine``, a ``name``
property, the framework's exact method signatures, and ``register(ctx)`` that
also registers a slash command. Nothing in it knows about ctxengine. Tests copy
it unchanged into a temporary plugins directory, so the example users read is
the one tested.
"""

from __future__ import annotations

import shutil
from pathlib import Path

PLUGIN_NAME = "window-lite"
DIRECTORY_NAME = "window-lite"
EXAMPLE_DIRECTORY = Path(__file__).parents[2] / "examples" / "framework_plugins" / DIRECTORY_NAME


def write_plugin(plugins_dir: Path) -> Path:
    """Copy the plugin under ``plugins_dir``; return its directory."""
    directory = plugins_dir / DIRECTORY_NAME
    shutil.copytree(EXAMPLE_DIRECTORY, directory, ignore=shutil.ignore_patterns("__pycache__"))
    return directory
